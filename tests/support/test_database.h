// A fresh, migrated database per test program on the test PostgreSQL cluster
// (started by the ctest fixture through scripts/pg.sh on 127.0.0.1 at the
// port chosen at configure time, OMNIFORGE_TEST_PG_PORT, 55433 by default).
//
// The admin connection string comes from OMNIFORGE_TEST_PG_DSN when set.
#pragma once

#include <string>
#include <vector>

namespace omniforge::testing {

class TestDatabase final {
 public:
  // Creates database `omniforge_test_<random>`, owned by role
  // omniforge_test_owner (not a superuser, as the owner is in a deployment:
  // row-level security binds it), and applies the conversation migrations
  // to it as that owner. Aborts the test program when the cluster is
  // unreachable.
  TestDatabase();
  // The same on the cluster `admin_dsn` reaches as a superuser. Its dbname,
  // when it has one, comes last: the test database's connection strings
  // keep what precedes it (e.g. sslmode) and name the new database instead.
  explicit TestDatabase(std::string admin_dsn);
  ~TestDatabase();
  TestDatabase(const TestDatabase&) = delete;
  TestDatabase& operator=(const TestDatabase&) = delete;

  // Connection string for the new database, as the cluster's superuser.
  const std::string& dsn() const { return dsn_; }
  // The same, as the database's owner (what migrations run as).
  const std::string& owner_dsn() const { return owner_dsn_; }
  // The same, as `service`'s own role, omniforge_<service> (conversation,
  // executor, orchestrator or sandbox): what the service logs in as.
  std::string service_dsn(const std::string& service) const;
  const std::string& name() const { return name_; }

 private:
  std::string admin_dsn_;
  std::string name_;
  std::string dsn_;
  std::string owner_dsn_;
};

// The environment of service process `service` on `db`: its database.dsn
// logs in as its own role, its database.migrate_dsn as the owner; then
// `more`.
std::vector<std::string> DatabaseEnv(const TestDatabase& db, const std::string& service,
                                     const std::vector<std::string>& more = {});

}  // namespace omniforge::testing
