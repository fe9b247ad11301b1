// Plans and their steps in memory, as PgPlanStore keeps them, for unit tests
// of the turn with plans (no PostgreSQL). Thread-safe: a plan's steps run on
// threads of their own.
#pragma once

#include <initializer_list>
#include <map>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "services/orchestrator/plans/plan_store.h"

namespace omniforge::orchestrator::testing {

// Scoped like the real store: another user's plan, or an id that is not a
// UUID, is NOT_FOUND; Update writes only when the stored status is one of
// `from` (FAILED_PRECONDITION otherwise) and only the plan's own fields.
class FakePlanStore final : public PlanStore {
 public:
  absl::Status Create(const Plan& plan) override;
  absl::StatusOr<Plan> Get(const core::Identity& who, const std::string& plan_id) override;
  absl::StatusOr<std::optional<std::string>> LatestUnfinished(
      const core::Identity& who, const std::string& conversation_id) override;
  absl::Status Update(const Plan& plan, std::initializer_list<PlanStatus> from,
                      bool replace_steps = false) override;
  absl::Status UpdateStep(const Plan& plan, const PlanStep& step) override;
  absl::StatusOr<int> Forget(const core::Identity& who,
                             const std::string& conversation_id) override;

  // A plan as stored, whoever owns it; nullopt when there is none.
  std::optional<Plan> Stored(const std::string& plan_id) const;

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, Plan> plans_ ABSL_GUARDED_BY(mu_);
  // Creation order, for LatestUnfinished.
  std::map<std::string, int> created_ ABSL_GUARDED_BY(mu_);
  int next_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace omniforge::orchestrator::testing
