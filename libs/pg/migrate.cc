#include "libs/pg/migrate.h"

#include <sodium.h>

#include <algorithm>
#include <pqxx/pqxx>

#include "libs/core/logging.h"
#include "libs/pg/pool.h"

namespace omniforge::pg {
namespace {

constexpr char kLockKey[] = "omniforge-schema-migrations";

std::string Checksum(const std::string& text) {
  unsigned char hash[crypto_generichash_BYTES];
  crypto_generichash(hash, sizeof hash, reinterpret_cast<const unsigned char*>(text.data()),
                     text.size(), nullptr, 0);
  char hex[sizeof hash * 2 + 1];
  sodium_bin2hex(hex, sizeof hex, hash, sizeof hash);
  return hex;
}

}  // namespace

absl::StatusOr<int> ApplyMigrations(const std::string& dsn, const std::string& component,
                                    const std::vector<Migration>& migrations) {
  if (sodium_init() < 0) return absl::InternalError("libsodium failed to initialise");
  std::vector<const Migration*> ordered;
  ordered.reserve(migrations.size());
  for (const Migration& m : migrations) ordered.push_back(&m);
  std::sort(ordered.begin(), ordered.end(),
            [](const Migration* a, const Migration* b) { return a->version < b->version; });
  try {
    pqxx::connection conn(WithClientTimeouts(dsn, ClientTimeouts{}));
    {
      pqxx::nontransaction setup(conn);
      setup.exec_params("SELECT pg_advisory_lock(hashtext($1))", std::string(kLockKey));
      setup.exec(
          "CREATE TABLE IF NOT EXISTS public.omniforge_schema_migrations ("
          " component text NOT NULL, version integer NOT NULL, name text NOT NULL,"
          " checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now(),"
          " PRIMARY KEY (component, version))");
    }
    int applied = 0;
    for (const Migration* m : ordered) {
      pqxx::work tx(conn);
      const std::string checksum = Checksum(m->sql);
      pqxx::result existing = tx.exec_params(
          "SELECT checksum FROM public.omniforge_schema_migrations"
          " WHERE component = $1 AND version = $2",
          component, m->version);
      if (!existing.empty()) {
        if (existing[0][0].as<std::string>() != checksum) {
          return absl::FailedPreconditionError(
              "migration " + component + "/" + m->name +
              " was changed after it was applied; add a new migration instead");
        }
        continue;
      }
      tx.exec(m->sql);
      tx.exec_params(
          "INSERT INTO public.omniforge_schema_migrations (component, version, name, checksum)"
          " VALUES ($1, $2, $3, $4)",
          component, m->version, m->name, checksum);
      tx.commit();
      ++applied;
      core::LogInfo("migration applied", {{"component", component}, {"name", m->name}});
    }
    pqxx::nontransaction unlock(conn);
    unlock.exec_params("SELECT pg_advisory_unlock(hashtext($1))", std::string(kLockKey));
    return applied;
  } catch (const pqxx::broken_connection& e) {
    return ConnectionUnavailable(e);
  } catch (const pqxx::sql_error& e) {
    return absl::InternalError("migration failed: " + std::string(e.what()));
  } catch (const std::exception& e) {
    return StatusFromException(e);
  }
}

}  // namespace omniforge::pg
