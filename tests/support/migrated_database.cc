#include "tests/support/migrated_database.h"

#include <cstdlib>
#include <iostream>

namespace omniforge::testing {

MigratedDatabase::MigratedDatabase(const std::string& component,
                                   const std::vector<pg::Migration>& migrations, int pool_size) {
  absl::StatusOr<int> applied = pg::ApplyMigrations(db_.owner_dsn(), component, migrations);
  if (!applied.ok()) {
    std::cerr << "test database: the " << component << " migrations failed: " << applied.status()
              << "\n";
    std::abort();
  }
  pg::PgOptions options;
  options.dsn = db_.service_dsn(component);
  options.pool_size = pool_size;
  absl::StatusOr<std::unique_ptr<pg::PgPool>> made = pg::PgPool::Create(options);
  if (!made.ok()) {
    std::cerr << "test database: no pool: " << made.status() << "\n";
    std::abort();
  }
  pool_ = *std::move(made);
}

}  // namespace omniforge::testing
