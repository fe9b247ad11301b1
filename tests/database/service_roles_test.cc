// Each service logs in as its own role, made by the deployments' role
// script (deploy/postgres-roles.sql, run here as a deployment runs it), and
// that role can do its service's work and nothing more: no other service's
// schema, no function that spans tenants but its own service's, no DDL, no
// other role, no way around row-level security.
#include <gtest/gtest.h>

#include <map>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "libs/pg/migrate.h"
#include "tests/support/command.h"
#include "tests/support/test_database.h"

namespace omniforge::pg {
const std::vector<Migration>& ExecutorMigrations();
const std::vector<Migration>& OrchestratorMigrations();
const std::vector<Migration>& SandboxMigrations();
}  // namespace omniforge::pg

namespace omniforge {
namespace {

struct ServiceRole {
  std::string service;  // omniforge_<service> logs in
  std::string schema;   // the one schema it may use
  // A row of its own it writes for tenant sr-a (its everyday work).
  std::string own_write;
  // A table of its schema under row-level security.
  std::string secured_table = "tenant_keys";
};

const std::vector<ServiceRole> kRoles = {
    {"conversation", "conversation",
     "INSERT INTO conversation.conversations (tenant_id, id, user_id, kind, key_id, title,"
     " created_at, updated_at) VALUES ('sr-a', gen_random_uuid(), 'u', 1, 1, '\\x00', now(),"
     " now())"},
    {"executor", "platform",
     "INSERT INTO platform.agents (tenant_id, id, user_id, name, schedule)"
     " VALUES ('sr-a', gen_random_uuid(), 'u', 'mine', '')"},
    {"orchestrator", "orchestration",
     "INSERT INTO orchestration.error_log (tenant_id, id, user_id, kind, message)"
     " VALUES ('sr-a', gen_random_uuid(), 'u', 'k', 'm')"},
    // The sandbox MCP servers the executor starts (services/sandbox).
    {"sandbox", "sandbox",
     "INSERT INTO sandbox.contacts (tenant_id, id, name, email)"
     " VALUES ('sr-a', 'c-1', 'Ana', 'ana@example.com')",
     "tenants"},
};

constexpr char kDenied[] = "denied";

// kDenied when PostgreSQL refuses the statement for want of a privilege
// (SQLSTATE 42501, which libpqxx 6.4 reports by the exception's class),
// any other error's message, or "" when it succeeds (rolled back either way).
std::string Outcome(pqxx::connection& conn, const std::string& sql) {
  pqxx::work tx(conn);
  try {
    tx.exec("SELECT set_config('app.tenant_id', 'sr-a', true)");
    tx.exec(sql);
    tx.abort();
    return "";
  } catch (const pqxx::insufficient_privilege&) {
    return kDenied;
  } catch (const pqxx::sql_error& e) {
    return e.what();
  }
}

class ServiceRolesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    db_ = new testing::TestDatabase();  // the conversation schema, as its owner
    ASSERT_TRUE(pg::ApplyMigrations(db_->owner_dsn(), "executor", pg::ExecutorMigrations()).ok());
    ASSERT_TRUE(
        pg::ApplyMigrations(db_->owner_dsn(), "orchestrator", pg::OrchestratorMigrations()).ok());
    ASSERT_TRUE(pg::ApplyMigrations(db_->owner_dsn(), "sandbox", pg::SandboxMigrations()).ok());
    // The roles as a deployment makes them (the owner is the database's).
    const testing::CommandResult made = testing::RunCommand(
        {OMNIFORGE_PSQL, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f",
         std::string(OMNIFORGE_SOURCE_DIR) + "/deploy/postgres-roles.sql", db_->dsn()},
        "",
        {"OMNIFORGE_CONVERSATION_PASSWORD=c-test", "OMNIFORGE_EXECUTOR_PASSWORD=e-test",
         "OMNIFORGE_ORCHESTRATOR_PASSWORD=o-test", "OMNIFORGE_SANDBOX_PASSWORD=s-test"});
    ASSERT_EQ(made.exit_code, 0) << made.out << made.err;
  }
  static void TearDownTestSuite() {
    delete db_;
    db_ = nullptr;
  }

