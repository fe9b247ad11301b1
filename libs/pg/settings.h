// The `database.*` configuration keys every service on PostgreSQL reads.
#pragma once

#include <string>

#include "libs/core/config.h"
#include "libs/pg/pool.h"

namespace omniforge::pg {

// The local stack's database (scripts/pg.sh).
inline constexpr char kLocalDsn[] = "host=127.0.0.1 port=55432 user=omniforge dbname=omniforge";

struct DatabaseSettings {
  PgOptions pool;           // dsn, pool_size, role, statement_timeout_ms
  std::string migrate_dsn;  // the role that applies migrations; the dsn when not set
  bool migrate_on_start = true;
};

// Reads database.dsn (default `default_dsn`), database.pool_size (default
// `default_pool_size`), database.role, database.statement_timeout_ms,
// database.migrate_dsn and database.migrate_on_start; bad values are
// reported by the reader's Finish().
DatabaseSettings ReadDatabaseSettings(core::ConfigReader& config, const std::string& default_dsn,
                                      int default_pool_size);

}  // namespace omniforge::pg
