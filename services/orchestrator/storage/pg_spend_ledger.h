// A tenant's LLM spend (limits/tenant_limits.h) read from the usage rows:
// orchestration.llm_turn_usage (one row per turn or plan step, its calls'
// costs inside) and the per-call rows of older releases
// (orchestration.llm_usage_calls), under row-level security per tenant.
#pragma once

#include "libs/pg/pool.h"
#include "services/orchestrator/limits/tenant_limits.h"

namespace omniforge::orchestrator {

// Thread-safe; one statement per read. `pool` must outlive the ledger.
class PgSpendLedger final : public SpendLedger {
 public:
  explicit PgSpendLedger(pg::PgPool& pool) : pool_(pool) {}

  absl::StatusOr<Spend> Read(const std::string& tenant, core::TimePoint now) override;

 private:
  pg::PgPool& pool_;
};

}  // namespace omniforge::orchestrator
