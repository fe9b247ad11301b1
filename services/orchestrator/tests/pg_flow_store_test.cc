// Flow states in PostgreSQL (orchestration.flows, row-level security on):
// the store contract (flow_store_contract.h), then rows stored before the
// state was (migration 0007_flow_state.sql).
#include "services/orchestrator/storage/pg_flow_store.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "libs/pg/migrate.h"
#include "libs/pg/pool.h"
#include "services/orchestrator/tests/flow_store_contract.h"
#include "tests/support/test_database.h"

namespace omniforge::pg {
const std::vector<Migration>& OrchestratorMigrations();
}

namespace omniforge::orchestrator {
namespace {

// One migrated database and pool (as the application role) shared by the
// program's suites; dropped when the program ends.
class Database final : public ::testing::Environment {
 public:
  static void Open() {
    if (pool != nullptr) return;
    db = new testing::TestDatabase();
    auto applied = pg::ApplyMigrations(db->dsn(), "orchestrator", pg::OrchestratorMigrations());
    ASSERT_TRUE(applied.ok()) << applied.status();
    pg::PgOptions options;
    options.dsn = db->dsn();
    auto made = pg::PgPool::Create(options);
    ASSERT_TRUE(made.ok()) << made.status();
    pool = made->release();
  }

  void TearDown() override {
    delete pool;
    pool = nullptr;
    delete db;
    db = nullptr;
  }

  static testing::TestDatabase* db;
  static pg::PgPool* pool;
};

testing::TestDatabase* Database::db = nullptr;
pg::PgPool* Database::pool = nullptr;
[[maybe_unused]] ::testing::Environment* const kDatabase =
    ::testing::AddGlobalTestEnvironment(new Database);

struct PgBackend {
  static void SetUpTestSuite() { Database::Open(); }
  static void TearDownTestSuite() {}
  static std::unique_ptr<FlowStore> Make() {
    return std::make_unique<PgFlowStore>(*Database::pool);
  }
};

INSTANTIATE_TYPED_TEST_SUITE_P(Postgres, FlowStoreContractTest, PgBackend);

TEST(PgFlowStoreTest, ARowStoredBeforeStatesWereReadsAsItsBoxAndIsFilledInByTheNextSave) {
  Database::Open();
  const core::Identity alice{"tenant-" + core::NewUuid().substr(24), "alice"};
  const core::Call call{alice, core::SystemClock().Now() + std::chrono::seconds(10)};
  const std::string conversation = core::NewUuid();
  // As the previous release wrote it: box and status, no state.
  ASSERT_TRUE(pg::WithTenantTransaction(*Database::pool, alice.tenant_id, [&](pqxx::work& tx) {
                tx.exec_params(
                    "INSERT INTO orchestration.flows (tenant_id, flow_id, user_id, "
                    "conversation_id, turn_id, status, box) VALUES ($1, 'old-flow', $2, "
                    "$3::uuid, 'turn-0', 'waiting', '{\"goal\": \"chase invoices\", "
                    "\"progress\": [\"drafted create_agent\"]}'::jsonb)",
                    alice.tenant_id, alice.user_id, conversation);
                return absl::OkStatus();
              }).ok());
  absl::StatusOr<FlowState> old = PgFlowStore(*Database::pool).Load(call, "old-flow");
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->revision, 0);
  EXPECT_EQ(old->status, FlowStatus::kWaiting);
  EXPECT_EQ(old->turn_id, "turn-0");
  EXPECT_EQ(old->conversation_id, conversation);
  EXPECT_EQ(old->goal, "chase invoices");
  EXPECT_EQ(old->box.progress, std::vector<std::string>{"drafted create_agent"});

  FlowState next = *old;
  next.turn_id = "turn-1";
  next.status = FlowStatus::kDone;
  ContextBox::Add(next.box.progress, "ran create_agent");
  ASSERT_TRUE(PgFlowStore(*Database::pool).Save(call, next, 0).ok());
  absl::StatusOr<FlowState> filled = PgFlowStore(*Database::pool).Load(call, "old-flow");
  ASSERT_TRUE(filled.ok()) << filled.status();
  EXPECT_EQ(filled->revision, 1);
  EXPECT_EQ(filled->status, FlowStatus::kDone);
  EXPECT_EQ(filled->box.progress.back(), "ran create_agent");
  // The box and status columns follow the state, for readers of the rows.
  std::string box_goal, status;
  ASSERT_TRUE(pg::WithTenantTransaction(*Database::pool, alice.tenant_id, [&](pqxx::work& tx) {
                const pqxx::row row = tx.exec_params1(
                    "SELECT box->>'goal', status FROM orchestration.flows "
                    "WHERE tenant_id = $1 AND flow_id = 'old-flow'",
                    alice.tenant_id);
                box_goal = row[0].as<std::string>();
                status = row[1].as<std::string>();
                return absl::OkStatus();
              }).ok());
  EXPECT_EQ(box_goal, "chase invoices");
  EXPECT_EQ(status, "done");
}

}  // namespace
}  // namespace omniforge::orchestrator
