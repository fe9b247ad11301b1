#include "services/executor/src/pg_invocation_ledger.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "libs/core/logging.h"
#include "libs/seal/sealed_text.h"

namespace omniforge::executor {
namespace {

// A claim without a deadline still expires, so a crashed call's key frees up.
constexpr auto kMaxLease = std::chrono::hours(1);

std::string LeaseMicros(std::chrono::system_clock::time_point lease_until) {
  const auto now = std::chrono::system_clock::now();
  lease_until = std::min(lease_until, now + kMaxLease);
  return std::to_string(
      std::chrono::duration_cast<std::chrono::microseconds>(lease_until.time_since_epoch())
          .count());
}

constexpr char kInvocations[] = "platform.tool_invocations";

// A record's row in the sealed result's associated data.
std::string RecordRow(const InvocationKey& key) {
  return key.who.user_id + "/" + key.idempotency_key;
}

}  // namespace

absl::StatusOr<std::optional<RecordedResult>> PgInvocationLedger::Claim(
    const InvocationKey& key, std::chrono::system_clock::time_point lease_until) {
  std::optional<RecordedResult> recorded;
  const std::string lease = LeaseMicros(lease_until);
  absl::Status status =
      pg::WithTenantTransaction(pool_, key.who.tenant_id, [&](pqxx::work& tx) -> absl::Status {
        // A concurrent claim of the same key makes this insert wait for that
        // transaction, so at most one call holds the key.
        pqxx::result inserted = tx.exec_params(
            "INSERT INTO platform.tool_invocations (tenant_id, user_id, idempotency_key, "
            "tool_name, arguments_hash, status, lease_until) VALUES ($1, $2, $3, $4, $5, "
            "'running', 'epoch'::timestamptz + $6::bigint * interval '1 microsecond') "
            "ON CONFLICT DO NOTHING RETURNING 1",
            key.who.tenant_id, key.who.user_id, key.idempotency_key, key.tool_name,
            key.arguments_hash, lease);
        if (!inserted.empty()) return absl::OkStatus();
        pqxx::result row = tx.exec_params(
            "SELECT tool_name, arguments_hash, status, lease_until < now(), result, is_error, "
            "truncated, duration_us FROM platform.tool_invocations "
            "WHERE tenant_id = $1 AND user_id = $2 AND idempotency_key = $3 FOR UPDATE",
            key.who.tenant_id, key.who.user_id, key.idempotency_key);
        if (row.empty()) return absl::AbortedError("idempotency_key: claim raced; retry");
        const auto& r = row[0];
        if (r[0].as<std::string>() != key.tool_name ||
            r[1].as<std::string>() != key.arguments_hash) {
          return absl::FailedPreconditionError(
              absl::StrCat("idempotency_key: already used for a call of ", r[0].as<std::string>(),
                           " with other arguments; use a new key for a new call"));
        }
        if (r[2].as<std::string>() == "done") {
          seal::RowOpener open(keys_, tx, kInvocations, key.who.tenant_id, RecordRow(key));
          recorded = RecordedResult{open.Text("result", r[4].is_null() ? "" : r[4].c_str()),
                                    r[5].as<bool>(), r[6].as<bool>(), r[7].as<int64_t>()};
          return open.status();
        }
        if (!r[3].as<bool>()) {
          return absl::AbortedError(
              "idempotency_key: a call with this key is still running; retry after it ends");
        }
        // The earlier call died holding the key: this one takes it over.
        tx.exec_params(
            "UPDATE platform.tool_invocations SET lease_until = 'epoch'::timestamptz + "
            "$4::bigint * interval '1 microsecond' "
            "WHERE tenant_id = $1 AND user_id = $2 AND idempotency_key = $3",
            key.who.tenant_id, key.who.user_id, key.idempotency_key, lease);
        return absl::OkStatus();
      });
  if (!status.ok()) return status;
  return recorded;
}

absl::Status PgInvocationLedger::Complete(const InvocationKey& key, const RecordedResult& result) {
  auto data_key = keys_.ActiveKey(key.who.tenant_id);
  if (!data_key.ok()) return data_key.status();
  const std::string sealed =
      seal::RowSealer(*data_key, kInvocations, key.who.tenant_id, RecordRow(key))
          .Text("result", result.json);
  return pg::WithTenantTransaction(pool_, key.who.tenant_id, [&](pqxx::work& tx) {
    tx.exec_params(
        "UPDATE platform.tool_invocations SET status = 'done', result = $4, is_error = $5, "
        "truncated = $6, duration_us = $7, completed_at = now() "
        "WHERE tenant_id = $1 AND user_id = $2 AND idempotency_key = $3",
        key.who.tenant_id, key.who.user_id, key.idempotency_key, sealed, result.is_error,
        result.truncated, result.duration_us);
    return absl::OkStatus();
  });
}

absl::Status PgInvocationLedger::Release(const InvocationKey& key) {
  return pg::WithTenantTransaction(pool_, key.who.tenant_id, [&](pqxx::work& tx) {
    tx.exec_params(
        "DELETE FROM platform.tool_invocations "
        "WHERE tenant_id = $1 AND user_id = $2 AND idempotency_key = $3 AND status = 'running'",
        key.who.tenant_id, key.who.user_id, key.idempotency_key);
    return absl::OkStatus();
  });
}

absl::StatusOr<int64_t> PurgeInvocations(pg::PgPool& pool,
                                         std::chrono::system_clock::time_point before, int limit) {
  auto lease = pool.Acquire();
  if (!lease.ok()) return lease.status();
  try {
    pqxx::nontransaction tx(lease->conn());
    return tx
        .exec_params1(
            "SELECT platform.purge_tool_invocations('epoch'::timestamptz + $1::bigint * "
            "interval '1 microsecond', $2)",
            std::to_string(
                std::chrono::duration_cast<std::chrono::microseconds>(before.time_since_epoch())
                    .count()),
            limit)[0]
        .as<int64_t>();
  } catch (const std::exception& e) {
    if (!lease->conn().is_open()) lease->Discard();
    return pg::StatusFromException(e);
  }
}

InvocationPurger::InvocationPurger(pg::PgPool& pool, std::chrono::seconds retention,
                                   std::chrono::seconds interval)
    : pool_(pool), retention_(retention), interval_(interval), thread_([this] { Run(); }) {}

InvocationPurger::~InvocationPurger() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void InvocationPurger::Run() {
  constexpr int kBatch = 1000;
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    int64_t total = 0;
    for (;;) {
      auto purged = PurgeInvocations(pool_, std::chrono::system_clock::now() - retention_, kBatch);
      if (!purged.ok()) {
        core::LogWarn("idempotency record purge failed",
                      {{"error", std::string(purged.status().message())}});
        break;
      }
      total += *purged;
      if (*purged < kBatch) break;
    }
    if (total > 0) core::LogInfo("idempotency records purged", {{"count", std::to_string(total)}});
    lock.lock();
    wake_.wait_for(lock, interval_, [this] { return stopping_; });
  }
}

}  // namespace omniforge::executor
