// Turn errors and model-call usage while the orchestrator's PostgreSQL is
// out of reach: the database refuses every connection for a while (its
// connections cut, new ones turned away), then takes them again. The rows
// made meanwhile wait in their spools and are stored once it is back, each
// exactly once, even when a spool is read again after the rows left it (a
// crash between the insert and the rewrite of the file).
#include "services/orchestrator/storage/row_spool.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include "libs/core/ids.h"
#include "libs/core/metrics.h"
#include "libs/pg/migrate.h"
#include "libs/seal/test_keys.h"
#include "services/orchestrator/storage/pg_error_log.h"
#include "services/orchestrator/storage/tenant_keys.h"
#include "services/orchestrator/storage/usage_recorder.h"
#include "services/orchestrator/usage/usage_attribution.h"
#include "tests/support/migrated_database.h"

namespace omniforge::pg {
const std::vector<Migration>& OrchestratorMigrations();
}

namespace omniforge::orchestrator {
namespace {

constexpr char kTenant[] = "tenant-spool";
constexpr auto kPatience = std::chrono::seconds(60);

testing::SharedDatabase* const kDatabase =
    testing::SharedDatabase::Register("orchestrator", &pg::OrchestratorMigrations);

double Dropped(const char* metric, const char* help) {
  double total = 0;
  for (const char* reason : {"queue_full", "database", "spool_full", "spool_error"}) {
    total += core::MetricsRegistry::Global().GetCounter(metric, help, {{"reason", reason}}).Value();
  }
  return total;
}
double ErrorsDropped() {
  return Dropped("omniforge_orchestrator_turn_errors_dropped_total",
                 "Turn errors not stored in orchestration.error_log");
}
double UsageDropped() {
  return Dropped("omniforge_orchestrator_llm_usage_dropped_total",
                 "Model-call usage records not stored");
}

llm::UsageRecord Answered() {
  llm::UsageRecord r;
  r.operation_type = "planner";
  r.profile = "balanced";
  r.provider = "fake";
  r.model = "fake-model";
  r.tokens.prompt_tokens = 10;
  r.tokens.completion_tokens = 5;
  r.cost_usd = 0.001;
  r.attempts = 1;
  r.ok = true;
  return r;
}

class RowSpoolOutageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("omniforge-row-spool-" + core::NewUuid());
    run_ = "run-" + core::NewUuid().substr(0, 8) + "-";
    keys_ = std::make_unique<seal::KeyRing>(kDatabase->pool(), kOrchestratorKeys,
                                            seal::TestMasterKey(), "test");
  }
  void TearDown() override {
    if (down_) SetReachable(true);
    std::filesystem::remove_all(dir_);
  }

  std::shared_ptr<RowSpool> OpenSpool(const std::string& name) {
    auto spool = RowSpool::Open({dir_, name, 16LL << 20, seal::TestMasterKeys("spool", '7')});
    EXPECT_TRUE(spool.ok()) << spool.status();
    return spool.ok() ? std::shared_ptr<RowSpool>(*std::move(spool)) : nullptr;
  }

  // Takes the database away (every connection to it cut, new ones turned
  // away), or gives it back.
  void SetReachable(bool reachable) {
    const std::string name = kDatabase->Get().database().name();
    std::string admin = kDatabase->dsn();
    admin = admin.substr(0, admin.rfind("dbname=")) + "dbname=postgres";
    pqxx::connection conn(admin);
    pqxx::nontransaction tx(conn);
    tx.exec("ALTER DATABASE " + tx.quote_name(name) + " ALLOW_CONNECTIONS " +
            (reachable ? "true" : "false"));
    if (!reachable) {
      tx.exec_params(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 "
          "AND pid <> pg_backend_pid()",
          name);
    }
    down_ = !reachable;
  }

  int64_t Count(const std::string& table) {
    pqxx::connection conn(kDatabase->dsn());
    pqxx::nontransaction tx(conn);
    return tx
        .exec_params("SELECT count(*) FROM orchestration." + table + " WHERE turn_id LIKE $1",
                     run_ + "%")[0][0]
        .as<int64_t>();
  }

