// A bounded pool of PostgreSQL connections, and tenant-scoped transactions
// on it.
//
// Every connection logs in as the service's own role (or switches to
// PgOptions::role when one is set), so PostgreSQL row-level security applies
// to it; a tenant transaction then sets `app.tenant_id` for its duration,
// which the policies compare against. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libs/pg/transport.h"

namespace omniforge::pg {

struct PgOptions {
  std::string dsn;
  int pool_size = 8;
  // Role assumed with SET ROLE on every connection; empty keeps the login
  // role (what the services do: each logs in as its own role).
  std::string role;
  std::chrono::milliseconds acquire_timeout{5000};
  int statement_timeout_ms = 10000;
  // Added to the dsn of every connection (transport.h).
  ClientTimeouts timeouts;
};

class PgPool;

// A connection on loan from the pool; returned on destruction.
class PgLease final {
 public:
  PgLease(PgLease&& other) noexcept;
  PgLease& operator=(PgLease&&) = delete;
  ~PgLease();

  pqxx::connection& conn() { return *conn_; }
  // Drops the connection instead of returning it (after a broken connection).
  void Discard() { discard_ = true; }

 private:
  friend class PgPool;
  PgLease(PgPool* pool, std::unique_ptr<pqxx::connection> conn);
  PgPool* pool_;
  std::unique_ptr<pqxx::connection> conn_;
  bool discard_ = false;
};

class PgPool final {
 public:
  // Opens one connection eagerly to fail fast on a bad DSN (UNAVAILABLE).
  static absl::StatusOr<std::unique_ptr<PgPool>> Create(PgOptions options);

  // Blocks until a connection is free, up to acquire_timeout
  // (RESOURCE_EXHAUSTED), opening new ones lazily (UNAVAILABLE on failure).
  absl::StatusOr<PgLease> Acquire();

  const PgOptions& options() const { return options_; }

 private:
  friend class PgLease;
  explicit PgPool(PgOptions options) : options_(std::move(options)) {}
  absl::StatusOr<std::unique_ptr<pqxx::connection>> Open();
  void Return(std::unique_ptr<pqxx::connection> conn, bool discard);

  PgOptions options_;
  std::mutex mu_;
  std::condition_variable available_;
  std::vector<std::unique_ptr<pqxx::connection>> idle_;
  int open_ = 0;
};

// Maps a libpqxx exception to a Status: broken connections are UNAVAILABLE,
// serialization failures and deadlocks ABORTED, an unknown commit outcome
// DATA_LOSS-free UNAVAILABLE, constraint violations FAILED_PRECONDITION,
// anything else INTERNAL. The SQL text is never included.
absl::Status StatusFromException(const std::exception& e);

// UNAVAILABLE for a connection libpq could not open, with libpq's message
// (it names host and port, never the password) and, when TLS verification
// refused the server, what to check: sslrootcert's CA or the host name.
absl::Status ConnectionUnavailable(const std::exception& e);

// Runs `body` in a read-write transaction with app.tenant_id set to `tenant`,
// committing when it returns OK and rolling back otherwise. A connection
// that breaks before commit is retried once on a fresh connection when
// `retry_on_broken` is true (only for bodies that are safe to repeat).
// DEADLINE_EXCEEDED, without touching the database, when the thread's call
// deadline (core::ScopedCallDeadline) has passed; while one is in scope the
// transaction's statement_timeout is capped at the time that remains (at no
// extra round trip), so the database stops work the caller stopped waiting for; DEADLINE_EXCEEDED
// too when a statement runs past it.
absl::Status WithTenantTransaction(PgPool& pool, const std::string& tenant,
                                   const std::function<absl::Status(pqxx::work&)>& body,
                                   bool retry_on_broken = true);

// FAILED_PRECONDITION when connections of `pool` would bypass row-level
// security on `schema`'s tables (a superuser, a BYPASSRLS role or the
// tables' owner), or log in as such a role and only SET ROLE away from it
// (the login could SET ROLE back: a privileged login is never the
// service's). Services call it at start and refuse to serve otherwise.
absl::Status CheckRowLevelSecurityApplies(PgPool& pool, const std::string& schema);

// Sets app.tenant_id for the rest of the transaction.
void SetTenant(pqxx::work& tx, const std::string& tenant);

}  // namespace omniforge::pg
