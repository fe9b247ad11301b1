#include "services/orchestrator/storage/pg_error_log.h"

#include <nlohmann/json.hpp>

#include "libs/core/ids.h"
#include "libs/core/text.h"
#include "libs/seal/sealed_text.h"

namespace omniforge::orchestrator {

namespace {

constexpr char kErrorLog[] = "orchestration.error_log";

}  // namespace

PgErrorLog::PgErrorLog(pg::PgPool& pool, seal::KeyRing& keys, size_t max_queued)
    : rows_(pool,
            {.insert_sql = "INSERT INTO orchestration.error_log (tenant_id, id, user_id, "
                           "conversation_id, turn_id, kind, message, component, stage, tool) "
                           "SELECT $1, x.id, x.user_id, x.conversation_id, x.turn_id, x.kind, "
                           "x.message, x.component, x.stage, x.tool "
                           "FROM jsonb_to_recordset($2::jsonb) AS x(id uuid, "
                           "user_id text, conversation_id uuid, turn_id text, kind text, "
                           "message text, component text, stage text, tool text)",
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
             }}) {}

void PgErrorLog::Record(TurnError error) {
  nlohmann::json row = {
      {"id", core::NewUuid()},
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
