#include "libs/pg/settings.h"

namespace omniforge::pg {

DatabaseSettings ReadDatabaseSettings(core::ConfigReader& config, const std::string& default_dsn,
                                      int default_pool_size) {
  DatabaseSettings s;
  s.pool.dsn = config.String("database.dsn", default_dsn);
  s.pool.pool_size = static_cast<int>(config.Int("database.pool_size", default_pool_size, 1, 1000));
  s.pool.role = config.String("database.role", "omniforge_app");
  s.pool.statement_timeout_ms =
      static_cast<int>(config.Int("database.statement_timeout_ms", 10000, 100, 600000));
  s.migrate_dsn = config.String("database.migrate_dsn", "");
  if (s.migrate_dsn.empty()) s.migrate_dsn = s.pool.dsn;
  s.migrate_on_start = config.Bool("database.migrate_on_start", true);
  return s;
}

}  // namespace omniforge::pg
