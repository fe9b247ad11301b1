// The scheduler: fires each slot of each agent's schedule exactly once,
// whatever the number of executor replicas. Schedules wait in a store with
// their next slot; a pass claims the due ones (a replica's claim locks
// them, others skip them), decides per schedule what its due slots become
// (PlanSlots), records that with a unique key per agent and slot, moves
// the schedule to its next slot, and then starts the runs. After downtime
// the missed slots follow the agent's policy (run the latest once, or skip)
// and are recorded as missed either way; a slot whose agent still runs its
// previous run is recorded as an overlap unless the agent allows overlaps;
// runs whose executor stopped before they ended are failed. No gRPC and
// no SQL here; time comes from an injected clock.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/core/clock.h"
#include "libs/core/identity.h"
#include "services/executor/src/agent_runner.h"

namespace omniforge::executor {

// A schedule whose next slot has come.
struct DueSchedule {
  core::Identity who;
  std::string agent_id;
  std::string cron;
  std::string time_zone;
  core::TimePoint next_slot;
  std::string missed_runs;  // "run_once" or "skip"
  bool allow_overlap = false;
};

// What a due schedule's slots become at a pass.
struct SlotPlan {
  std::optional<core::TimePoint> run;  // the slot run now
  bool late = false;                   // `run` is a missed slot run once (run_once)
  int64_t missed = 0;                  // slots not run, from missed_first to missed_last
  core::TimePoint missed_first;
  core::TimePoint missed_last;
  core::TimePoint next_slot;  // the schedule's next slot, after `now`
  bool ended = false;         // the cron has no slot left (next_slot unset)
};

// The slots of `due` up to `now`: the latest runs when it is at most
// `grace` old; an older one runs once (late) under "run_once" and is
// missed under "skip"; every earlier one is missed. At most `max_slots`
// are counted one by one (a longer downtime counts that many).
SlotPlan PlanSlots(const DueSchedule& due, core::TimePoint now, std::chrono::seconds grace,
                   int64_t max_slots = 100000);

// A scheduled run the store has recorded (status running) and a replica
// now starts.
struct ClaimedRun {
  core::Identity who;
  std::string agent_id;
  std::string run_id;
  core::TimePoint slot;
  int64_t lag_us = 0;  // claimed this long after its slot
};

// What one pass claimed.
struct Claim {
  std::vector<ClaimedRun> runs;
  int64_t missed = 0;    // slots recorded as missed
  int64_t overlaps = 0;  // slots recorded as overlaps
  int schedules = 0;     // schedules claimed
};

// Where schedules wait. Thread-safe; every replica's store shares one
// database.
class ScheduleStore {
 public:
  virtual ~ScheduleStore() = default;
  // Claims up to `limit` schedules due at `now` that no other pass holds,
  // applies `plan` to each and records the outcome, in one transaction.
  virtual absl::StatusOr<Claim> ClaimDue(
      core::TimePoint now, int limit, const std::string& claimant,
      const std::function<SlotPlan(const DueSchedule&)>& plan) = 0;
  // The earliest next slot of any active schedule; nullopt when none.
  virtual absl::StatusOr<std::optional<core::TimePoint>> Earliest() = 0;
  // Fails runs left running past their lease; how many.
  virtual absl::StatusOr<int64_t> FailAbandonedRuns(core::TimePoint now) = 0;
  // Up to `limit` agents whose schedule is still only words (from before
  // schedules were read), after `after` (tenant and agent id; empty: from
  // the first) in key order: their owner and id.
  virtual absl::StatusOr<std::vector<std::pair<core::Identity, std::string>>> UnreadSchedules(
      const std::pair<std::string, std::string>& after, int limit) = 0;
};

// How reading the old schedules went.
struct OldSchedules {
  int read = 0;        // now on the scheduler
  int unreadable = 0;  // kept as words (logged with why)
};

// Reads the schedules still kept only as words (ScheduleStore::
// UnreadSchedules) through `platform`'s update_agent as each agent's
// owner, so they run on the scheduler like any other; one that cannot be
// read keeps its words. Run at start.
absl::StatusOr<OldSchedules> ReadOldSchedules(ScheduleStore& store, ToolProvider& platform);

struct SchedulerOptions {
  std::string claimant = "scheduler";    // recorded with each slot (replica name)
  int batch = 500;                       // schedules per claim transaction
  std::chrono::seconds grace{120};       // how late a slot may still run as itself
  std::chrono::milliseconds poll{1000};  // longest sleep (new schedules are seen by then)
};

// Counts since start, for metrics.
struct SchedulerCounts {
  std::atomic<int64_t> runs_started{0};
  std::atomic<int64_t> missed{0};
  std::atomic<int64_t> overlaps{0};
  std::atomic<int64_t> abandoned{0};
  std::atomic<int64_t> claim_errors{0};
};

class Scheduler final {
 public:
  // Starts each claimed run with `start_run` (e.g. on a thread pool; the
  // run is already recorded). Everything given must outlive the scheduler.
  using RunStarter = std::function<void(ClaimedRun)>;
  Scheduler(ScheduleStore& store, RunStarter start_run, const core::Clock& clock,
            SchedulerOptions options)
      : store_(store),
        start_run_(std::move(start_run)),
        clock_(clock),
        options_(std::move(options)) {}
  ~Scheduler() { Stop(); }

  // One pass at the clock's now: claims due schedules batch after batch
  // until none is left, starts their runs, fails abandoned runs. The
  // number of runs started.
  absl::StatusOr<int64_t> Pass();

  // Passes on a thread of its own until Stop: after each, it sleeps until
  // the earliest next slot, at most `poll`.
  void Start();
  void Stop();

  const SchedulerCounts& counts() const { return counts_; }

 private:
  void Loop();

  ScheduleStore& store_;
  RunStarter start_run_;
  const core::Clock& clock_;
  SchedulerOptions options_;
  SchedulerCounts counts_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

// Runs a claimed run with `runner`: loads the agent and runs it; a run
// whose agent is gone or paused fails saying so. For Scheduler's starter.
void RunClaimed(AgentRunner& runner, const ClaimedRun& claimed);

}  // namespace omniforge::executor
