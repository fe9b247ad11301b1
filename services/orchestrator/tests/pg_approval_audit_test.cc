// The approval audit trail in PostgreSQL (orchestration.approval_decisions,
// row-level security on): the store contract (approval_audit_contract.h),
// then what the database itself enforces and how rows are stored.
#include "services/orchestrator/storage/pg_approval_audit.h"

#include <gtest/gtest.h>

#include <chrono>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "libs/core/call_deadline.h"
#include "libs/pg/migrate.h"
#include "libs/seal/test_keys.h"
#include "services/orchestrator/storage/tenant_keys.h"
#include "services/orchestrator/tests/approval_audit_contract.h"
#include "tests/support/migrated_database.h"

namespace omniforge::pg {
const std::vector<Migration>& OrchestratorMigrations();
}

namespace omniforge::orchestrator {
namespace {

namespace execpb = ::omniforge::executor::v1;
namespace pb = ::omniforge::orchestrator::v1;

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
  static std::unique_ptr<ApprovalAudit> Make() {
    return std::make_unique<PgApprovalAudit>(kDatabase->pool(), TestKeys());
  }
};

INSTANTIATE_TYPED_TEST_SUITE_P(Postgres, ApprovalAuditContractTest, PgBackend);

class PgApprovalAuditTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { kDatabase->Get(); }

  void SetUp() override {
    tenant_ = "tenant-" + core::NewUuid().substr(24);  // the random tail
    conversation_ = core::NewUuid();
  }

  ActionDecisionRecord Decision(const std::string& tenant, const std::string& action_id) const {
    ActionDecisionRecord r;
    r.tenant_id = tenant;
    r.user_id = "alice";
    r.conversation_id = conversation_;
    r.turn_id = "turn-1";
    r.action_id = action_id;
    r.digest = "sha256:" + action_id;
    r.tool = "send_message";
    r.summary = "Message 240 customers";
    r.risk = execpb::TOOL_RISK_HIGH;
    r.outcome = pb::ACTION_OUTCOME_AUTO_APPROVED;
    r.decided_by = "policy";
    r.via = "policy";
    r.decided_at_micros = 1'700'000'000'000'001;
    return r;
  }

  // `sql` ($1 = `key`) as the cluster's superuser, who sees every tenant.
  static pqxx::result AsSuperuser(const std::string& sql, const std::string& key) {
    pqxx::connection conn(kDatabase->dsn());
    pqxx::nontransaction tx(conn);
    return tx.exec_params(sql, key);
  }

  // How many decisions of the conversation `tenant`'s transaction sees,
  // asking without naming a tenant.
  int64_t SeenBy(const std::string& tenant) const {
    int64_t count = -1;
    const absl::Status status =
        pg::WithTenantTransaction(kDatabase->pool(), tenant, [&](pqxx::work& tx) {
          count = tx.exec_params1(
                        "SELECT count(*) FROM orchestration.approval_decisions "
                        "WHERE conversation_id = $1::uuid",
                        conversation_)[0]
                      .as<int64_t>();
          return absl::OkStatus();
        });
    EXPECT_TRUE(status.ok()) << status;
    return count;
  }

  PgApprovalAudit audit_{kDatabase->pool(), TestKeys()};
  std::string tenant_;
  std::string conversation_;
};

