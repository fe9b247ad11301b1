#include "services/orchestrator/storage/pg_flow_store.h"

#include <chrono>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include "libs/core/call_deadline.h"

namespace omniforge::orchestrator {
namespace {

core::ScopedCallDeadline Until(int64_t deadline_micros) {
  return core::ScopedCallDeadline(std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::microseconds(deadline_micros))));
}

}  // namespace

absl::StatusOr<ContextBox> PgFlowStore::Load(const core::Identity& who, const std::string& flow_id,
                                             int64_t deadline) {
  const core::ScopedCallDeadline bounded = Until(deadline);
  std::string box_json;
  absl::Status status = pg::WithTenantTransaction(pool_, who.tenant_id, [&](pqxx::work& tx) {
    const pqxx::result rows = tx.exec_params(
        "SELECT box::text FROM orchestration.flows "
        "WHERE tenant_id = $1 AND flow_id = $2 AND user_id = $3",
        who.tenant_id, flow_id, who.user_id);
    if (rows.empty()) return absl::NotFoundError("no flow " + flow_id);
    box_json = rows[0][0].as<std::string>();
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return ContextBoxFromJson(nlohmann::json::parse(box_json, nullptr, /*allow_exceptions=*/false));
}

absl::Status PgFlowStore::Save(const core::Identity& who, const FlowRecord& record,
                               int64_t deadline) {
  const core::ScopedCallDeadline bounded = Until(deadline);
  return pg::WithTenantTransaction(pool_, who.tenant_id, [&](pqxx::work& tx) {
    // A flow id that is another user's is left alone (and not taken over).
    tx.exec_params(
        "INSERT INTO orchestration.flows (tenant_id, flow_id, user_id, conversation_id, "
        "turn_id, status, box) VALUES ($1, $2, $3, $4::uuid, $5, $6, $7::jsonb) "
        "ON CONFLICT (tenant_id, flow_id) DO UPDATE SET turn_id = EXCLUDED.turn_id, "
        "status = EXCLUDED.status, box = EXCLUDED.box, updated_at = now() "
        "WHERE flows.user_id = EXCLUDED.user_id",
        who.tenant_id, record.flow_id, who.user_id, record.conversation_id, record.turn_id,
        std::string(FlowStatusName(record.status)), ContextBoxToJson(record.box).dump());
    return absl::OkStatus();
  });
}

}  // namespace omniforge::orchestrator
