#include "services/executor/src/scheduler.h"

#include "absl/strings/str_cat.h"
#include "libs/core/logging.h"
#include "libs/core/metrics.h"
#include "libs/schedule/schedule.h"

namespace omniforge::executor {

SlotPlan PlanSlots(const DueSchedule& due, core::TimePoint now, std::chrono::seconds grace,
                   int64_t max_slots) {
  SlotPlan plan;
  auto cron = schedule::Cron::Parse(due.cron);
  if (!cron.ok()) {  // stored only after it was read: cannot happen
    plan.ended = true;
    return plan;
  }
  // The due slots: next_slot and every later one up to now.
  std::vector<core::TimePoint> slots = {due.next_slot};
  std::optional<core::TimePoint> next = cron->NextAfter(due.next_slot, due.time_zone);
  while (next.has_value() && *next <= now && static_cast<int64_t>(slots.size()) < max_slots) {
    slots.push_back(*next);
    next = cron->NextAfter(*next, due.time_zone);
  }
  const bool on_time = now - slots.back() <= grace;
  if (next.has_value() && *next <= now) {
    // Too many to count one by one: those counted are missed; a slot within
    // the grace still runs as itself.
    next = cron->NextAfter(now - grace - std::chrono::microseconds(1), due.time_zone);
    while (next.has_value() && *next <= now) {
      plan.run = *next;
      next = cron->NextAfter(*next, due.time_zone);
    }
  } else if (on_time) {
    plan.run = slots.back();
    slots.pop_back();
  }
  if (!plan.run.has_value() && due.missed_runs != "skip") {
    plan.run = slots.back();
    plan.late = true;
    slots.pop_back();
  }
  if (!slots.empty()) {
    plan.missed = static_cast<int64_t>(slots.size());
    plan.missed_first = slots.front();
    plan.missed_last = slots.back();
  }
  plan.ended = !next.has_value();
  if (next.has_value()) plan.next_slot = *next;
  return plan;
}

absl::StatusOr<int64_t> Scheduler::Pass() {
  const core::TimePoint now = clock_.Now();
  int64_t started = 0;
  const auto plan = [&](const DueSchedule& due) { return PlanSlots(due, now, options_.grace); };
  while (true) {
    absl::StatusOr<Claim> claim = store_.ClaimDue(now, options_.batch, options_.claimant, plan);
    if (!claim.ok()) {
      counts_.claim_errors.fetch_add(1);
      return claim.status();
    }
    counts_.missed.fetch_add(claim->missed);
    counts_.overlaps.fetch_add(claim->overlaps);
    static core::Histogram& lag = core::MetricsRegistry::Global().GetHistogram(
        "omniforge_schedule_lag_seconds", "How late scheduled runs were claimed after their slot.",
        {}, {0.05, 0.1, 0.25, 0.5, 1, 2, 5, 15, 60, 300, 3600});
    auto& slots = core::MetricsRegistry::Global();
    slots
        .GetCounter("omniforge_schedule_slots_total", "Schedule slots, by what became of them.",
                    {{"outcome", "missed"}})
        .Inc(static_cast<double>(claim->missed));
    slots
        .GetCounter("omniforge_schedule_slots_total", "Schedule slots, by what became of them.",
                    {{"outcome", "overlap"}})
        .Inc(static_cast<double>(claim->overlaps));
    for (ClaimedRun& run : claim->runs) {
      lag.Observe(static_cast<double>(core::MicrosOf(clock_.Now()) - core::MicrosOf(run.slot)) /
                  1e6);
      slots
          .GetCounter("omniforge_schedule_slots_total", "Schedule slots, by what became of them.",
                      {{"outcome", "run"}})
          .Inc();
      counts_.runs_started.fetch_add(1);
      ++started;
      start_run_(std::move(run));
    }
    if (claim->schedules < options_.batch) break;
  }
  absl::StatusOr<int64_t> abandoned = store_.FailAbandonedRuns(now);
  if (!abandoned.ok()) return abandoned.status();
  counts_.abandoned.fetch_add(*abandoned);
  return started;
}

void Scheduler::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void Scheduler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Scheduler::Loop() {
  // After a failed pass the wait doubles up to `poll` (the database is down
  // or a statement fails): a replica never spins on errors. A pass that
  // started nothing while a slot looks due (another replica holds it) waits
  // a little before looking again.
  constexpr std::chrono::milliseconds kShortest(10);
  std::chrono::milliseconds backoff = kShortest;
  while (true) {
    std::chrono::milliseconds sleep = options_.poll;
    absl::StatusOr<int64_t> ran = Pass();
    if (!ran.ok()) {
      core::LogWarn("scheduler pass failed", {{"error", std::string(ran.status().message())}});
      sleep = backoff;
      backoff = std::min(backoff * 2, std::max(options_.poll, kShortest));
    } else {
      backoff = kShortest;
      if (auto earliest = store_.Earliest(); earliest.ok() && earliest->has_value()) {
        const auto until =
            std::chrono::duration_cast<std::chrono::milliseconds>(**earliest - clock_.Now());
        sleep = std::clamp(until, *ran > 0 ? std::chrono::milliseconds(0) : kShortest,
                           std::max(options_.poll, kShortest));
      }
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (wake_.wait_for(lock, sleep, [this] { return stopping_; })) return;
  }
}

void RunClaimed(AgentRunner& runner, const ClaimedRun& claimed) {
  RunStore& store = runner.store();
  auto agent = store.LoadAgent(claimed.who, claimed.agent_id);
  RunOutcome failed;
  failed.status = "failed";
  if (!agent.ok() || !agent->has_value()) {
    failed.error = agent.ok()
                       ? "the agent no longer exists"
                       : absl::StrCat("could not load the agent: ", agent.status().message());
  } else if ((*agent)->status != "active") {
    failed.error = "the agent was paused before its run started";
  } else {
    auto run = runner.Run(claimed.who, **agent, claimed.run_id, "{}");
    if (!run.ok()) {
      core::LogWarn("a scheduled run could not be stored",
                    {{"run", claimed.run_id}, {"error", std::string(run.status().message())}});
    }
    return;
  }
  failed.output_json = nlohmann::json({{"summary", failed.error}}).dump();
  if (auto stored = store.FinishRun(claimed.who, claimed.run_id, failed); !stored.ok()) {
    core::LogWarn("a scheduled run could not be stored",
                  {{"run", claimed.run_id}, {"error", std::string(stored.status().message())}});
  }
}

namespace {

// Reads one agent's stored schedule words again through update_agent;
// empty when read, else why not.
std::string ReadOldSchedule(ToolProvider& platform, const core::Identity& who,
                            const std::string& agent) {
  const auto deadline = std::chrono::system_clock::now() + std::chrono::seconds(30);
  absl::StatusOr<ToolResult> got =
      platform.Invoke({who, "get_agent", nlohmann::json{{"agent", agent}}, deadline});
  if (!got.ok()) return std::string(got.status().message());
  if (got->is_error) return got->json;
  const nlohmann::json stored = nlohmann::json::parse(got->json, nullptr, false);
  const std::string words = stored.is_object() && stored.contains("agent")
                                ? stored["agent"].value("schedule", std::string())
                                : std::string();
  absl::StatusOr<ToolResult> read = platform.Invoke(
      {who, "update_agent", nlohmann::json{{"agent", agent}, {"schedule", words}}, deadline});
  if (!read.ok()) return std::string(read.status().message());
  return read->is_error ? read->json : "";
}

}  // namespace

absl::StatusOr<OldSchedules> ReadOldSchedules(ScheduleStore& store, ToolProvider& platform) {
  constexpr int kAtOnce = 500;
  OldSchedules out;
  // In key order, a page after the last: those that cannot be read are
  // passed, not met again.
  std::pair<std::string, std::string> after;
  for (;;) {
    auto agents = store.UnreadSchedules(after, kAtOnce);
    if (!agents.ok()) return agents.status();
    for (const auto& [who, agent] : *agents) {
      const std::string why = ReadOldSchedule(platform, who, agent);
      if (why.empty()) {
        ++out.read;
        continue;
      }
      ++out.unreadable;
      core::LogWarn("an agent's schedule is kept as words: it could not be read",
                    {{"component", "scheduler"}, {"agent_id", agent}, {"error", why}});
    }
    if (static_cast<int>(agents->size()) < kAtOnce) break;
    after = {agents->back().first.tenant_id, agents->back().second};
  }
  return out;
}

}  // namespace omniforge::executor