TEST_F(PgApprovalAuditTest, RowLevelSecurityHidesAndRefusesOtherTenantsRows) {
  ASSERT_TRUE(pg::CheckRowLevelSecurityApplies(kDatabase->pool(), "orchestration").ok());
  ASSERT_TRUE(audit_.Record(Decision(tenant_, "a-1")).ok());
  EXPECT_EQ(SeenBy(tenant_), 1);
  EXPECT_EQ(SeenBy("other-" + tenant_), 0) << "the policy hides it, whatever the query asks";

  // A transaction of one tenant cannot write a row of another; the same
  // statement in the row's own tenant can.
  auto insert_as = [&](const std::string& tenant) {
    return pg::WithTenantTransaction(kDatabase->pool(), tenant, [&](pqxx::work& tx) {
      tx.exec_params(
          "INSERT INTO orchestration.approval_decisions (tenant_id, id, user_id, "
          "conversation_id, action_id, risk, outcome, decided_by, via) VALUES ($1, $2::uuid, "
          "'mallory', $3::uuid, 'inserted', 'high', 'approved', 'mallory', 'api')",
          tenant_, core::NewUuid(), conversation_);
      return absl::OkStatus();
    });
  };
  EXPECT_EQ(insert_as("other-" + tenant_).code(), absl::StatusCode::kInternal);
  EXPECT_EQ(SeenBy(tenant_), 1);
  ASSERT_TRUE(insert_as(tenant_).ok());
  EXPECT_EQ(SeenBy(tenant_), 2);

  // Rows are only added: the application role may not change or remove them.
  for (const char* sql :
       {"UPDATE orchestration.approval_decisions SET outcome = 'rejected' "
        "WHERE conversation_id = $1::uuid",
        "DELETE FROM orchestration.approval_decisions WHERE conversation_id = $1::uuid"}) {
    const absl::Status changed =
        pg::WithTenantTransaction(kDatabase->pool(), tenant_, [&](pqxx::work& tx) {
          tx.exec_params(sql, conversation_);
          return absl::OkStatus();
        });
    EXPECT_EQ(changed.code(), absl::StatusCode::kInternal) << sql;
  }
  EXPECT_EQ(SeenBy(tenant_), 2);
  for (const char* privilege : {"UPDATE", "DELETE", "TRUNCATE"}) {
    EXPECT_FALSE(AsSuperuser("SELECT has_table_privilege('omniforge_orchestrator', "
                             "'orchestration.approval_decisions', $1)",
                             privilege)[0][0]
                     .as<bool>())
        << privilege;
  }
  auto listed = audit_.List({tenant_, "alice"}, conversation_, 10);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u) << "mallory's row is not alice's";
  EXPECT_EQ((*listed)[0].outcome, pb::ACTION_OUTCOME_AUTO_APPROVED);
}

TEST_F(PgApprovalAuditTest, ARowSaysWhoWhenWhichDigestAndHowItEndedInPlainColumns) {
  ASSERT_TRUE(audit_.Record(Decision(tenant_, "a-1")).ok());
  const pqxx::result rows = AsSuperuser(
      "SELECT tenant_id, user_id, turn_id, action_id, digest, tool, risk, outcome, decided_by, "
      "via, decided_at = '2023-11-14 22:13:20.000001+00'::timestamptz, summary "
      "FROM orchestration.approval_decisions WHERE conversation_id = $1::uuid",
      conversation_);
  ASSERT_EQ(rows.size(), 1u);
  const pqxx::row row = rows[0];
  EXPECT_EQ(row[0].as<std::string>(), tenant_);
  EXPECT_EQ(row[1].as<std::string>(), "alice");
  EXPECT_EQ(row[2].as<std::string>(), "turn-1");
  EXPECT_EQ(row[3].as<std::string>(), "a-1");
  EXPECT_EQ(row[4].as<std::string>(), "sha256:a-1");
  EXPECT_EQ(row[5].as<std::string>(), "send_message");
  EXPECT_EQ(row[6].as<std::string>(), "high");
  EXPECT_EQ(row[7].as<std::string>(), "auto_approved");
  EXPECT_EQ(row[8].as<std::string>(), "policy");
  EXPECT_EQ(row[9].as<std::string>(), "policy");
  EXPECT_TRUE(row[10].as<bool>()) << "decided_at to the microsecond";
  // What the action would do, in the user's words, is sealed; it reads back.
  EXPECT_EQ(row[11].as<std::string>().rfind("ofs1:", 0), 0u) << row[11].as<std::string>();
  EXPECT_EQ(row[11].as<std::string>().find("customers"), std::string::npos);
  auto listed = audit_.List({tenant_, "alice"}, conversation_, 10);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].summary, "Message 240 customers");
}

TEST_F(PgApprovalAuditTest, TheTrailHasAnIndexInItsOrder) {
  const pqxx::result rows = AsSuperuser(
      "SELECT indexdef FROM pg_indexes WHERE schemaname = 'orchestration' AND indexname = $1",
      "approval_decisions_by_conversation");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_THAT(
      rows[0][0].as<std::string>(),
      ::testing::HasSubstr("(tenant_id, user_id, conversation_id, decided_at DESC, id DESC)"));
}

TEST_F(PgApprovalAuditTest, APassedCallDeadlineStopsBothBeforeTheDatabase) {
  {
    const core::ScopedCallDeadline passed(std::chrono::system_clock::now() -
                                          std::chrono::seconds(1));
    EXPECT_EQ(audit_.Record(Decision(tenant_, "late")).code(), absl::StatusCode::kDeadlineExceeded);
    EXPECT_EQ(audit_.List({tenant_, "alice"}, conversation_, 10).status().code(),
              absl::StatusCode::kDeadlineExceeded);
  }
  EXPECT_EQ(SeenBy(tenant_), 0);
}

}  // namespace
}  // namespace omniforge::orchestrator
