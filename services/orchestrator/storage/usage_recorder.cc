#include "services/orchestrator/storage/usage_recorder.h"

#include <nlohmann/json.hpp>

#include "absl/time/time.h"
#include "libs/core/clock.h"
#include "libs/core/ids.h"

namespace omniforge::orchestrator {
namespace {

// RFC 3339 in UTC with microseconds, as PostgreSQL reads a timestamptz.
std::string Timestamp(int64_t micros) {
  return absl::FormatTime("%Y-%m-%d%ET%H:%M:%E6SZ", absl::FromUnixMicros(micros),
                          absl::UTCTimeZone());
}

nlohmann::json Call(const AttributedCall& call) {
  const llm::UsageRecord& r = call.record;
  return {{"id", core::NewUuid()},
          {"created_at", Timestamp(call.reported_micros)},
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
}

nlohmann::json Row(const UsageAttribution& who, const std::vector<AttributedCall>& calls) {
  nlohmann::json stored_calls = nlohmann::json::array();
  for (const AttributedCall& call : calls) stored_calls.push_back(Call(call));
  return {{"id", core::NewUuid()},
          // When the turn ended, also for a row stored after an outage.
          {"created_at", Timestamp(core::NowMicros())},
          {"user_id", who.user_id},
          {"conversation_id",
           who.conversation_id.empty() ? nlohmann::json() : nlohmann::json(who.conversation_id)},
          {"turn_id", who.turn_id},
          {"context_type", who.context_type},
          {"execution_mode", who.execution_mode},
          {"calls", std::move(stored_calls)}};
}

}  // namespace

PgUsageRecorder::PgUsageRecorder(pg::PgPool& pool, std::shared_ptr<RowSpool> spool,
                                 size_t max_queued, std::chrono::milliseconds max_backoff)
    : rows_(pool, {.insert_sql =
                       "INSERT INTO orchestration.llm_turn_usage (tenant_id, id, user_id, "
                       "conversation_id, turn_id, context_type, execution_mode, calls, created_at) "
                       "SELECT $1, x.id, x.user_id, x.conversation_id, x.turn_id, x.context_type, "
                       "x.execution_mode, x.calls, coalesce(x.created_at, now()) "
                       "FROM jsonb_to_recordset($2::jsonb) AS x(id uuid, user_id text, "
                       "conversation_id uuid, turn_id text, context_type text, "
                       "execution_mode text, calls jsonb, created_at timestamptz) "
                       // A spooled row written again after a crash.
                       "ON CONFLICT (tenant_id, id) DO NOTHING",
                   .what = "LLM usage",
                   .dropped_metric = "omniforge_orchestrator_llm_usage_dropped_total",
                   .dropped_help = "Model-call usage records not stored",
                   .max_queued = max_queued,
                   .spool = std::move(spool),
                   .max_backoff = max_backoff}) {}

void PgUsageRecorder::Record(const llm::UsageRecord&) { rows_.CountDropped("unattributed"); }

void PgUsageRecorder::WriteScope(const UsageAttribution& who, std::vector<AttributedCall> calls) {
  const auto records = static_cast<double>(calls.size());
  rows_.Submit(who.tenant_id, Row(who, calls), records);
}

}  // namespace omniforge::orchestrator
