// Where plans and their steps are kept (PgPlanStore: schema orchestration).
// Every call is scoped to the plan's tenant and user: another user's plan is
// NOT_FOUND exactly like one that does not exist.
//
// Implementations are thread-safe: concurrent steps of one plan write their
// own rows.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libs/core/identity.h"
#include "services/orchestrator/plans/plan_model.h"

namespace omniforge::orchestrator {

class PlanStore {
 public:
  virtual ~PlanStore() = default;

  // Stores a new plan and its steps (plan.id, tenant_id and user_id set).
  virtual absl::Status Create(const Plan& plan) = 0;

  // The plan of `who` with its steps in order. NOT_FOUND for an id that is
  // not a UUID or not a plan of this user.
  virtual absl::StatusOr<Plan> Get(const core::Identity& who, const std::string& plan_id) = 0;

  // The id of the newest plan of `who` in `conversation_id` that was left
  // approved or running (its turn ended before the plan did: the
  // orchestrator running it stopped); nullopt when there is none.
  virtual absl::StatusOr<std::optional<std::string>> LatestUnfinished(
      const core::Identity& who, const std::string& conversation_id) = 0;

  // Writes the plan's own fields (status, writes_approved, review, pending
  // question, summary) when its stored status is one of `from`; with
  // `replace_steps` its steps are replaced by plan.steps in the same
  // transaction (a revision). FAILED_PRECONDITION naming the stored status
  // otherwise, nothing changed; NOT_FOUND when the plan is gone.
  virtual absl::Status Update(const Plan& plan, std::initializer_list<PlanStatus> from,
                              bool replace_steps = false) = 0;

  // Writes one step's progress (status, result, error, answers, dialogue,
  // attempts, times, assessment).
  virtual absl::Status UpdateStep(const Plan& plan, const PlanStep& step) = 0;

  // Removes the plans of `who` in `conversation_id`, with their steps (the
  // conversation was deleted); the number of plans removed.
  virtual absl::StatusOr<int> Forget(const core::Identity& who,
                                     const std::string& conversation_id) = 0;
};

}  // namespace omniforge::orchestrator