  static bool WaitFor(const std::function<bool()>& done) {
    const auto give_up = std::chrono::steady_clock::now() + kPatience;
    while (!done()) {
      if (std::chrono::steady_clock::now() > give_up) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  }

  void RecordError(PgErrorLog& log, int i) {
    log.Record({kTenant, "user-1", core::NewUuid(), run_ + std::to_string(i), "tool_failed",
                "executor unavailable", "executor", "tool_call", "agents.list"});
  }
  void RecordUsage(PgUsageRecorder& usage, int i) {
    ModelUsage turn(
        {kTenant, "user-1", core::NewUuid(), run_ + std::to_string(i), "CONTEXT_TYPE_GLOBAL"},
        &usage);
    turn.Record(Answered());
    turn.Record(Answered());
  }

  std::filesystem::path dir_;
  std::string run_;
  std::unique_ptr<seal::KeyRing> keys_;
  bool down_ = false;
};

TEST_F(RowSpoolOutageTest, ErrorsAndUsageMadeDuringAnOutageAreStoredOnceWhenItEnds) {
  constexpr int kErrors = 400;
  constexpr int kTurns = 250;
  const double errors_dropped = ErrorsDropped();
  const double usage_dropped = UsageDropped();
  std::shared_ptr<RowSpool> error_spool = OpenSpool("error_log");
  std::shared_ptr<RowSpool> usage_spool = OpenSpool("llm_usage");
  ASSERT_NE(error_spool, nullptr);
  ASSERT_NE(usage_spool, nullptr);
  const auto backoff = std::chrono::milliseconds(100);
  std::filesystem::path kept_error_file = dir_ / "error_log.copy";
  {
    PgErrorLog errors(kDatabase->pool(), *keys_, error_spool, 10000, backoff);
    PgUsageRecorder usage(kDatabase->pool(), usage_spool, 10000, backoff);
    // The tenant's key exists before the outage, as for any tenant with turns.
    RecordError(errors, -1);
    ASSERT_TRUE(WaitFor([&] { return Count("error_log") == 1; }));

    SetReachable(false);
    for (int i = 0; i < kErrors; ++i) RecordError(errors, i);
    for (int i = 0; i < kTurns; ++i) RecordUsage(usage, i);
    EXPECT_TRUE(WaitFor([&] {
      return error_spool->depth() == static_cast<size_t>(kErrors) &&
             usage_spool->depth() == static_cast<size_t>(kTurns);
    })) << "spooled: "
        << error_spool->depth() << " errors, " << usage_spool->depth() << " usage rows";
    // What a crash just after the inserts would leave behind.
    std::filesystem::copy_file(dir_ / "error_log.log", kept_error_file);

    SetReachable(true);
    EXPECT_TRUE(WaitFor([&] { return error_spool->depth() == 0 && usage_spool->depth() == 0; }))
        << "still spooled: " << error_spool->depth() << " errors, " << usage_spool->depth()
        << " usage rows";
  }
  EXPECT_EQ(Count("error_log"), kErrors + 1);
  EXPECT_EQ(Count("llm_turn_usage"), kTurns);
  EXPECT_EQ(Count("llm_usage"), 2 * kTurns);

  // The next process finds the rows still in the file: they are sent again
  // and stored nowhere twice.
  error_spool.reset();
  std::filesystem::rename(kept_error_file, dir_ / "error_log.log");
  error_spool = OpenSpool("error_log");
  ASSERT_NE(error_spool, nullptr);
  EXPECT_EQ(error_spool->depth(), static_cast<size_t>(kErrors));
  {
    PgErrorLog errors(kDatabase->pool(), *keys_, error_spool, 10000, backoff);
    EXPECT_TRUE(WaitFor([&] { return error_spool->depth() == 0; }));
  }
  EXPECT_EQ(Count("error_log"), kErrors + 1);
  EXPECT_EQ(ErrorsDropped() - errors_dropped, 0);
  EXPECT_EQ(UsageDropped() - usage_dropped, 0);
}

// A full spool refuses the newest rows and counts them; the oldest stay.
TEST_F(RowSpoolOutageTest, AFullSpoolKeepsTheOldestRowsAndCountsTheRest) {
  auto spool = RowSpool::Open({dir_, "error_log", 4096, std::nullopt});
  ASSERT_TRUE(spool.ok()) << spool.status();
  std::vector<SpooledRow> rows;
  rows.reserve(100);
  for (int i = 0; i < 100; ++i)
    rows.push_back({0, kTenant, std::to_string(i) + std::string(100, ' '), 1, 0});
  absl::StatusOr<size_t> kept = (*spool)->Add(rows);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_GT(*kept, 0u);
  EXPECT_LT(*kept, 100u);
  EXPECT_LE((*spool)->file_bytes(), 4096);
  std::vector<SpooledRow> oldest = (*spool)->Oldest(1);
  ASSERT_EQ(oldest.size(), 1u);
  EXPECT_EQ(oldest[0].row, "0" + std::string(100, ' '));
  // Read again by the next process: the same rows.
  const size_t depth = (*spool)->depth();
  spool->reset();
  auto reopened = RowSpool::Open({dir_, "error_log", 4096, std::nullopt});
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ((*reopened)->depth(), depth);
}

}  // namespace
}  // namespace omniforge::orchestrator
