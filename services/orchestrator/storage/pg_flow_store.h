// Flow states in orchestration.flows, one row per flow, under row-level
// security per tenant and scoped to the user (flow_store.h).
#pragma once

#include "libs/pg/pool.h"
#include "services/orchestrator/flow/flow_store.h"

namespace omniforge::orchestrator {

// Thread-safe; each call is one statement in its own tenant transaction.
// A row written before the state was stored whole (state NULL) reads as a
// state with its box, status and turn only.
class PgFlowStore final : public FlowStore {
 public:
  explicit PgFlowStore(pg::PgPool& pool) : pool_(pool) {}

  absl::StatusOr<FlowState> Load(const core::Call& call, const std::string& flow_id) override;
  absl::Status Save(const core::Call& call, const FlowState& state,
                    int64_t expected_revision) override;

 private:
  pg::PgPool& pool_;
};

}  // namespace omniforge::orchestrator
