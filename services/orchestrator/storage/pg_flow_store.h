// Flow states in orchestration.flows, one row per flow, under row-level
// security per tenant and scoped to the user (flow_store.h).
#pragma once

#include "libs/pg/pool.h"
#include "libs/seal/key_ring.h"
#include "services/orchestrator/flow/flow_store.h"

namespace omniforge::orchestrator {

// Thread-safe; each call is one statement in its own tenant transaction.
// The state (the user's goal, the context box, drafts) is sealed with the
// tenant's key; status, turn and revision stay readable. A row written
// before the state was stored whole (state NULL) reads as a state with its
// box, status and turn only; one written before states were sealed reads
// as it was written.
class PgFlowStore final : public FlowStore {
 public:
  // `pool` and `keys` (orchestration.tenant_keys) must outlive the store.
  PgFlowStore(pg::PgPool& pool, seal::KeyRing& keys) : pool_(pool), keys_(keys) {}

  absl::StatusOr<FlowState> Load(const core::Call& call, const std::string& flow_id) override;
  absl::Status Save(const core::Call& call, const FlowState& state,
                    int64_t expected_revision) override;
  absl::StatusOr<int> Forget(const core::Call& call, const std::string& conversation_id) override;

 private:
  pg::PgPool& pool_;
  seal::KeyRing& keys_;
};

}  // namespace omniforge::orchestrator
