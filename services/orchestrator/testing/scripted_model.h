// A planner model that answers from a script, for unit tests of the turn
// with a model: each call takes the next scripted answer (text, or tool
// calls), streams its text as one piece, and is kept for inspection. An
// unscripted call fails as a provider error would.
#pragma once

#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "libs/llm/chat_model.h"

namespace omniforge::orchestrator::testing {

class ScriptedModel final : public llm::ChatModel {
 public:
  // The model writes `text` and stops.
  void PushText(const std::string& text);
  // The model calls `tool` with `arguments`.
  void PushToolCall(const std::string& tool, const nlohmann::json& arguments);

  absl::StatusOr<llm::ChatResponse> Complete(const llm::ChatRequest& request,
                                             const llm::CallContext& context) override;
  absl::StatusOr<llm::ChatResponse> Stream(const llm::ChatRequest& request,
                                           const llm::CallContext& context,
                                           const llm::StreamCallback& on_delta) override;
  std::vector<llm::ChatRequest> requests() const;

 private:
  mutable std::mutex mu_;
  std::deque<llm::ChatResponse> script_ ABSL_GUARDED_BY(mu_);
  std::vector<llm::ChatRequest> requests_ ABSL_GUARDED_BY(mu_);
  int next_call_id_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace omniforge::orchestrator::testing
