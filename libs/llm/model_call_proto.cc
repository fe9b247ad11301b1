#include "libs/llm/model_call_proto.h"

#include <string>

#include "libs/llm/errors.h"

namespace omniforge::llm {

void ToProto(const UsageRecord& record, ::omniforge::llm::v1::ModelCall* out) {
  out->set_operation_type(record.operation_type);
  out->set_profile(record.profile);
  out->set_provider(record.provider);
  out->set_model(record.model);
  out->set_prompt_tokens(record.tokens.prompt_tokens);
  out->set_completion_tokens(record.tokens.completion_tokens);
  out->set_cached_tokens(record.tokens.cached_tokens);
  out->set_cost_usd(record.cost_usd);
  out->set_latency_us(record.latency_us);
  out->set_attempts(record.attempts);
  out->set_fallback_used(record.fallback_used);
  out->set_ok(record.ok);
  if (!record.ok) out->set_error_kind(std::string(ErrorKindName(record.error_kind)));
}

UsageRecord FromProto(const ::omniforge::llm::v1::ModelCall& call) {
  UsageRecord record;
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
    record.error_kind = ErrorKindFromName(call.error_kind()).value_or(LlmErrorKind::kBadResponse);
  }
  return record;
}

}  // namespace omniforge::llm
