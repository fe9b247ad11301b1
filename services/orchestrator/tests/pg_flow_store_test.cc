// Flow states in PostgreSQL (orchestration.flows, row-level security on):
// the store contract (flow_store_contract.h), then rows stored before the
// state was (migration 0007_flow_state.sql).
#include "services/orchestrator/storage/pg_flow_store.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "libs/pg/migrate.h"
#include "libs/seal/test_keys.h"
#include "services/orchestrator/storage/tenant_keys.h"
#include "services/orchestrator/tests/flow_store_contract.h"
#include "tests/support/migrated_database.h"

namespace omniforge::pg {
const std::vector<Migration>& OrchestratorMigrations();
}

namespace omniforge::orchestrator {
namespace {

// One migrated database and pool (as the application role) shared by the
// program's suites.
testing::SharedDatabase* const kDatabase =
    testing::SharedDatabase::Register("orchestrator", &pg::OrchestratorMigrations);

// The tenants' data keys under a test master key, for the database's life.
seal::KeyRing& TestKeys() {
  static seal::KeyRing* keys =
      new seal::KeyRing(kDatabase->pool(), kOrchestratorKeys, seal::TestMasterKey(), "test");
  return *keys;
}

struct PgBackend {
  static void SetUpTestSuite() { kDatabase->Get(); }
  static void TearDownTestSuite() {}
  static std::unique_ptr<FlowStore> Make() {
    return std::make_unique<PgFlowStore>(kDatabase->pool(), TestKeys());
  }
};

INSTANTIATE_TYPED_TEST_SUITE_P(Postgres, FlowStoreContractTest, PgBackend);

TEST(PgFlowStoreTest, ARowStoredBeforeStatesWereReadsAsItsBoxAndIsFilledInByTheNextSave) {
  const core::Identity alice{"tenant-" + core::NewUuid().substr(24), "alice"};
  const core::Call call{alice, core::SystemClock().Now() + std::chrono::seconds(10)};
  const std::string conversation = core::NewUuid();
  // As the previous release wrote it: box and status, no state.
  ASSERT_TRUE(pg::WithTenantTransaction(kDatabase->pool(), alice.tenant_id, [&](pqxx::work& tx) {
                tx.exec_params(
                    "INSERT INTO orchestration.flows (tenant_id, flow_id, user_id, "
                    "conversation_id, turn_id, status, box) VALUES ($1, 'old-flow', $2, "
                    "$3::uuid, 'turn-0', 'waiting', '{\"goal\": \"chase invoices\", "
                    "\"progress\": [\"drafted create_agent\"]}'::jsonb)",
                    alice.tenant_id, alice.user_id, conversation);
                return absl::OkStatus();
              }).ok());
  absl::StatusOr<FlowState> old = PgFlowStore(kDatabase->pool(), TestKeys()).Load(call, "old-flow");
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
  ASSERT_TRUE(PgFlowStore(kDatabase->pool(), TestKeys()).Save(call, next, 0).ok());
  absl::StatusOr<FlowState> filled =
      PgFlowStore(kDatabase->pool(), TestKeys()).Load(call, "old-flow");
  ASSERT_TRUE(filled.ok()) << filled.status();
  EXPECT_EQ(filled->revision, 1);
  EXPECT_EQ(filled->status, FlowStatus::kDone);
  EXPECT_EQ(filled->box.progress.back(), "ran create_agent");
  // The status column follows the state, for readers of the rows; the
  // state is sealed and the old box column keeps no words.
  std::string state, box, status;
  ASSERT_TRUE(pg::WithTenantTransaction(kDatabase->pool(), alice.tenant_id, [&](pqxx::work& tx) {
                const pqxx::row row = tx.exec_params1(
                    "SELECT state::text, box::text, status FROM orchestration.flows "
                    "WHERE tenant_id = $1 AND flow_id = 'old-flow'",
                    alice.tenant_id);
                state = row[0].as<std::string>();
                box = row[1].as<std::string>();
                status = row[2].as<std::string>();
                return absl::OkStatus();
              }).ok());
  EXPECT_EQ(state.rfind("\"ofs1:", 0), 0u) << state;
  EXPECT_EQ(state.find("invoices"), std::string::npos);
  EXPECT_EQ(box, "{}");
  EXPECT_EQ(status, "done");
}

TEST(PgFlowStoreTest, AStateMovedToAnotherFlowDoesNotOpen) {
  const core::Identity bob{"tenant-" + core::NewUuid().substr(24), "bob"};
  const core::Call call{bob, core::SystemClock().Now() + std::chrono::seconds(10)};
  PgFlowStore store(kDatabase->pool(), TestKeys());
  for (const char* id : {"flow-a", "flow-b"}) {
    FlowState state;
    state.flow_id = id;
    state.conversation_id = core::NewUuid();
    state.turn_id = "turn-0";
    state.goal = std::string("goal of ") + id;
    ASSERT_TRUE(store.Save(call, state, 0).ok());
  }
  ASSERT_TRUE(pg::WithTenantTransaction(kDatabase->pool(), bob.tenant_id, [&](pqxx::work& tx) {
                tx.exec_params(
                    "UPDATE orchestration.flows b SET state = a.state FROM orchestration.flows a "
                    "WHERE a.tenant_id = $1 AND b.tenant_id = $1 AND a.flow_id = 'flow-a' "
                    "AND b.flow_id = 'flow-b'",
                    bob.tenant_id);
                return absl::OkStatus();
              }).ok());
  EXPECT_TRUE(store.Load(call, "flow-a").ok());
  EXPECT_EQ(store.Load(call, "flow-b").status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace omniforge::orchestrator
