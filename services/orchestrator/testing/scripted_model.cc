#include "services/orchestrator/testing/scripted_model.h"

#include "libs/llm/errors.h"

namespace omniforge::orchestrator::testing {

void ScriptedModel::PushText(const std::string& text) {
  llm::ChatResponse answer;
  answer.content = text;
  answer.finish_reason = llm::FinishReason::kStop;
  answer.usage.prompt_tokens = 100;
  answer.usage.completion_tokens = 10;
  absl::MutexLock lock(&mu_);
  script_.push_back(std::move(answer));
}

void ScriptedModel::PushToolCall(const std::string& tool, const nlohmann::json& arguments) {
  PushToolCalls({{tool, arguments}});
}

void ScriptedModel::PushToolCalls(
    const std::vector<std::pair<std::string, nlohmann::json>>& calls) {
  llm::ChatResponse answer;
  answer.finish_reason = llm::FinishReason::kToolCalls;
  answer.usage.prompt_tokens = 100;
  answer.usage.completion_tokens = 10;
  absl::MutexLock lock(&mu_);
  for (const auto& [tool, arguments] : calls) {
    answer.tool_calls.push_back(
        {"call-" + std::to_string(++next_call_id_), tool, arguments.dump()});
  }
  script_.push_back(std::move(answer));
}

void ScriptedModel::OnCall(std::function<void()> hook) {
  absl::MutexLock lock(&mu_);
  on_call_ = std::move(hook);
}

absl::StatusOr<llm::ChatResponse> ScriptedModel::Complete(const llm::ChatRequest& request,
                                                          const llm::CallContext& context) {
  return Stream(request, context, nullptr);
}

absl::StatusOr<llm::ChatResponse> ScriptedModel::Stream(const llm::ChatRequest& request,
                                                        const llm::CallContext& context,
                                                        const llm::StreamCallback& on_delta) {
  std::function<void()> hook;
  {
    absl::MutexLock lock(&mu_);
    hook = on_call_;
  }
  if (hook) hook();
  llm::ChatResponse answer;
  llm::UsageSink* sink = nullptr;
  bool scripted = false;
  {
    absl::MutexLock lock(&mu_);
    requests_.push_back(request);
    sink = usage_sink_;
    scripted = !script_.empty();
    if (scripted) {
      answer = std::move(script_.front());
      script_.pop_front();
    }
  }
  if (sink != nullptr) {
    llm::UsageRecord record;
    record.operation_type = context.operation_type;
    record.profile = "scripted";
    record.provider = "scripted";
    record.model = "scripted";
    record.tokens = answer.usage;
    record.attempts = 1;
    record.ok = scripted;
    record.error_kind = scripted ? llm::LlmErrorKind::kNone : llm::LlmErrorKind::kServerError;
    // As the LLM client does: to the call's own usage when it has one.
    (context.usage != nullptr ? context.usage : sink)->Record(record);
  }
  if (!scripted) return llm::LlmError(llm::LlmErrorKind::kServerError, "unscripted call");
  if (on_delta && !answer.content.empty()) {
    llm::StreamDelta delta;
    delta.text = answer.content;
    // As the LLM client does, a caller that stops the stream ends the call.
    if (!on_delta(delta)) return absl::CancelledError("the caller stopped the stream");
  }
  return answer;
}

void ScriptedModel::ReportUsageTo(llm::UsageSink* sink) {
  absl::MutexLock lock(&mu_);
  usage_sink_ = sink;
}

std::vector<llm::ChatRequest> ScriptedModel::requests() const {
  absl::MutexLock lock(&mu_);
  return requests_;
}

}  // namespace omniforge::orchestrator::testing