  static pqxx::result AsSuperuser(const std::string& sql) {
    pqxx::connection conn(db_->dsn());
    pqxx::nontransaction tx(conn);
    return tx.exec(sql);
  }

  static testing::TestDatabase* db_;
};

testing::TestDatabase* ServiceRolesTest::db_ = nullptr;

TEST_F(ServiceRolesTest, EachRoleIsAPlainLoginMemberOfNothing) {
  for (const ServiceRole& role : kRoles) {
    const pqxx::row r = AsSuperuser(
        "SELECT rolcanlogin, rolsuper, rolbypassrls, rolcreaterole, rolcreatedb,"
        "       (SELECT count(*) FROM pg_auth_members m WHERE m.member = r.oid)"
        "  FROM pg_roles r WHERE rolname = 'omniforge_" +
        role.service + "'")[0];
    EXPECT_TRUE(r[0].as<bool>()) << role.service << " cannot log in";
    for (int i = 1; i <= 4; ++i) EXPECT_FALSE(r[i].as<bool>()) << role.service << " column " << i;
    EXPECT_EQ(r[5].as<int>(), 0) << role.service << " is a member of another role";
  }
}

TEST_F(ServiceRolesTest, EachRoleHasRightsOnItsOwnSchemaAlone) {
  // Every table, sequence and schema of the three, against every role.
  const pqxx::result relations = AsSuperuser(
      "SELECT c.oid::regclass::text, n.nspname, c.relkind = 'S' FROM pg_class c"
      "  JOIN pg_namespace n ON n.oid = c.relnamespace"
      " WHERE n.nspname IN ('conversation', 'platform', 'orchestration', 'sandbox')"
      "   AND c.relkind IN ('r', 'p', 'S')");
  ASSERT_GE(relations.size(), 20U);
  for (const ServiceRole& role : kRoles) {
    const std::string login = "'omniforge_" + role.service + "'";
    for (const std::string& schema : std::vector<std::string>{
             "conversation", "platform", "orchestration", "sandbox", "public"}) {
      const pqxx::row r = AsSuperuser(absl::StrCat("SELECT has_schema_privilege(", login, ", '",
                                                   schema, "', 'USAGE'), has_schema_privilege(",
                                                   login, ", '", schema, "', 'CREATE')"))[0];
      EXPECT_EQ(r[0].as<bool>(), schema == role.schema || schema == "public")
          << role.service << " usage on " << schema;
      EXPECT_FALSE(r[1].as<bool>()) << role.service << " may create objects in " << schema;
    }
    for (const pqxx::row& rel : relations) {
      const std::string name = rel[0].as<std::string>();
      const bool own = rel[1].as<std::string>() == role.schema;
      const bool sequence = rel[2].as<bool>();
      // Whether the role holds any of `privileges` on the relation.
      auto holds = [&](const std::string& privileges) {
        const std::string check = sequence ? "has_sequence_privilege" : "has_table_privilege";
        return AsSuperuser(absl::StrCat("SELECT ", check, "(", login, ", '", name, "', '",
                                        privileges, "')"))[0][0]
            .as<bool>();
      };
      const bool granted =
          holds(sequence ? "USAGE, SELECT, UPDATE" : "SELECT, INSERT, UPDATE, DELETE, TRUNCATE");
      if (own) {
        EXPECT_TRUE(granted || sequence) << role.service << " cannot use its own table " << name;
      } else {
        EXPECT_FALSE(granted) << role.service << " has rights on " << name;
      }
      if (!sequence) {
        EXPECT_FALSE(holds("TRUNCATE, TRIGGER, REFERENCES")) << role.service << " on " << name;
      }
    }
  }
  // The shared role of earlier releases keeps nothing.
  EXPECT_EQ(AsSuperuser("SELECT count(*) FROM pg_class c, aclexplode(c.relacl) a"
                        " WHERE a.grantee = 'omniforge_app'::regrole")[0][0]
                .as<int>(),
            0);
}

