#include "services/orchestrator/storage/pg_error_log.h"

#include <nlohmann/json.hpp>

#include "absl/time/time.h"
#include "libs/core/clock.h"
#include "libs/core/ids.h"
#include "libs/core/text.h"
#include "libs/seal/sealed_text.h"

namespace omniforge::orchestrator {

namespace {

constexpr char kErrorLog[] = "orchestration.error_log";

// RFC 3339 in UTC with microseconds, as PostgreSQL reads a timestamptz.
std::string Timestamp(int64_t micros) {
  return absl::FormatTime("%Y-%m-%d%ET%H:%M:%E6SZ", absl::FromUnixMicros(micros),
                          absl::UTCTimeZone());
}

}  // namespace

PgErrorLog::PgErrorLog(pg::PgPool& pool, seal::KeyRing& keys, std::shared_ptr<RowSpool> spool,
                       size_t max_queued, std::chrono::milliseconds max_backoff)
    : rows_(pool,
            {.insert_sql = "INSERT INTO orchestration.error_log (tenant_id, id, user_id, "
                           "conversation_id, turn_id, kind, message, component, stage, tool, "
                           "created_at) "
                           "SELECT $1, x.id, x.user_id, x.conversation_id, x.turn_id, x.kind, "
                           "x.message, x.component, x.stage, x.tool, "
                           "coalesce(x.created_at, now()) "
                           "FROM jsonb_to_recordset($2::jsonb) AS x(id uuid, "
                           "user_id text, conversation_id uuid, turn_id text, kind text, "
                           "message text, component text, stage text, tool text, "
                           "created_at timestamptz) "
                           // A spooled row written again after a crash.
                           "ON CONFLICT (tenant_id, id) DO NOTHING",
             .what = "turn errors",
             .dropped_metric = "omniforge_orchestrator_turn_errors_dropped_total",
             .dropped_help = "Turn errors not stored in orchestration.error_log",
             .max_queued = max_queued,
             // A message may quote what the user or the model wrote.
             .prepare = [&keys](const std::string& tenant, nlohmann::json& rows) -> absl::Status {
               auto key = keys.ActiveKey(tenant);
               if (!key.ok()) return key.status();
               for (nlohmann::json& row : rows) {
                 const seal::RowSealer seal(*key, kErrorLog, tenant, row["id"].get<std::string>());
                 row["message"] = seal.Text("message", row["message"].get<std::string>());
               }
               return absl::OkStatus();
             },
             .spool = std::move(spool),
             .max_backoff = max_backoff}) {}

void PgErrorLog::Record(TurnError error) {
  nlohmann::json row = {
      {"id", core::NewUuid()},
      // When it happened, also for a row stored after an outage.
      {"created_at", Timestamp(core::NowMicros())},
      {"user_id", error.user_id},
      {"conversation_id",
       error.conversation_id.empty() ? nlohmann::json() : nlohmann::json(error.conversation_id)},
      {"turn_id", error.turn_id},
      {"kind", error.kind},
      {"message", core::Shortened(error.message, 2000)},
      {"component", error.component},
      {"stage", error.stage},
      {"tool", error.tool}};
  rows_.Submit(std::move(error.tenant_id), std::move(row));
}

}  // namespace omniforge::orchestrator
