// The scheduler's store on PostgreSQL: platform.agent_schedules (each
// schedule's next slot) and platform.schedule_slots (a row per agent and
// slot, the key that makes a slot fire once). A claim locks the due
// schedules with FOR UPDATE SKIP LOCKED (platform.claim_due_schedules) so
// that replicas share the work without waiting on each other, and records
// everything in the same transaction: the slots' rows, the runs (status
// running, with their lease) and the schedules' next slots. Thread-safe.
#pragma once

#include "libs/pg/pool.h"
#include "services/executor/src/scheduler.h"

namespace omniforge::executor {

class PgScheduleStore final : public ScheduleStore {
 public:
  explicit PgScheduleStore(pg::PgPool& pool) : pool_(pool) {}

  absl::StatusOr<Claim> ClaimDue(core::TimePoint now, int limit, const std::string& claimant,
                                 const std::function<SlotPlan(const DueSchedule&)>& plan) override;
  absl::StatusOr<std::optional<core::TimePoint>> Earliest() override;
  absl::StatusOr<int64_t> FailAbandonedRuns(core::TimePoint now) override;
  absl::StatusOr<std::vector<std::pair<core::Identity, std::string>>> UnreadSchedules(
      const std::pair<std::string, std::string>& after, int limit) override;

 private:
  pg::PgPool& pool_;
};

}  // namespace omniforge::executor
