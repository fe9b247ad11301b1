// Plans and their steps in orchestration.plans / orchestration.plan_steps
// (migrations/0003_plans.sql). Every statement runs in a transaction scoped
// to the plan's tenant (row-level security) and names the plan's user.
#pragma once

#include "libs/pg/pool.h"
#include "services/orchestrator/plans/plan_store.h"

namespace omniforge::orchestrator {

class PgPlanStore final : public PlanStore {
 public:
  // `pool` must outlive the store.
  explicit PgPlanStore(pg::PgPool& pool) : pool_(pool) {}

  absl::Status Create(const Plan& plan) override;
  absl::StatusOr<Plan> Get(const core::Identity& who, const std::string& plan_id) override;
  absl::StatusOr<std::optional<std::string>> LatestUnfinished(
      const core::Identity& who, const std::string& conversation_id) override;
  absl::Status Update(const Plan& plan, std::initializer_list<PlanStatus> from,
                      bool replace_steps = false) override;
  absl::Status UpdateStep(const Plan& plan, const PlanStep& step) override;

 private:
  pg::PgPool& pool_;
};

}  // namespace omniforge::orchestrator
