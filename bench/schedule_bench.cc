// The scheduler under a thundering minute: N agents (10,000 by default,
// spread over 100 tenants) all due at the same slot, two scheduler
// replicas with their own connections over one PostgreSQL (durable
// settings), on the real clock. Each replica starts its runs' records as
// the service does; the bench measures when each run was handed over
// against its slot:
//   schedule_lag_p50_ms / p99_ms / max_ms   hand-over time minus the slot
//   duplicate_runs   runs recorded twice for one agent and slot (must be 0)
//   missed_runs      agents whose slot got no run (must be 0)
//   replica_a_runs / replica_b_runs   how the two replicas shared the work
// The runs themselves are not carried out (RunClaimed is the agent
// runtime's cost, measured by executor_bench's run_agent).
// Prints a final line: RESULT schedule_lag_p99_ms=... duplicate_runs=...
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include "libs/core/logging.h"
#include "libs/pg/migrate.h"
#include "libs/pg/pool.h"
#include "services/executor/src/pg_schedule_store.h"
#include "services/executor/src/scheduler.h"
#include "tests/support/test_database.h"

namespace omniforge::pg {
const std::vector<Migration>& ExecutorMigrations();
}

namespace omniforge::executor {
namespace {

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[i];
}

int64_t Scalar(const std::string& dsn, const std::string& sql) {
  pqxx::connection conn(dsn);
  pqxx::work tx(conn);
  return tx.exec1(sql)[0].as<int64_t>();
}

// `agents` agents over `tenants` tenants, each scheduled every minute with
// its next slot at `slot`.
void Seed(const std::string& dsn, int agents, int tenants, core::TimePoint slot) {
  pqxx::connection conn(dsn);
  pqxx::work tx(conn);
  tx.exec_params(
      "INSERT INTO platform.agents (tenant_id, id, user_id, name, description, schedule, "
      "schedule_cron, steps) SELECT 'tenant-' || (i % $2), gen_random_uuid(), 'user', 'agent-' || "
      "i, 'bench', 'every minute (UTC)', '* * * * *', '[{\"tool\": \"list_agents\"}]' FROM "
      "generate_series(1, $1) i",
      agents, tenants);
  tx.exec_params(
      "INSERT INTO platform.agent_schedules (tenant_id, agent_id, user_id, cron, time_zone, "
      "next_slot, missed_runs, allow_overlap) SELECT tenant_id, id, user_id, '* * * * *', 'UTC', "
      "to_timestamp($1::double precision / 1e6), 'run_once', false FROM platform.agents",
      core::MicrosOf(slot));
  tx.commit();
}

}  // namespace
}  // namespace omniforge::executor

namespace omniforge::executor {
namespace {

// Prints what the database holds of the slot's runs, and the lags.
void Report(const std::string& dsn, int64_t slot_us, int agents, int tenants, int batch,
            const std::vector<double>& lag_ms) {
  const std::string at =
      "slot = to_timestamp(" + std::to_string(slot_us) + "::double precision / 1e6)";
  const int64_t runs = Scalar(dsn, "SELECT count(*) FROM platform.runs WHERE " + at);
  const int64_t distinct =
      Scalar(dsn, "SELECT count(DISTINCT (tenant_id, agent_id)) FROM platform.runs WHERE " + at);
  const int64_t by_a = Scalar(dsn,
                              "SELECT count(*) FROM platform.schedule_slots WHERE claimed_by = "
                              "'replica-a' AND outcome = 'run' AND " +
                                  at);
  std::printf("%d agents over %d tenants due at one slot, 2 replicas, batches of %d\n", agents,
              tenants, batch);
  std::printf("lag p50 %.1f ms  p99 %.1f ms  max %.1f ms; runs %lld, replica a %lld, b %lld\n",
              Percentile(lag_ms, 0.5), Percentile(lag_ms, 0.99), Percentile(lag_ms, 1.0),
              static_cast<long long>(runs), static_cast<long long>(by_a),
              static_cast<long long>(runs - by_a));
  std::printf(
      "RESULT schedule_lag_p50_ms=%.1f schedule_lag_p99_ms=%.1f schedule_lag_max_ms=%.1f "
      "duplicate_runs=%lld missed_runs=%lld replica_a_runs=%lld replica_b_runs=%lld agents=%d\n",
      Percentile(lag_ms, 0.5), Percentile(lag_ms, 0.99), Percentile(lag_ms, 1.0),
      static_cast<long long>(runs - distinct), static_cast<long long>(agents - distinct),
      static_cast<long long>(by_a), static_cast<long long>(runs - by_a), agents);
}

}  // namespace
}  // namespace omniforge::executor

// NOLINTNEXTLINE(bugprone-exception-escape): a bench that cannot set up ends on the exception
int main(int argc, char** argv) {
  using namespace omniforge;
  using namespace omniforge::executor;
  CLI::App app{"scheduler benchmark: many agents due in the same minute, two replicas"};
  int agents = 10000;
  int tenants = 100;
  int batch = 500;
  app.add_option("--agents", agents, "agents due at the same slot");
  app.add_option("--tenants", tenants, "tenants they belong to");
  app.add_option("--batch", batch, "schedules per claim transaction");
  CLI11_PARSE(app, argc, argv);
  core::InitLogging("schedule_bench", "warn");

  testing::TestDatabase database;
  if (!pg::ApplyMigrations(database.owner_dsn(), "executor", pg::ExecutorMigrations()).ok())
    return 1;
  // The slot: the first whole minute at least 5 s away.
  const core::TimePoint now = core::SystemClock().Now();
  const int64_t minute = 60'000'000;
  int64_t slot_us = (core::MicrosOf(now) / minute + 1) * minute;
  if (slot_us - core::MicrosOf(now) < 5'000'000) slot_us += minute;
  const core::TimePoint slot = core::TimePointFromMicros(slot_us);
  Seed(database.dsn(), agents, tenants, slot);

  std::mutex mu;
  std::vector<double> lag_ms;
  lag_ms.reserve(static_cast<size_t>(agents));
  std::atomic<int> handed{0};
  const auto starter = [&](const ClaimedRun& run) {
    const double lag =
        static_cast<double>(core::MicrosOf(core::SystemClock().Now()) - core::MicrosOf(run.slot)) /
        1000.0;
    std::lock_guard<std::mutex> lock(mu);
    if (run.slot == slot) lag_ms.push_back(lag);
    handed.fetch_add(1);
  };
  pg::PgOptions options{.dsn = database.service_dsn("executor"), .pool_size = 4};
  auto pool_a = pg::PgPool::Create(options);
  auto pool_b = pg::PgPool::Create(options);
  if (!pool_a.ok() || !pool_b.ok()) return 1;
  PgScheduleStore store_a(**pool_a), store_b(**pool_b);
  SchedulerOptions so;
  so.batch = batch;
  so.claimant = "replica-a";
  Scheduler a(store_a, starter, core::SystemClock(), so);
  so.claimant = "replica-b";
  Scheduler b(store_b, starter, core::SystemClock(), so);
  a.Start();
  b.Start();
  const auto give_up = std::chrono::system_clock::now() +
                       std::chrono::microseconds(slot_us - core::MicrosOf(now)) +
                       std::chrono::seconds(60);
  while (handed.load() < agents && std::chrono::system_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  a.Stop();
  b.Stop();

  Report(database.dsn(), slot_us, agents, tenants, batch, lag_ms);
  return 0;
}
