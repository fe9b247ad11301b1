// Plans and their steps in orchestration.plans / orchestration.plan_steps
// (migrations/0003_plans.sql). Every statement runs in a transaction scoped
// to the plan's tenant (row-level security) and names the plan's user.
// What users and models wrote (the objective, notes, the question, the
// summary; each step's description, expected output, tool calls, results,
// error and answers, and its assessment's reasons and evidence) is sealed
// with the tenant's key; ids, statuses, tool names, times and each step's
// score and verdict (0014_step_assessment.sql) stay readable.
#pragma once

#include "libs/pg/pool.h"
#include "libs/seal/key_ring.h"
#include "services/orchestrator/plans/plan_store.h"

namespace omniforge::orchestrator {

class PgPlanStore final : public PlanStore {
 public:
  // `pool` and `keys` (orchestration.tenant_keys) must outlive the store.
  PgPlanStore(pg::PgPool& pool, seal::KeyRing& keys) : pool_(pool), keys_(keys) {}

  absl::Status Create(const Plan& plan) override;
  absl::StatusOr<Plan> Get(const core::Identity& who, const std::string& plan_id) override;
  absl::StatusOr<std::optional<std::string>> LatestUnfinished(
      const core::Identity& who, const std::string& conversation_id) override;
  absl::Status Update(const Plan& plan, std::initializer_list<PlanStatus> from,
                      bool replace_steps = false) override;
  absl::Status UpdateStep(const Plan& plan, const PlanStep& step) override;
  absl::StatusOr<int> Forget(const core::Identity& who,
                             const std::string& conversation_id) override;

 private:
  pg::PgPool& pool_;
  seal::KeyRing& keys_;
};

}  // namespace omniforge::orchestrator
