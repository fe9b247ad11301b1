// The approval audit trail (approval_audit.h) in
// orchestration.approval_decisions (migration 0006), under row-level
// security per tenant and scoped to the user. The summary, which names what
// the action would do in the user's words, is sealed with the tenant's key
// (`keys`, orchestration.tenant_keys, must outlive the store).
#pragma once

#include "libs/pg/pool.h"
#include "libs/seal/key_ring.h"
#include "services/orchestrator/approvals/approval_audit.h"

namespace omniforge::orchestrator {

// Thread-safe; each call is one statement in its own tenant transaction,
// bounded by the thread's call deadline (core::ScopedCallDeadline) when one
// is set. A decision is written before Record returns, not queued: an audit
// trail that loses rows under load is no audit trail, and decisions come at
// the pace of people. Records without decided_at_micros take the
// database's clock. `pool` must outlive the store.
class PgApprovalAudit final : public ApprovalAudit {
 public:
  PgApprovalAudit(pg::PgPool& pool, seal::KeyRing& keys) : pool_(pool), keys_(keys) {}

  absl::Status Record(const ActionDecisionRecord& record) override;
  absl::StatusOr<std::vector<ActionDecisionRecord>> List(const core::Identity& who,
                                                         const std::string& conversation_id,
                                                         int limit) override;

 private:
  pg::PgPool& pool_;
  seal::KeyRing& keys_;
};

}  // namespace omniforge::orchestrator
