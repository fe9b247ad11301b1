// Row-level security binds everyone who reads omniforge's tables but a
// superuser: the services' roles and the schemas' owner alike (FORCE), with
// the owner and each service logging in as a deployment has them, not as a
// superuser. The functions that span tenants (retention, the scheduler)
// still do, and the switch they use is the owner's alone.
#include <gtest/gtest.h>

#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "libs/pg/migrate.h"
#include "tests/support/test_database.h"

namespace omniforge::pg {
const std::vector<Migration>& ExecutorMigrations();
const std::vector<Migration>& OrchestratorMigrations();
const std::vector<Migration>& SandboxMigrations();
}  // namespace omniforge::pg

namespace omniforge {
namespace {

// One row per tenant in a table of each schema, and in every table the
// cross-tenant functions use.
constexpr char kRows[] = R"sql(
  INSERT INTO conversation.conversations (tenant_id, id, user_id, kind, key_id, title,
                                          created_at, updated_at)
  VALUES ('rs-a', gen_random_uuid(), 'u', 1, 1, '\x00', '2000-01-01', '2000-01-01'),
         ('rs-b', gen_random_uuid(), 'u', 1, 1, '\x00', '2000-01-01', '2000-01-01');
  INSERT INTO platform.agents (tenant_id, id, user_id, name, schedule)
  VALUES ('rs-a', '00000000-0000-4000-8000-00000000000a', 'u', 'a', 'every day at 9'),
         ('rs-b', '00000000-0000-4000-8000-00000000000b', 'u', 'b', 'every day at 9');
  INSERT INTO platform.agent_schedules (tenant_id, agent_id, user_id, cron, time_zone,
                                        next_slot, missed_runs, allow_overlap)
  VALUES ('rs-a', '00000000-0000-4000-8000-00000000000a', 'u', '0 9 * * *', 'UTC',
          '2000-01-02', 'skip', false),
         ('rs-b', '00000000-0000-4000-8000-00000000000b', 'u', '0 9 * * *', 'UTC',
          '2000-01-01', 'skip', false);
  INSERT INTO platform.runs (tenant_id, id, user_id, agent_id, agent_name, status, lease_until)
  VALUES ('rs-a', gen_random_uuid(), 'u', '00000000-0000-4000-8000-00000000000a', 'a',
          'running', '2000-01-01'),
         ('rs-b', gen_random_uuid(), 'u', '00000000-0000-4000-8000-00000000000b', 'b',
          'running', '2000-01-01');
  INSERT INTO platform.tool_invocations (tenant_id, user_id, idempotency_key, tool_name,
                                         arguments_hash, status, lease_until, completed_at)
  VALUES ('rs-a', 'u', 'k', 't', 'h', 'done', '2000-01-01', '2000-01-01'),
         ('rs-b', 'u', 'k', 't', 'h', 'done', '2000-01-01', '2000-01-01');
  INSERT INTO orchestration.error_log (tenant_id, id, user_id, kind, message)
  VALUES ('rs-a', gen_random_uuid(), 'u', 'k', 'm'), ('rs-b', gen_random_uuid(), 'u', 'k', 'm');
)sql";

const std::vector<std::string> kTables = {"conversation.conversations", "platform.agents",
                                          "platform.agent_schedules",   "platform.runs",
                                          "platform.tool_invocations",  "orchestration.error_log"};

// The service whose role reads each of kTables.
std::string ServiceOf(const std::string& table) {
  if (table.rfind("conversation.", 0) == 0) return "conversation";
  if (table.rfind("platform.", 0) == 0) return "executor";
  return "orchestrator";
}

class RowSecurityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    db_ = new testing::TestDatabase();  // the conversation schema, as its owner
    ASSERT_TRUE(pg::ApplyMigrations(db_->owner_dsn(), "executor", pg::ExecutorMigrations()).ok());
    ASSERT_TRUE(
        pg::ApplyMigrations(db_->owner_dsn(), "orchestrator", pg::OrchestratorMigrations()).ok());
    ASSERT_TRUE(pg::ApplyMigrations(db_->owner_dsn(), "sandbox", pg::SandboxMigrations()).ok());
  }
  static void TearDownTestSuite() {
    delete db_;
    db_ = nullptr;
  }

  // Fresh rows for each test, written by the superuser.
  void SetUp() override {
    pqxx::connection conn(db_->dsn());
    pqxx::work tx(conn);
    for (const std::string& table : kTables) tx.exec("DELETE FROM " + table);
    tx.exec(kRows);
    tx.commit();
  }

  // count(*) of each table in kTables, in one transaction on `dsn` that
  // first runs `setup`.
  static std::vector<int> Counts(const std::string& dsn, const std::string& setup) {
    pqxx::connection conn(dsn);
    pqxx::work tx(conn);
    if (!setup.empty()) tx.exec(setup);
    std::vector<int> counts;
    counts.reserve(kTables.size());
    for (const std::string& table : kTables) {
      counts.push_back(tx.exec("SELECT count(*) FROM " + table)[0][0].as<int>());
    }
    return counts;
  }

  // The same, each table read by its service's own login.
  static std::vector<int> ServiceCounts(const std::string& setup) {
    std::vector<int> counts;
    counts.reserve(kTables.size());
    for (const std::string& table : kTables) {
      pqxx::connection conn(db_->service_dsn(ServiceOf(table)));
      pqxx::work tx(conn);
      tx.exec(setup);
      counts.push_back(tx.exec("SELECT count(*) FROM " + table)[0][0].as<int>());
    }
    return counts;
  }

  static testing::TestDatabase* db_;
};

