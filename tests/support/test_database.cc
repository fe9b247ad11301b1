#include "tests/support/test_database.h"

#include <cstdlib>
#include <iostream>
#include <pqxx/pqxx>
#include <utility>

#include "absl/strings/str_replace.h"
#include "libs/core/ids.h"
#include "libs/pg/migrate.h"

namespace omniforge::pg {
const std::vector<Migration>& ConversationMigrations();
}

namespace omniforge::testing {
namespace {

constexpr char kDefaultAdminDsn[] =
    "host=127.0.0.1 port=" OMNIFORGE_TEST_PG_PORT " user=omniforge dbname=postgres";

// The owner of every test database: a login that is not a superuser and
// cannot bypass row-level security, granted omniforge_app with the admin
// option, as deploy/postgres-roles.sql makes the owner.
constexpr char kOwner[] = "omniforge_test_owner";

// The services' own logins, as deploy/postgres-roles.sql makes them (the
// test cluster trusts loopback logins, so they have no password); sandbox
// is the sandbox MCP servers' (services/sandbox).
constexpr const char* kServices[] = {"conversation", "executor", "orchestrator", "sandbox"};

[[noreturn]] void Fail(const std::string& what) {
  std::cerr << "test database: " << what
            << "\n(the ctest fixture starts PostgreSQL with scripts/pg.sh; run tests via "
               "`make test` or start it yourself)\n";
  std::abort();
}

// Makes the owner and the services' roles once per cluster. Test programs
// run side by side, so a concurrent maker's duplicate is success; a second
// try settles any other race (a concurrent GRANT).
void EnsureOwnerRole(pqxx::connection& admin) {
  std::string sql = absl::StrReplaceAll(R"sql(
    DO $$ BEGIN
      IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'omniforge_app') THEN
        CREATE ROLE omniforge_app NOLOGIN NOSUPERUSER NOBYPASSRLS;
      END IF;
      IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$owner') THEN
        CREATE ROLE $owner LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS;
      END IF;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
    END $$;
    GRANT omniforge_app TO $owner WITH ADMIN OPTION;)sql",
                                        {{"$owner", kOwner}});
  for (const char* service : kServices) {
    sql += absl::StrReplaceAll(R"sql(
    DO $$ BEGIN
      IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'omniforge_$service') THEN
        CREATE ROLE omniforge_$service LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS;
      END IF;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
    END $$;)sql",
                               {{"$service", service}});
  }
  for (int attempt = 1;; ++attempt) {
    try {
      pqxx::nontransaction tx(admin);
      tx.exec(sql);
      return;
    } catch (const std::exception&) {
      if (attempt == 3) throw;
    }
  }
}

std::string DefaultAdminDsn() {
  const char* env = std::getenv("OMNIFORGE_TEST_PG_DSN");
  return env != nullptr ? env : kDefaultAdminDsn;
}

}  // namespace

std::string TestDatabase::service_dsn(const std::string& service) const {
  return dsn_ + " user=omniforge_" + service;
}

std::vector<std::string> DatabaseEnv(const TestDatabase& db, const std::string& service,
                                     const std::vector<std::string>& more) {
  std::vector<std::string> env = {"OMNIFORGE_DATABASE_DSN=" + db.service_dsn(service),
                                  "OMNIFORGE_DATABASE_MIGRATE_DSN=" + db.owner_dsn()};
  env.insert(env.end(), more.begin(), more.end());
  return env;
}

TestDatabase::TestDatabase() : TestDatabase(DefaultAdminDsn()) {}

TestDatabase::TestDatabase(std::string admin_dsn) : admin_dsn_(std::move(admin_dsn)) {
  std::string suffix = core::NewUuid().substr(24);
  name_ = "omniforge_test_" + suffix;
  try {
    pqxx::connection admin(admin_dsn_);
    EnsureOwnerRole(admin);
    pqxx::nontransaction tx(admin);
    tx.exec("CREATE DATABASE " + tx.quote_name(name_) + " OWNER " + kOwner);
  } catch (const std::exception& e) {
    Fail(e.what());
  }
  dsn_ = admin_dsn_;
  const auto pos = dsn_.find("dbname=");
  dsn_ = (pos == std::string::npos ? dsn_ + " " : dsn_.substr(0, pos)) + "dbname=" + name_;
  // In a key=value string the last value of a key counts.
  owner_dsn_ = dsn_ + " user=" + kOwner;
  auto applied = pg::ApplyMigrations(owner_dsn_, "conversation", pg::ConversationMigrations());
  if (!applied.ok()) Fail(std::string(applied.status().message()));
}

TestDatabase::~TestDatabase() {
  try {
    pqxx::connection admin(admin_dsn_);
    pqxx::nontransaction tx(admin);
    tx.exec("DROP DATABASE IF EXISTS " + tx.quote_name(name_) + " WITH (FORCE)");
  } catch (const std::exception& e) {
    std::cerr << "test database: cannot drop " << name_ << ": " << e.what() << "\n";
  }
}

}  // namespace omniforge::testing
