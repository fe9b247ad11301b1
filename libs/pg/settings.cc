#include "libs/pg/settings.h"

#include "libs/core/logging.h"
#include "libs/pg/transport.h"

namespace omniforge::pg {

DatabaseSettings ReadDatabaseSettings(core::ConfigReader& config, const std::string& login,
                                      bool local_by_default, int default_pool_size) {
  const std::string local_dsn = LocalDsn(login);
  const std::string default_dsn = local_by_default ? local_dsn : "";
  DatabaseSettings s;
  s.pool.dsn = config.String("database.dsn", default_dsn);
  s.pool.pool_size = static_cast<int>(config.Int("database.pool_size", default_pool_size, 1, 1000));
  s.pool.role = config.String("database.role", "");
  s.pool.statement_timeout_ms =
      static_cast<int>(config.Int("database.statement_timeout_ms", 10000, 100, 600000));
  s.pool.timeouts.connect_timeout_s =
      static_cast<int>(config.Int("database.connect_timeout_s", 5, 2, 300));
  s.pool.timeouts.keepalives_idle_s =
      static_cast<int>(config.Int("database.keepalives_idle_s", 10, 1, 3600));
  s.pool.timeouts.tcp_user_timeout_ms =
      static_cast<int>(config.Int("database.tcp_user_timeout_ms", 20000, 1000, 600000));
  s.migrate_dsn = config.String("database.migrate_dsn", "");
  if (s.migrate_dsn.empty()) {
    s.migrate_dsn = s.pool.dsn == local_dsn ? LocalDsn("omniforge") : s.pool.dsn;
  }
  s.migrate_on_start = config.Bool("database.migrate_on_start", true);
  return s;
}

void WarnAboutUnverifiedTransport(const DatabaseSettings& settings) {
  const std::pair<const char*, const std::string*> dsns[] = {
      {"database.dsn", &settings.pool.dsn}, {"database.migrate_dsn", &settings.migrate_dsn}};
  for (const auto& [key, dsn] : dsns) {
    if (dsn->empty()) continue;
    if (dsn == &settings.migrate_dsn && *dsn == settings.pool.dsn) continue;
    if (auto risk = UnverifiedTransportRisk(*dsn); risk.has_value()) {
      core::LogWarn("database connection not verified", {{"key", key}, {"risk", *risk}});
    }
  }
}

}  // namespace omniforge::pg
