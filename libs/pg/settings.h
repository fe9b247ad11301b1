// The `database.*` configuration keys every service on PostgreSQL reads.
#pragma once

#include <string>

#include "libs/core/config.h"
#include "libs/pg/pool.h"

namespace omniforge::pg {

// The local stack's database (scripts/pg.sh), logged in as `user`: a
// service's own role (omniforge_conversation, ...) or the owner, omniforge.
inline std::string LocalDsn(const std::string& user) {
  return "host=127.0.0.1 port=55432 user=" + user + " dbname=omniforge";
}

struct DatabaseSettings {
  PgOptions pool;  // dsn, pool_size, role, statement_timeout_ms
  // The role that applies migrations (the schema's owner): the dsn when not
  // set, the local stack's owner when the dsn is the local default too.
  std::string migrate_dsn;
  bool migrate_on_start = true;
};

// Reads database.dsn (default: the local stack's, as the service's own
// role `login`, when `local_by_default`; else none), database.pool_size
// (default `default_pool_size`), database.role, database.statement_timeout_ms,
// database.connect_timeout_s (5), database.keepalives_idle_s (10),
// database.tcp_user_timeout_ms (20000), database.migrate_dsn and database.migrate_on_start; bad
// values are reported by the reader's Finish().
DatabaseSettings ReadDatabaseSettings(core::ConfigReader& config, const std::string& login,
                                      bool local_by_default, int default_pool_size);

// Logs a warning for database.dsn and for database.migrate_dsn (when it
// differs) when it reaches a host off this machine without
// sslmode=verify-full (pg::UnverifiedTransportRisk says why); after logging
// is set up. Never refuses: a private network may be what the operator
// chose.
void WarnAboutUnverifiedTransport(const DatabaseSettings& settings);

}  // namespace omniforge::pg
