#include "services/orchestrator/src/usage_recorder.h"

#include <nlohmann/json.hpp>

#include "libs/core/ids.h"

namespace omniforge::orchestrator {
namespace {

nlohmann::json Row(const UsageAttribution& who, const llm::UsageRecord& r) {
  nlohmann::json row = {
      {"id", core::NewUuid()},
      {"user_id", who.user_id},
      {"conversation_id",
       who.conversation_id.empty() ? nlohmann::json() : nlohmann::json(who.conversation_id)},
      {"turn_id", who.turn_id},
      {"context_type", who.context_type},
      {"operation_type", r.operation_type},
      {"profile", r.profile},
      {"provider", r.provider},
      {"model", r.model},
      {"prompt_tokens", r.tokens.prompt_tokens},
      {"completion_tokens", r.tokens.completion_tokens},
      {"cached_tokens", r.tokens.cached_tokens},
      {"cost_usd", r.cost_usd},
      {"latency_ms", static_cast<double>(r.latency_us) / 1000.0},
      {"ttft_ms", r.time_to_first_token_us < 0
                      ? nlohmann::json()
                      : nlohmann::json(static_cast<double>(r.time_to_first_token_us) / 1000.0)},
      {"attempts", r.attempts},
      {"fallback_used", r.fallback_used},
      {"outcome", r.ok ? "ok" : "error"},
      {"error_kind", r.ok ? "" : std::string(llm::ErrorKindName(r.error_kind))}};
  return row;
}

}  // namespace

PgUsageRecorder::PgUsageRecorder(pg::PgPool& pool, size_t max_queued)
    : rows_(pool,
            {.insert_sql =
                 "INSERT INTO orchestration.llm_usage (tenant_id, id, user_id, conversation_id, "
                 "turn_id, context_type, operation_type, profile, provider, model, prompt_tokens, "
                 "completion_tokens, cached_tokens, cost_usd, latency_ms, ttft_ms, attempts, "
                 "fallback_used, outcome, error_kind) "
                 "SELECT $1, x.id, x.user_id, x.conversation_id, x.turn_id, x.context_type, "
                 "x.operation_type, x.profile, x.provider, x.model, x.prompt_tokens, "
                 "x.completion_tokens, x.cached_tokens, x.cost_usd, x.latency_ms, x.ttft_ms, "
                 "x.attempts, x.fallback_used, x.outcome, x.error_kind "
                 "FROM jsonb_to_recordset($2::jsonb) AS x(id uuid, user_id text, "
                 "conversation_id uuid, turn_id text, context_type text, operation_type text, "
                 "profile text, provider text, model text, prompt_tokens bigint, "
                 "completion_tokens bigint, cached_tokens bigint, cost_usd double precision, "
                 "latency_ms double precision, ttft_ms double precision, attempts integer, "
                 "fallback_used boolean, outcome text, error_kind text)",
             .what = "LLM usage",
             .dropped_metric = "omniforge_orchestrator_llm_usage_dropped_total",
             .dropped_help = "Model-call usage records not stored",
             .max_queued = max_queued}) {}

void PgUsageRecorder::Record(const llm::UsageRecord& record) {
  const UsageAttribution* who = CurrentUsageAttribution();
  if (who == nullptr) {
    rows_.CountDropped("unattributed");
    return;
  }
  rows_.Submit(who->tenant_id, Row(*who, record));
}

}  // namespace omniforge::orchestrator