testing::TestDatabase* RowSecurityTest::db_ = nullptr;

TEST_F(RowSecurityTest, EveryTableOfTheSchemasHasATenantAndForcedRowSecurity) {
  pqxx::connection conn(db_->dsn());
  pqxx::work tx(conn);
  pqxx::result tables = tx.exec(
      "SELECT c.oid::regclass::text, c.relrowsecurity, c.relforcerowsecurity,"
      "       EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid"
      "                  AND a.attname = 'tenant_id' AND NOT a.attisdropped)"
      "  FROM pg_class c"
      " WHERE c.relnamespace::regnamespace::text IN ('conversation', 'platform', 'orchestration',"
      "                                              'sandbox')"
      "   AND c.relkind IN ('r', 'p') ORDER BY 1");
  ASSERT_GE(tables.size(), 20U);
  for (const pqxx::row& t : tables) {
    const std::string name = t[0].as<std::string>();
    EXPECT_TRUE(t[3].as<bool>()) << name << " has no tenant_id";
    EXPECT_TRUE(t[1].as<bool>()) << name << " has row-level security off";
    EXPECT_TRUE(t[2].as<bool>()) << name << " does not force row-level security on its owner";
  }
}

TEST_F(RowSecurityTest, TheOwnerSeesAndWritesOnlyTheTenantItNames) {
  const std::vector<int> two(kTables.size(), 2), one(kTables.size(), 1), none(kTables.size(), 0);
  EXPECT_EQ(Counts(db_->dsn(), ""), two);  // a superuser is not bound
  EXPECT_EQ(Counts(db_->owner_dsn(), ""), none);
  EXPECT_EQ(Counts(db_->owner_dsn(), "SELECT set_config('app.tenant_id', 'rs-a', true)"), one);

  pqxx::connection conn(db_->owner_dsn());
  pqxx::work tx(conn);
  tx.exec("SELECT set_config('app.tenant_id', 'rs-a', true)");
  EXPECT_THROW(tx.exec("INSERT INTO orchestration.error_log (tenant_id, id, user_id, kind, message)"
                       " VALUES ('rs-b', gen_random_uuid(), 'u', 'k', 'planted')"),
               pqxx::sql_error);
}

TEST_F(RowSecurityTest, TheCrossTenantSwitchIsTheOwnersAlone) {
  // The owner's maintenance switch (the master key's re-wrap uses it) shows
  // every tenant in the tables whose functions span tenants ...
  const std::vector<int> owner =
      Counts(db_->owner_dsn(), "SELECT set_config('omniforge.cross_tenant', 'on', true)");
  EXPECT_EQ(owner, (std::vector<int>{2, 2, 2, 2, 2, 0}));
  // ... and nothing more to the services' roles.
  const std::vector<int> service = ServiceCounts(
      "SELECT set_config('omniforge.cross_tenant', 'on', true),"
      "       set_config('app.tenant_id', 'rs-a', true)");
  EXPECT_EQ(service, std::vector<int>(kTables.size(), 1));
}

TEST_F(RowSecurityTest, FunctionsThatSpanTenantsStillDoWhenAServiceCallsThem) {
  {
    pqxx::connection conn(db_->service_dsn("conversation"));
    pqxx::work tx(conn);
    tx.exec("SELECT set_config('app.tenant_id', 'rs-a', true)");
    EXPECT_EQ(tx.exec("SELECT conversation.purge_idle(30, '{}', now(), 10)")[0][0].as<int>(), 2);
    tx.commit();
  }
  pqxx::connection conn(db_->service_dsn("executor"));
  pqxx::work tx(conn);
  tx.exec("SELECT set_config('app.tenant_id', 'rs-a', true)");
  // Tenant b's schedule is the earlier one.
  EXPECT_EQ(
      tx.exec("SELECT platform.earliest_schedule() = '2000-01-01'::timestamptz")[0][0].as<bool>(),
      true);
  EXPECT_EQ(tx.exec("SELECT count(*) FROM platform.claim_due_schedules(now(), 10)")[0][0].as<int>(),
            2);
  EXPECT_EQ(tx.exec("SELECT count(*) FROM platform.unread_schedules('', "
                    "'00000000-0000-0000-0000-000000000000', 10)")[0][0]
                .as<int>(),
            2);
  EXPECT_EQ(tx.exec("SELECT platform.fail_abandoned_runs(now(), 10)")[0][0].as<int>(), 2);
  EXPECT_EQ(tx.exec("SELECT platform.purge_tool_invocations(now(), 10)")[0][0].as<int>(), 2);
  // Each turned the switch on for its own call only.
  EXPECT_EQ(tx.exec("SELECT coalesce(current_setting('omniforge.cross_tenant', true), '')")[0][0]
                .as<std::string>(),
            "");
  // What they wrap is the owner's alone.
  {
    pqxx::subtransaction inner(tx);
    EXPECT_THROW(inner.exec("SELECT platform.earliest_schedule_all_tenants()"), pqxx::sql_error);
  }
  tx.commit();

  pqxx::connection admin(db_->dsn());
  pqxx::work check(admin);
  EXPECT_EQ(
      check.exec("SELECT count(*) FROM platform.runs WHERE status = 'failed'")[0][0].as<int>(), 2);
  EXPECT_EQ(check.exec("SELECT count(*) FROM platform.tool_invocations")[0][0].as<int>(), 0);
  EXPECT_EQ(check.exec("SELECT count(*) FROM conversation.conversations")[0][0].as<int>(), 0);
}

}  // namespace
}  // namespace omniforge
