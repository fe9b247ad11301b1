#include "services/executor/src/dialogue.h"

#include <utility>

namespace omniforge::executor {

void ExecutorAgent::ProtocolError(const std::string& message) {
  if (!finished_) Fail(DialogueError::kProtocol, message);
}

void ExecutorAgent::Emit(DialogueEvent event) {
  event.turn = turns_;
  event.model_calls = model_calls_.Take();
  if (event.final()) finished_ = true;
  sink_(std::move(event));
}

void ExecutorAgent::Fail(DialogueError code, const std::string& message, bool retryable) {
  DialogueEvent e;
  e.kind = DialogueEvent::Kind::kError;
  e.error = code;
  e.message = message;
  e.partial_results = partials_;
  e.retryable = retryable;
  ForgetQuestion();
  Emit(std::move(e));
}

}  // namespace omniforge::executor
