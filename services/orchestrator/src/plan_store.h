// Plans and their steps in orchestration.plans / orchestration.plan_steps
// (migrations/0003_plans.sql). Every statement runs in a transaction scoped
// to the plan's tenant (row-level security) and names the plan's user, so
// another user's plan is NOT_FOUND exactly like one that does not exist.
//
// Thread-safe: concurrent steps of one plan write their own rows.
#pragma once

#include <initializer_list>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libs/core/identity.h"
#include "libs/pg/pool.h"
#include "services/orchestrator/src/plan_model.h"

namespace omniforge::orchestrator {

class PlanStore final {
 public:
  // `pool` must outlive the store.
  explicit PlanStore(pg::PgPool& pool) : pool_(pool) {}

  // Stores a new plan and its steps (plan.id, tenant_id and user_id set).
  absl::Status Create(const Plan& plan);

  // The plan of `who` with its steps in order. NOT_FOUND for an id that is
  // not a UUID or not a plan of this user.
  absl::StatusOr<Plan> Get(const core::Identity& who, const std::string& plan_id);

  // Writes the plan's own fields (status, writes_approved, review, pending
  // question, summary) when its stored status is one of `from`; with
  // `replace_steps` its steps are replaced by plan.steps in the same
  // transaction (a revision). FAILED_PRECONDITION naming the stored status
  // otherwise, nothing changed; NOT_FOUND when the plan is gone.
  absl::Status Update(const Plan& plan, std::initializer_list<PlanStatus> from,
                      bool replace_steps = false);

  // Writes one step's progress (status, result, error, answers, dialogue,
  // attempts, times).
  absl::Status UpdateStep(const Plan& plan, const PlanStep& step);

 private:
  pg::PgPool& pool_;
};

}  // namespace omniforge::orchestrator
