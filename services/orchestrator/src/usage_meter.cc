#include "services/orchestrator/src/usage_meter.h"

#include "libs/llm/errors.h"

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

llm::UsageRecord UsageRecordOf(const ::omniforge::intent::v1::ModelCall& call) {
  llm::UsageRecord record;
  record.operation_type = call.operation_type();
  record.profile = call.profile();
  record.provider = call.provider();
  record.model = call.model();
  record.tokens.prompt_tokens = call.prompt_tokens();
  record.tokens.completion_tokens = call.completion_tokens();
  record.tokens.cached_tokens = call.cached_tokens();
  record.cost_usd = call.cost_usd();
  record.latency_us = call.latency_us();
  record.attempts = call.attempts();
  record.fallback_used = call.fallback_used();
  record.ok = call.ok();
  if (!call.ok()) {
    // A kind this release does not know is still a failure.
    record.error_kind =
        llm::ErrorKindFromName(call.error_kind()).value_or(llm::LlmErrorKind::kBadResponse);
  }
  return record;
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
