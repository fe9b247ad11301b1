#include "services/orchestrator/storage/pg_flow_store.h"

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include "libs/core/call_deadline.h"
#include "libs/core/ids.h"
#include "libs/seal/sealed_text.h"

namespace omniforge::orchestrator {
namespace {

using nlohmann::json;

core::ScopedCallDeadline Until(const core::Call& call) {
  return core::ScopedCallDeadline(std::chrono::system_clock::time_point(call.deadline));
}

json ParsedOr(const pqxx::field& field, json otherwise) {
  if (field.is_null()) return otherwise;
  json parsed = json::parse(field.as<std::string>(), nullptr, /*allow_exceptions=*/false);
  return parsed.is_discarded() ? otherwise : parsed;
}

constexpr char kFlows[] = "orchestration.flows";

// A row as a FlowState: its state, else (a row written before states were
// stored whole) its box, status and turn; the columns name the flow.
absl::StatusOr<FlowState> StateOfRow(seal::KeyRing& keys, pqxx::work& tx, const std::string& tenant,
                                     const std::string& flow_id, const pqxx::row& row) {
  json stored = json::object();
  if (!row[0].is_null()) {
    auto opened = seal::OpenJson(keys, tx, tenant, row[0].as<std::string>(),
                                 seal::SealedAd(kFlows, tenant, flow_id, "state"));
    if (!opened.ok()) return opened.status();
    stored = json::parse(*opened, nullptr, /*allow_exceptions=*/false);
    if (stored.is_discarded()) stored = json::object();
  }
  FlowState state = FlowStateFromJson(stored);
  if (row[0].is_null()) {
    state.box = ContextBoxFromJson(ParsedOr(row[1], json::object()));
    state.status = ParseFlowStatus(row[2].as<std::string>());
    state.turn_id = row[3].as<std::string>();
    state.goal = state.box.goal;
  }
  state.conversation_id = row[4].as<std::string>();
  state.revision = row[5].as<int64_t>();
  return state;
}

}  // namespace

absl::StatusOr<FlowState> PgFlowStore::Load(const core::Call& call, const std::string& flow_id) {
  const core::ScopedCallDeadline bounded = Until(call);
  FlowState state;
  absl::Status status = pg::WithTenantTransaction(pool_, call.who.tenant_id, [&](pqxx::work& tx) {
    const pqxx::result rows = tx.exec_params(
        "SELECT state::text, box::text, status, turn_id, conversation_id::text, revision "
        "FROM orchestration.flows WHERE tenant_id = $1 AND flow_id = $2 AND user_id = $3",
        call.who.tenant_id, flow_id, call.who.user_id);
    if (rows.empty()) return absl::NotFoundError("no flow " + flow_id);
    auto read = StateOfRow(keys_, tx, call.who.tenant_id, flow_id, rows[0]);
    if (!read.ok()) return read.status();
    state = *std::move(read);
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  state.flow_id = flow_id;
  return state;
}

absl::StatusOr<int> PgFlowStore::Forget(const core::Call& call,
                                        const std::string& conversation_id) {
  if (!core::IsUuid(conversation_id)) return 0;
  const core::ScopedCallDeadline bounded = Until(call);
  int forgotten = 0;
  absl::Status status = pg::WithTenantTransaction(pool_, call.who.tenant_id, [&](pqxx::work& tx) {
    forgotten = static_cast<int>(
        tx.exec_params("DELETE FROM orchestration.flows "
                       "WHERE tenant_id = $1 AND conversation_id = $2 AND user_id = $3",
                       call.who.tenant_id, conversation_id, call.who.user_id)
            .affected_rows());
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return forgotten;
}

absl::Status PgFlowStore::Save(const core::Call& call, const FlowState& state,
                               int64_t expected_revision) {
  const core::ScopedCallDeadline bounded = Until(call);
  FlowState stored = state;
  stored.revision = expected_revision + 1;
  auto key = keys_.ActiveKey(call.who.tenant_id);
  if (!key.ok()) return key.status();
  // The state holds the box; the box column is read for older rows only.
  const std::string state_json =
      seal::RowSealer(*key, kFlows, call.who.tenant_id, state.flow_id)
          .Json("state",
                FlowStateToJson(stored).dump(-1, ' ', false, json::error_handler_t::replace));
  const std::string box_json = "{}";
  const std::string status_name = FlowStatusName(state.status);
  return pg::WithTenantTransaction(pool_, call.who.tenant_id, [&](pqxx::work& tx) {
    pqxx::result written;
    if (expected_revision == 0) {
      // A new flow, or a row stored before states were (revision 0); a
      // flow id that is another user's is left alone.
      written = tx.exec_params(
          "INSERT INTO orchestration.flows (tenant_id, flow_id, user_id, conversation_id, "
          "turn_id, status, box, state, revision) "
          "VALUES ($1, $2, $3, $4::uuid, $5, $6, $7::jsonb, $8::jsonb, 1) "
          "ON CONFLICT (tenant_id, flow_id) DO UPDATE SET turn_id = EXCLUDED.turn_id, "
          "status = EXCLUDED.status, box = EXCLUDED.box, state = EXCLUDED.state, revision = 1, "
          "updated_at = now() WHERE flows.user_id = EXCLUDED.user_id AND flows.revision = 0",
          call.who.tenant_id, state.flow_id, call.who.user_id, state.conversation_id, state.turn_id,
          status_name, box_json, state_json);
    } else {
      written = tx.exec_params(
          "UPDATE orchestration.flows SET turn_id = $4, status = $5, box = $6::jsonb, "
          "state = $7::jsonb, revision = revision + 1, updated_at = now() "
          "WHERE tenant_id = $1 AND flow_id = $2 AND user_id = $3 AND revision = $8",
          call.who.tenant_id, state.flow_id, call.who.user_id, state.turn_id, status_name, box_json,
          state_json, expected_revision);
    }
    if (written.affected_rows() != 1) {
      return absl::AbortedError("flow " + state.flow_id + " moved on from revision " +
                                std::to_string(expected_revision) + ", or is not the caller's");
    }
    return absl::OkStatus();
  });
}

}  // namespace omniforge::orchestrator
