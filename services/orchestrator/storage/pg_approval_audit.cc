#include "services/orchestrator/storage/pg_approval_audit.h"

#include <pqxx/pqxx>

#include "libs/core/ids.h"
#include "libs/seal/sealed_text.h"

namespace omniforge::orchestrator {
namespace {

constexpr char kDecisions[] = "orchestration.approval_decisions";

}  // namespace

absl::Status PgApprovalAudit::Record(const ActionDecisionRecord& record) {
  if (absl::Status status = ValidateActionDecision(record); !status.ok()) return status;
  // One id for every attempt of the body: a repeated attempt stores the
  // decision once.
  const std::string id = core::NewUuid();
  auto key = keys_.ActiveKey(record.tenant_id);
  if (!key.ok()) return key.status();
  const seal::RowSealer seal(*key, kDecisions, record.tenant_id, id);
  const std::string summary = seal.Text("summary", StoredDecisionSummary(record.summary));
  return pg::WithTenantTransaction(pool_, record.tenant_id, [&](pqxx::work& tx) {
    tx.exec_params(
        "INSERT INTO orchestration.approval_decisions (tenant_id, id, user_id, conversation_id, "
        "turn_id, action_id, digest, tool, summary, risk, outcome, decided_by, via, decided_at) "
        "VALUES ($1, $2::uuid, $3, $4::uuid, $5, $6, $7, $8, $9, $10, $11, $12, $13, "
        "CASE WHEN $14::bigint = 0 THEN clock_timestamp() "
        "ELSE 'epoch'::timestamptz + $14::bigint * interval '1 microsecond' END) "
        "ON CONFLICT (tenant_id, id) DO NOTHING",
        record.tenant_id, id, record.user_id, record.conversation_id, record.turn_id,
        record.action_id, record.digest, record.tool, summary, ToolRiskText(record.risk),
        ActionOutcomeText(record.outcome), record.decided_by, record.via, record.decided_at_micros);
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<ActionDecisionRecord>> PgApprovalAudit::List(
    const core::Identity& who, const std::string& conversation_id, int limit) {
  if (absl::Status status = ValidateDecisionQuery(conversation_id, limit); !status.ok()) {
    return status;
  }
  std::vector<ActionDecisionRecord> decisions;
  absl::Status status = pg::WithTenantTransaction(pool_, who.tenant_id, [&](pqxx::work& tx) {
    decisions.clear();  // a retried body starts again
    // id is a UUIDv7: among decisions made in the same microsecond, the
    // later recorded sorts first.
    const pqxx::result rows = tx.exec_params(
        "SELECT turn_id, action_id, digest, tool, summary, risk, outcome, decided_by, via, "
        "(extract(epoch FROM decided_at) * 1000000)::bigint, id::text "
        "FROM orchestration.approval_decisions "
        "WHERE tenant_id = $1 AND user_id = $2 AND conversation_id = $3::uuid "
        "ORDER BY decided_at DESC, id DESC LIMIT $4",
        who.tenant_id, who.user_id, conversation_id, limit);
    for (const pqxx::row& row : rows) {
      ActionDecisionRecord r;
      r.tenant_id = who.tenant_id;
      r.user_id = who.user_id;
      r.conversation_id = conversation_id;
      r.turn_id = row[0].as<std::string>();
      r.action_id = row[1].as<std::string>();
      r.digest = row[2].as<std::string>();
      r.tool = row[3].as<std::string>();
      seal::RowOpener open(keys_, tx, kDecisions, who.tenant_id, row[10].as<std::string>());
      r.summary = open.Text("summary", row[4].as<std::string>());
      if (!open.status().ok()) return open.status();
      // The table's CHECKs keep both to values this release knows; a newer
      // release's value reads as unspecified.
      if (!ParseToolRiskText(row[5].as<std::string>(), &r.risk)) {
        r.risk = ::omniforge::executor::v1::TOOL_RISK_UNSPECIFIED;
      }
      if (!ParseActionOutcomeText(row[6].as<std::string>(), &r.outcome)) {
        r.outcome = ::omniforge::orchestrator::v1::ACTION_OUTCOME_UNSPECIFIED;
      }
      r.decided_by = row[7].as<std::string>();
      r.via = row[8].as<std::string>();
      r.decided_at_micros = row[9].as<int64_t>();
      decisions.push_back(std::move(r));
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return decisions;
}

}  // namespace omniforge::orchestrator
