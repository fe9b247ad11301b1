#include "services/orchestrator/usage/usage_meter.h"

namespace omniforge::orchestrator {

void UsageTotals::Add(const llm::UsageRecord& call) {
  ++llm_calls;
  prompt_tokens += call.tokens.prompt_tokens;
  completion_tokens += call.tokens.completion_tokens;
  cost_usd += call.cost_usd;
}

void UsageTotals::Meter(const absl::StatusOr<llm::ChatResponse>& answer) {
  ++llm_calls;
  if (!answer.ok()) return;
  prompt_tokens += answer->usage.prompt_tokens;
  completion_tokens += answer->usage.completion_tokens;
  cost_usd += answer->cost_usd;
}

absl::StatusOr<llm::ChatResponse> MeteredChatModel::Complete(const llm::ChatRequest& request,
                                                             const llm::CallContext& context) {
  absl::StatusOr<llm::ChatResponse> answer = model_.Complete(request, context);
  if (context.usage != nullptr) context.usage->Answered(answer);
  return answer;
}

absl::StatusOr<llm::ChatResponse> MeteredChatModel::Stream(const llm::ChatRequest& request,
                                                           const llm::CallContext& context,
                                                           const llm::StreamCallback& on_delta) {
  absl::StatusOr<llm::ChatResponse> answer = model_.Stream(request, context, on_delta);
  if (context.usage != nullptr) context.usage->Answered(answer);
  return answer;
}

}  // namespace omniforge::orchestrator
