#include "services/orchestrator/usage/usage_meter.h"

namespace omniforge::orchestrator {
namespace {

thread_local UsageTotals* current_meter = nullptr;

void Meter(const absl::StatusOr<llm::ChatResponse>& answer) {
  if (current_meter == nullptr) return;
  ++current_meter->llm_calls;
  if (!answer.ok()) return;
  current_meter->prompt_tokens += answer->usage.prompt_tokens;
  current_meter->completion_tokens += answer->usage.completion_tokens;
  current_meter->cost_usd += answer->cost_usd;
}

}  // namespace

void UsageTotals::Add(const llm::UsageRecord& call) {
  ++llm_calls;
  prompt_tokens += call.tokens.prompt_tokens;
  completion_tokens += call.tokens.completion_tokens;
  cost_usd += call.cost_usd;
}

ScopedUsageMeter::ScopedUsageMeter(UsageTotals* totals) : previous_(current_meter) {
  current_meter = totals;
}

ScopedUsageMeter::~ScopedUsageMeter() { current_meter = previous_; }

absl::StatusOr<llm::ChatResponse> MeteredChatModel::Complete(const llm::ChatRequest& request,
                                                             const llm::CallContext& context) {
  absl::StatusOr<llm::ChatResponse> answer = model_.Complete(request, context);
  Meter(answer);
  return answer;
}

absl::StatusOr<llm::ChatResponse> MeteredChatModel::Stream(const llm::ChatRequest& request,
                                                           const llm::CallContext& context,
                                                           const llm::StreamCallback& on_delta) {
  absl::StatusOr<llm::ChatResponse> answer = model_.Stream(request, context, on_delta);
  Meter(answer);
  return answer;
}

}  // namespace omniforge::orchestrator