TEST_F(ServiceRolesTest, EachRoleDoesItsWorkAndIsRefusedEverythingElse) {
  // What another service's role tries, by schema: read and delete every
  // tenant's data, the functions that span tenants.
  const std::map<std::string, std::vector<std::string>> kForeign = {
      {"conversation",
       {"SELECT count(*) FROM conversation.messages", "SELECT * FROM conversation.tenant_keys",
        "SELECT conversation.purge_idle(0, '{}', now(), 1000)"}},
      {"platform",
       {"SELECT count(*) FROM platform.agents", "DELETE FROM platform.runs",
        "SELECT * FROM platform.tenant_keys",
        "SELECT count(*) FROM platform.claim_due_schedules(now(), 10)",
        "SELECT platform.purge_tool_invocations(now(), 1000)"}},
      {"orchestration",
       {"SELECT count(*) FROM orchestration.flows", "SELECT * FROM orchestration.tenant_keys",
        "INSERT INTO orchestration.approval_decisions (tenant_id) VALUES ('sr-a')"}},
      {"sandbox", {"SELECT count(*) FROM sandbox.events", "DELETE FROM sandbox.messages"}},
  };
  for (const ServiceRole& role : kRoles) {
    pqxx::connection conn(db_->service_dsn(role.service));
    EXPECT_EQ(Outcome(conn, role.own_write), "") << role.service << " cannot do its work";
    for (const auto& [schema, statements] : kForeign) {
      if (schema == role.schema) continue;
      for (const std::string& sql : statements) {
        EXPECT_EQ(Outcome(conn, sql), kDenied) << role.service << ": " << sql;
      }
    }
    // Nothing of its own schema's shape, nor another role, nor the
    // functions the cross-tenant wrappers call.
    const std::string own = role.schema;
    for (const std::string& sql :
         {"CREATE TABLE " + own + ".planted (id int)",
          std::string("CREATE TABLE public.planted (id int)"),
          "ALTER TABLE " + own + "." + role.secured_table + " DISABLE ROW LEVEL SECURITY",
          "DROP POLICY tenant_isolation ON " + own + "." + role.secured_table,
          std::string("SET ROLE omniforge_app"), std::string("SET ROLE omniforge_test_owner"),
          std::string("CREATE ROLE planted")}) {
      EXPECT_EQ(Outcome(conn, sql), kDenied) << role.service << ": " << sql;
    }
  }
  pqxx::connection executor(db_->service_dsn("executor"));
  EXPECT_EQ(Outcome(executor, "SELECT platform.earliest_schedule_all_tenants()"), kDenied);
  pqxx::connection conversation(db_->service_dsn("conversation"));
  EXPECT_EQ(
      Outcome(conversation, "SELECT conversation.purge_idle_all_tenants(0, '{}', now(), 1000)"),
      kDenied);
}

TEST_F(ServiceRolesTest, TheOrchestratorsAuditTrailIsAppendOnly) {
  pqxx::connection conn(db_->service_dsn("orchestrator"));
  for (const char* sql : {"UPDATE orchestration.error_log SET message = 'rewritten'",
                          "DELETE FROM orchestration.error_log",
                          "UPDATE orchestration.approval_decisions SET summary = 'rewritten'",
                          "DELETE FROM orchestration.approval_decisions",
                          "DELETE FROM orchestration.llm_turn_usage"}) {
    EXPECT_EQ(Outcome(conn, sql), kDenied) << sql;
  }
}

}  // namespace
}  // namespace omniforge
