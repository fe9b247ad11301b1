// Flows and their context boxes in orchestration.flows, one row per flow,
// under row-level security per tenant and scoped to the user.
#pragma once

#include "libs/pg/pool.h"
#include "services/orchestrator/flow/flow_store.h"

namespace omniforge::orchestrator {

// Thread-safe; each call is one statement in its own tenant transaction.
class PgFlowStore final : public FlowStore {
 public:
  explicit PgFlowStore(pg::PgPool& pool) : pool_(pool) {}

  absl::StatusOr<ContextBox> Load(const core::Identity& who, const std::string& flow_id,
                                  int64_t deadline) override;
  absl::Status Save(const core::Identity& who, const FlowRecord& record, int64_t deadline) override;

 private:
  pg::PgPool& pool_;
};

}  // namespace omniforge::orchestrator
