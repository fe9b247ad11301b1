#include "services/orchestrator/src/usage_recorder.h"

#include <map>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <vector>

#include "libs/core/ids.h"
#include "libs/core/logging.h"
#include "libs/core/metrics.h"
#include "libs/pg/group_commit.h"

namespace omniforge::orchestrator {
namespace {

struct PendingUsage {
  UsageAttribution who;
  llm::UsageRecord record;
};

void CountDropped(const char* why) {
  core::MetricsRegistry::Global()
      .GetCounter("omniforge_orchestrator_llm_usage_dropped_total",
                  "Model-call usage records not stored", {{"reason", why}})
      .Inc();
}

nlohmann::json Row(const PendingUsage& u) {
  const llm::UsageRecord& r = u.record;
  nlohmann::json row = {
      {"id", core::NewUuid()},
      {"user_id", u.who.user_id},
      {"conversation_id",
       u.who.conversation_id.empty() ? nlohmann::json() : nlohmann::json(u.who.conversation_id)},
      {"turn_id", u.who.turn_id},
      {"context_type", u.who.context_type},
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

struct PgUsageRecorder::Queue {
  Queue(pg::PgPool& pool, size_t max_queued)
      : pool(pool),
        commits(
            1, 256, max_queued, [this](std::vector<PendingUsage>& batch) { Write(batch); },
            [](PendingUsage&, absl::Status) { CountDropped("queue_full"); }) {}

  // One transaction per tenant in the batch (row-level security).
  void Write(std::vector<PendingUsage>& batch) {
    std::map<std::string, nlohmann::json> rows_by_tenant;
    for (const PendingUsage& u : batch) {
      auto& rows = rows_by_tenant[u.who.tenant_id];
      if (rows.is_null()) rows = nlohmann::json::array();
      rows.push_back(Row(u));
    }
    for (const auto& [tenant, rows] : rows_by_tenant) {
      absl::Status status = pg::WithTenantTransaction(pool, tenant, [&](pqxx::work& tx) {
        tx.exec_params(
            "INSERT INTO orchestration.llm_usage (tenant_id, id, user_id, conversation_id, "
            "turn_id, context_type, operation_type, profile, provider, model, prompt_tokens, "
            "completion_tokens, cached_tokens, cost_usd, latency_ms, ttft_ms, attempts, "
            "fallback_used, outcome, error_kind) "
            "SELECT $1, x.id, x.user_id, x.conversation_id, x.turn_id, x.context_type, "
            "x.operation_type, x.profile, x.provider, x.model, x.prompt_tokens, "
            "x.completion_tokens, x.cached_tokens, x.cost_usd, x.latency_ms, x.ttft_ms, "
            "x.attempts, x.fallback_used, x.outcome, x.error_kind "
            "FROM jsonb_to_recordset($2::jsonb) AS x(id uuid, user_id text, conversation_id uuid, "
            "turn_id text, context_type text, operation_type text, profile text, provider text, "
            "model text, prompt_tokens bigint, completion_tokens bigint, cached_tokens bigint, "
            "cost_usd double precision, latency_ms double precision, ttft_ms double precision, "
            "attempts integer, fallback_used boolean, outcome text, error_kind text)",
            tenant, rows.dump());
        return absl::OkStatus();
      });
      if (!status.ok()) {
        for (size_t i = 0; i < rows.size(); ++i) CountDropped("database");
        core::LogWarn("LLM usage not stored", {{"component", "orchestrator"},
                                               {"stage", "record_usage"},
                                               {"rows", std::to_string(rows.size())},
                                               {"error", std::string(status.message())}});
      }
    }
  }

  pg::PgPool& pool;
  pg::GroupCommitQueue<PendingUsage> commits;
};

PgUsageRecorder::PgUsageRecorder(pg::PgPool& pool, size_t max_queued)
    : queue_(std::make_unique<Queue>(pool, max_queued)) {}

PgUsageRecorder::~PgUsageRecorder() = default;

void PgUsageRecorder::Record(const llm::UsageRecord& record) {
  const UsageAttribution* who = CurrentUsageAttribution();
  if (who == nullptr) {
    CountDropped("unattributed");
    return;
  }
  queue_->commits.Submit({*who, record});
}

}  // namespace omniforge::orchestrator
