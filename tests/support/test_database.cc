#include "tests/support/test_database.h"

#include <cstdlib>
#include <iostream>
#include <pqxx/pqxx>

#include "libs/core/ids.h"
#include "libs/pg/migrate.h"

namespace omniforge::pg {
const std::vector<Migration>& ConversationMigrations();
}

namespace omniforge::testing {
namespace {

constexpr char kDefaultAdminDsn[] =
    "host=127.0.0.1 port=" OMNIFORGE_TEST_PG_PORT " user=omniforge dbname=postgres";

[[noreturn]] void Fail(const std::string& what) {
  std::cerr << "test database: " << what
            << "\n(the ctest fixture starts PostgreSQL with scripts/pg.sh; run tests via "
               "`make test` or start it yourself)\n";
  std::abort();
}

}  // namespace

TestDatabase::TestDatabase() {
  const char* env = std::getenv("OMNIFORGE_TEST_PG_DSN");
  admin_dsn_ = env != nullptr ? env : kDefaultAdminDsn;
  std::string suffix = core::NewUuid().substr(24);
  name_ = "omniforge_test_" + suffix;
  try {
    pqxx::connection admin(admin_dsn_);
    pqxx::nontransaction tx(admin);
    tx.exec("CREATE DATABASE " + tx.quote_name(name_));
  } catch (const std::exception& e) {
    Fail(e.what());
  }
  dsn_ = admin_dsn_;
  const auto pos = dsn_.find("dbname=");
  dsn_ = (pos == std::string::npos ? dsn_ + " " : dsn_.substr(0, pos)) + "dbname=" + name_;
  auto applied = pg::ApplyMigrations(dsn_, "conversation", pg::ConversationMigrations());
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
