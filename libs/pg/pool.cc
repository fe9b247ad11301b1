#include "libs/pg/pool.h"

#include <chrono>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "libs/core/call_deadline.h"
#include "libs/core/logging.h"

namespace omniforge::pg {

PgLease::PgLease(PgPool* pool, std::unique_ptr<pqxx::connection> conn)
    : pool_(pool), conn_(std::move(conn)) {}

PgLease::PgLease(PgLease&& other) noexcept
    : pool_(other.pool_), conn_(std::move(other.conn_)), discard_(other.discard_) {
  other.pool_ = nullptr;
}

PgLease::~PgLease() {
  if (pool_ != nullptr && conn_ != nullptr) {
    pool_->Return(std::move(conn_), discard_ || !conn_->is_open());
  }
}

absl::StatusOr<std::unique_ptr<PgPool>> PgPool::Create(PgOptions options) {
  if (options.pool_size < 1) return absl::InvalidArgumentError("database pool_size must be >= 1");
  std::unique_ptr<PgPool> pool(new PgPool(std::move(options)));
  auto conn = pool->Open();
  if (!conn.ok()) return conn.status();
  std::lock_guard lock(pool->mu_);
  pool->idle_.push_back(std::move(*conn));
  pool->open_ = 1;
  return pool;
}

absl::StatusOr<std::unique_ptr<pqxx::connection>> PgPool::Open() {
  try {
    auto conn =
        std::make_unique<pqxx::connection>(WithClientTimeouts(options_.dsn, options_.timeouts));
    pqxx::nontransaction setup(*conn);
    setup.exec("SET statement_timeout = " + std::to_string(options_.statement_timeout_ms));
    if (!options_.role.empty()) setup.exec("SET ROLE " + setup.quote_name(options_.role));
    return conn;
  } catch (const std::exception& e) {
    return ConnectionUnavailable(e);
  }
}

absl::StatusOr<PgLease> PgPool::Acquire() {
  std::unique_lock lock(mu_);
  const auto deadline = std::chrono::steady_clock::now() + options_.acquire_timeout;
  while (idle_.empty() && open_ >= options_.pool_size) {
    if (available_.wait_until(lock, deadline) == std::cv_status::timeout && idle_.empty() &&
        open_ >= options_.pool_size) {
      return absl::ResourceExhaustedError("database pool exhausted");
    }
  }
  if (!idle_.empty()) {
    auto conn = std::move(idle_.back());
    idle_.pop_back();
    return PgLease(this, std::move(conn));
  }
  ++open_;
  lock.unlock();
  auto conn = Open();
  if (!conn.ok()) {
    std::lock_guard relock(mu_);
    --open_;
    available_.notify_one();
    return conn.status();
  }
  return PgLease(this, std::move(*conn));
}

void PgPool::Return(std::unique_ptr<pqxx::connection> conn, bool discard) {
  std::lock_guard lock(mu_);
  if (discard) {
    --open_;
  } else {
    idle_.push_back(std::move(conn));
  }
  available_.notify_one();
}

absl::Status ConnectionUnavailable(const std::exception& e) {
  std::string message(absl::StripTrailingAsciiWhitespace(e.what()));
  if (absl::StrContains(message, "does not match host name")) {
    absl::StrAppend(&message,
                    " (sslmode=verify-full: host must be a name the server's certificate holds)");
  } else if (absl::StrContains(message, "certificate verify failed")) {
    absl::StrAppend(&message, " (the server's certificate is not signed by the CA in sslrootcert)");
  }
  return absl::UnavailableError(absl::StrCat("database unavailable: ", message));
}

absl::Status StatusFromException(const std::exception& e) {
  if (dynamic_cast<const pqxx::in_doubt_error*>(&e) != nullptr) {
    return absl::UnavailableError("database connection lost during commit; outcome unknown");
  }
  if (dynamic_cast<const pqxx::broken_connection*>(&e) != nullptr) {
    return absl::UnavailableError("database connection lost");
  }
  if (dynamic_cast<const pqxx::serialization_failure*>(&e) != nullptr ||
      dynamic_cast<const pqxx::deadlock_detected*>(&e) != nullptr) {
    return absl::AbortedError("database transaction conflict; retry");
  }
  if (dynamic_cast<const pqxx::integrity_constraint_violation*>(&e) != nullptr) {
    return absl::FailedPreconditionError("database constraint violated");
  }
  if (const auto* sql = dynamic_cast<const pqxx::sql_error*>(&e); sql != nullptr) {
    if (sql->sqlstate() == "57014") {
      return absl::DeadlineExceededError("database statement timed out");
    }
    // Only the first line: PostgreSQL's DETAIL and CONTEXT lines can quote
    // the data of the statement.
    const std::string what = sql->what();
    core::LogError("database error",
                   {{"sqlstate", sql->sqlstate()}, {"error", what.substr(0, what.find('\n'))}});
    return absl::InternalError("database error (sqlstate " + sql->sqlstate() + ")");
  }
  core::LogError("database error", {{"error", e.what()}});
  return absl::InternalError("database error");
}

absl::Status CheckRowLevelSecurityApplies(PgPool& pool, const std::string& schema) {
  auto lease = pool.Acquire();
  if (!lease.ok()) return lease.status();
  try {
    pqxx::nontransaction tx(lease->conn());
    // For the login (session_user) and the role statements run as.
    pqxx::result rows = tx.exec_params(
        "SELECT r.rolname, r.rolsuper OR r.rolbypassrls,"
        "       EXISTS (SELECT 1 FROM pg_tables t WHERE t.schemaname = $1"
        "               AND t.tableowner = r.rolname)"
        " FROM pg_roles r WHERE r.rolname IN (session_user, current_user)",
        schema);
    for (const pqxx::row& row : rows) {
      if (!row[1].as<bool>() && !row[2].as<bool>()) continue;
      return absl::FailedPreconditionError(
          "database role " + row[0].as<std::string>() +
          " is not subject to row-level security (superuser, BYPASSRLS or owner of schema " +
          schema +
          "); log in as the service's own role (database.dsn; deploy/postgres-roles.sql "
          "makes it)");
    }
    return absl::OkStatus();
  } catch (const std::exception& e) {
    return StatusFromException(e);
  }
}

void SetTenant(pqxx::work& tx, const std::string& tenant) {
  tx.exec_params("SELECT set_config('app.tenant_id', $1, true)", tenant);
}

absl::Status WithTenantTransaction(PgPool& pool, const std::string& tenant,
                                   const std::function<absl::Status(pqxx::work&)>& body,
                                   bool retry_on_broken) {
  for (int attempt = 0;; ++attempt) {
    // Milliseconds the call has left, when that is less than the configured
    // statement_timeout; 0 when the configured one applies.
    int64_t capped_timeout_ms = 0;
    if (const auto deadline = core::CallDeadline(); deadline.has_value()) {
      const int64_t left_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                  *deadline - std::chrono::system_clock::now())
                                  .count();
      if (left_ms <= 0) {
        return absl::DeadlineExceededError("the call's deadline passed before the database work");
      }
      if (left_ms < pool.options().statement_timeout_ms) capped_timeout_ms = left_ms;
    }
    auto lease = pool.Acquire();
    if (!lease.ok()) return lease.status();
    bool committing = false;
    try {
      pqxx::work tx(lease->conn());
      if (capped_timeout_ms > 0) {
        tx.exec_params(
            "SELECT set_config('app.tenant_id', $1, true), set_config('statement_timeout', $2, "
            "true)",
            tenant, std::to_string(capped_timeout_ms));
      } else {
        SetTenant(tx, tenant);
      }
      absl::Status status = body(tx);
      if (!status.ok()) {
        tx.abort();
        return status;
      }
      committing = true;
      tx.commit();
      return absl::OkStatus();
    } catch (const pqxx::broken_connection& e) {
      lease->Discard();
      if (committing || !retry_on_broken || attempt > 0) return StatusFromException(e);
    } catch (const std::exception& e) {
      if (!lease->conn().is_open()) lease->Discard();
      return StatusFromException(e);
    }
  }
}

}  // namespace omniforge::pg
