// A database of the test cluster (TestDatabase) with one component's
// migrations applied and a pool on it, as that component's storage uses it:
// what the PostgreSQL tests of a store start from. SharedDatabase is one
// such database for all the suites of a test program.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "libs/pg/migrate.h"
#include "libs/pg/pool.h"
#include "tests/support/test_database.h"

namespace omniforge::testing {

class MigratedDatabase final {
 public:
  // Creates the database, applies `migrations` as `component`'s (as the
  // database's owner, TestDatabase::owner_dsn) and opens a
  // pool of `pool_size` connections. Aborts the test program when the
  // cluster is unreachable, a migration fails or no pool can be made.
  MigratedDatabase(const std::string& component, const std::vector<pg::Migration>& migrations,
                   int pool_size = pg::PgOptions().pool_size);

  // As the cluster's superuser (the tests' own statements).
  const std::string& dsn() const { return db_.dsn(); }
  const std::string& owner_dsn() const { return db_.owner_dsn(); }
  const TestDatabase& database() const { return db_; }
  // Logged in as `component`'s own role (omniforge_<component>);
  // valid while this object lives; thread-safe like any PgPool.
  pg::PgPool& pool() { return *pool_; }

 private:
  TestDatabase db_;
  std::unique_ptr<pg::PgPool> pool_;
};

// One MigratedDatabase for a whole test program: made when a test first asks
// for it, dropped when the program's tests are over (a gtest environment).
// Declared once per program, at namespace scope:
//
//   testing::SharedDatabase* const kDatabase =
//       testing::SharedDatabase::Register("orchestrator", &pg::OrchestratorMigrations);
class SharedDatabase final : public ::testing::Environment {
 public:
  using Migrations = const std::vector<pg::Migration>& (*)();

  // The environment, owned by gtest.
  static SharedDatabase* Register(std::string component, Migrations migrations) {
    return static_cast<SharedDatabase*>(
        ::testing::AddGlobalTestEnvironment(new SharedDatabase(std::move(component), migrations)));
  }

  MigratedDatabase& Get() {
    if (db_ == nullptr) db_ = std::make_unique<MigratedDatabase>(component_, migrations_());
    return *db_;
  }
  pg::PgPool& pool() { return Get().pool(); }
  const std::string& dsn() { return Get().dsn(); }

  void TearDown() override { db_.reset(); }

 private:
  SharedDatabase(std::string component, Migrations migrations)
      : component_(std::move(component)), migrations_(migrations) {}

  const std::string component_;
  const Migrations migrations_;
  std::unique_ptr<MigratedDatabase> db_;
};

}  // namespace omniforge::testing
