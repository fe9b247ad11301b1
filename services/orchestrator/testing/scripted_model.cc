#include "services/orchestrator/testing/scripted_model.h"

#include "libs/llm/errors.h"

namespace omniforge::orchestrator::testing {

void ScriptedModel::PushText(const std::string& text) {
  llm::ChatResponse answer;
  answer.content = text;
  answer.finish_reason = llm::FinishReason::kStop;
  answer.usage.prompt_tokens = 100;
  answer.usage.completion_tokens = 10;
  std::lock_guard lock(mu_);
  script_.push_back(std::move(answer));
}

void ScriptedModel::PushToolCall(const std::string& tool, const nlohmann::json& arguments) {
  llm::ChatResponse answer;
  answer.finish_reason = llm::FinishReason::kToolCalls;
  answer.usage.prompt_tokens = 100;
  answer.usage.completion_tokens = 10;
  std::lock_guard lock(mu_);
  answer.tool_calls.push_back({"call-" + std::to_string(++next_call_id_), tool, arguments.dump()});
  script_.push_back(std::move(answer));
}

absl::StatusOr<llm::ChatResponse> ScriptedModel::Complete(const llm::ChatRequest& request,
                                                          const llm::CallContext& context) {
  return Stream(request, context, nullptr);
}

absl::StatusOr<llm::ChatResponse> ScriptedModel::Stream(const llm::ChatRequest& request,
                                                        const llm::CallContext&,
                                                        const llm::StreamCallback& on_delta) {
  llm::ChatResponse answer;
  {
    std::lock_guard lock(mu_);
    requests_.push_back(request);
    if (script_.empty()) return llm::LlmError(llm::LlmErrorKind::kServerError, "unscripted call");
    answer = std::move(script_.front());
    script_.pop_front();
  }
  if (on_delta && !answer.content.empty()) {
    llm::StreamDelta delta;
    delta.text = answer.content;
    on_delta(delta);
  }
  return answer;
}

std::vector<llm::ChatRequest> ScriptedModel::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

}  // namespace omniforge::orchestrator::testing
