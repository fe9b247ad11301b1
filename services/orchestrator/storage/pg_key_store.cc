#include "services/orchestrator/storage/pg_key_store.h"

#include <sodium.h>

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "libs/core/logging.h"
#include "libs/core/metrics.h"
#include "libs/pg/array_literal.h"

namespace omniforge::orchestrator {
namespace {

// A StoredKey's columns, in the order RowToKey reads them.
constexpr char kKeyColumns[] =
    "key_id, tenant_id, coalesce(user_id, ''), kind, label, "
    "(extract(epoch FROM created_at) * 1000000)::bigint, "
    "(extract(epoch FROM rotated_at) * 1000000)::bigint, "
    "coalesce((extract(epoch FROM expires_at) * 1000000)::bigint, 0), "
    "coalesce((extract(epoch FROM revoked_at) * 1000000)::bigint, 0), "
    "coalesce((extract(epoch FROM previous_valid_until) * 1000000)::bigint, 0)";

// $n as a timestamptz from microseconds since the epoch.
std::string At(int n) {
  return absl::StrCat("('epoch'::timestamptz + $", n, "::bigint * interval '1 microsecond')");
}

std::string Hex(const KeyHash& hash) {
  std::string hex(hash.size() * 2 + 1, '\0');
  sodium_bin2hex(hex.data(), hex.size(), hash.data(), hash.size());
  hex.pop_back();
  return hex;
}

std::optional<KeyHash> FromHex(const std::string& hex) {
  KeyHash hash{};
  size_t decoded = 0;
  if (sodium_hex2bin(hash.data(), hash.size(), hex.data(), hex.size(), nullptr, &decoded,
                     nullptr) != 0 ||
      decoded != hash.size()) {
    return std::nullopt;
  }
  return hash;
}

core::KeyKind KindOf(const std::string& kind) {
  return kind == "gateway" ? core::KeyKind::kGateway : core::KeyKind::kUser;
}

StoredKey RowToKey(const pqxx::row& row) {
  StoredKey key;
  key.key_id = row[0].as<std::string>();
  key.tenant_id = row[1].as<std::string>();
  key.user_id = row[2].as<std::string>();
  key.kind = KindOf(row[3].as<std::string>());
  key.label = row[4].as<std::string>();
  key.created_micros = row[5].as<int64_t>();
  key.rotated_micros = row[6].as<int64_t>();
  key.expires_micros = row[7].as<int64_t>();
  key.revoked_micros = row[8].as<int64_t>();
  key.previous_valid_until_micros = row[9].as<int64_t>();
  return key;
}

void Announce(pqxx::work& tx, const std::string& key_id) {
  tx.exec_params("SELECT pg_notify($1, $2)", std::string(kApiKeyChannel), key_id);
}

// NOT_FOUND or FAILED_PRECONDITION (revoked) for a key an update missed.
absl::Status Missing(pqxx::work& tx, const std::string& key_id) {
  const pqxx::result r = tx.exec_params(
      "SELECT revoked_at IS NOT NULL FROM orchestration.api_keys WHERE key_id = $1", key_id);
  if (r.empty()) return absl::NotFoundError(absl::StrCat("no key ", key_id, " in this tenant"));
  return absl::FailedPreconditionError(absl::StrCat("key ", key_id, " is revoked"));
}

class Receiver final : public pqxx::notification_receiver {
 public:
  Receiver(pqxx::connection_base& conn, std::vector<std::string>& ids)
      : pqxx::notification_receiver(conn, kApiKeyChannel), ids_(ids) {}
  void operator()(const std::string& payload, int) override { ids_.push_back(payload); }

 private:
  std::vector<std::string>& ids_;
};

}  // namespace

absl::Status PgKeyStore::Insert(const StoredKey& key, const KeyHash& hash) {
  return pg::WithTenantTransaction(pool_, key.tenant_id, [&](pqxx::work& tx) {
    const pqxx::result r = tx.exec_params(
        absl::StrCat("INSERT INTO orchestration.api_keys (key_id, tenant_id, user_id, kind, "
                     "key_hash, label, created_at, rotated_at, expires_at) VALUES ($1, $2, "
                     "nullif($3, ''), $4, decode($5, 'hex'), $6, ",
                     At(7), ", ", At(7), ", CASE WHEN $8::bigint = 0 THEN NULL ELSE ", At(8),
                     " END) ON CONFLICT (key_id) DO NOTHING"),
        key.key_id, key.tenant_id, key.user_id,
        std::string(key.kind == core::KeyKind::kGateway ? "gateway" : "user"), Hex(hash), key.label,
        key.created_micros, key.expires_micros);
    if (r.affected_rows() == 0) {
      return absl::AlreadyExistsError(absl::StrCat("key id ", key.key_id, " is taken"));
    }
    Announce(tx, key.key_id);
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<StoredKey>> PgKeyStore::List(const std::string& tenant,
                                                        bool include_revoked) {
  std::vector<StoredKey> keys;
  absl::Status status = pg::WithTenantTransaction(pool_, tenant, [&](pqxx::work& tx) {
    const pqxx::result r = tx.exec_params(
        absl::StrCat("SELECT ", kKeyColumns,
                     " FROM orchestration.api_keys WHERE tenant_id = $1 AND ($2 OR revoked_at IS "
                     "NULL) ORDER BY created_at, key_id"),
        tenant, include_revoked);
    for (const pqxx::row& row : r) keys.push_back(RowToKey(row));
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return keys;
}

absl::StatusOr<StoredKey> PgKeyStore::Rotate(const std::string& tenant, const std::string& key_id,
                                             const KeyHash& hash, int64_t now_micros,
                                             int64_t previous_valid_until_micros) {
  StoredKey key;
  absl::Status status = pg::WithTenantTransaction(pool_, tenant, [&](pqxx::work& tx) {
    const pqxx::result r = tx.exec_params(
        absl::StrCat("UPDATE orchestration.api_keys SET "
                     "previous_hash = CASE WHEN $4::bigint = 0 THEN NULL ELSE key_hash END, "
                     "previous_valid_until = CASE WHEN $4::bigint = 0 THEN NULL ELSE ",
                     At(4), " END, key_hash = decode($2, 'hex'), rotated_at = ", At(3),
                     " WHERE key_id = $1 AND revoked_at IS NULL RETURNING ", kKeyColumns),
        key_id, Hex(hash), now_micros, previous_valid_until_micros);
    if (r.empty()) return Missing(tx, key_id);
    key = RowToKey(r[0]);
    Announce(tx, key_id);
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return key;
}

absl::StatusOr<StoredKey> PgKeyStore::Revoke(const std::string& tenant, const std::string& key_id,
                                             int64_t now_micros) {
  StoredKey key;
  absl::Status status = pg::WithTenantTransaction(pool_, tenant, [&](pqxx::work& tx) {
    const pqxx::result r = tx.exec_params(
        absl::StrCat("UPDATE orchestration.api_keys SET revoked_at = coalesce(revoked_at, ", At(2),
                     "), previous_hash = NULL, previous_valid_until = NULL "
                     "WHERE key_id = $1 RETURNING ",
                     kKeyColumns),
        key_id, now_micros);
    if (r.empty()) return Missing(tx, key_id);
    key = RowToKey(r[0]);
    Announce(tx, key_id);
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return key;
}

absl::StatusOr<std::vector<KeyCredential>> PgKeyStore::Credentials(
    const std::optional<std::vector<std::string>>& ids) {
  std::optional<std::string> id_array;
  if (ids.has_value()) {
    pg::ArrayLiteral literal;
    for (const std::string& id : *ids) literal.Add(id);
    id_array = literal.Text();
  }
  std::vector<KeyCredential> out;
  try {
    absl::StatusOr<pg::PgLease> lease = pool_.Acquire();
    if (!lease.ok()) return lease.status();
    pqxx::work tx(lease->conn());
    const pqxx::result r = tx.exec_params(
        "SELECT key_id, tenant_id, coalesce(user_id, ''), kind, encode(key_hash, 'hex'), "
        "coalesce(expires_micros, 0), coalesce(encode(previous_hash, 'hex'), ''), "
        "coalesce(previous_valid_until_micros, 0) "
        "FROM orchestration.api_keys_to_authenticate($1::text[])",
        id_array);
    tx.commit();
    for (const pqxx::row& row : r) {
      KeyCredential c;
      c.key_id = row[0].as<std::string>();
      c.grant.identity = {row[1].as<std::string>(), row[2].as<std::string>()};
      c.grant.kind = KindOf(row[3].as<std::string>());
      std::optional<KeyHash> hash = FromHex(row[4].as<std::string>());
      if (!hash) continue;
      c.hash = *hash;
      c.expires_micros = row[5].as<int64_t>();
      c.previous_hash = FromHex(row[6].as<std::string>());
      c.previous_valid_until_micros = row[7].as<int64_t>();
      out.push_back(std::move(c));
    }
  } catch (const std::exception& e) {
    return pg::StatusFromException(e);
  }
  return out;
}

PgKeyWatcher::PgKeyWatcher(std::string dsn, KeyStore& store, ManagedApiKeys& keys,
                           std::chrono::milliseconds refresh)
    : dsn_(std::move(dsn)), store_(store), keys_(keys), refresh_(refresh) {
  if (absl::Status status = RefreshNow(); !status.ok()) {
    core::LogWarn("managed API keys not read; they are read again in the background",
                  {{"error", std::string(status.message())}});
  }
  listener_ = std::thread([this] { Listen(); });
  if (refresh_.count() > 0) refresher_ = std::thread([this] { Refresh(); });
}

PgKeyWatcher::~PgKeyWatcher() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  changed_.SignalAll();
  listener_.join();
  if (refresher_.joinable()) refresher_.join();
}

bool PgKeyWatcher::Stopping() {
  absl::MutexLock lock(&mu_);
  return stopping_;
}

absl::Status PgKeyWatcher::RefreshNow() {
  absl::StatusOr<std::vector<KeyCredential>> all = store_.Credentials(std::nullopt);
  if (!all.ok()) return all.status();
  keys_.ReplaceAll(*std::move(all));
  return absl::OkStatus();
}

bool PgKeyWatcher::WaitListening(std::chrono::milliseconds timeout) {
  absl::MutexLock lock(&mu_);
  const absl::Time deadline = absl::Now() + absl::FromChrono(timeout);
  while (!listening_ && !stopping_ && !changed_.WaitWithDeadline(&mu_, deadline)) {
  }
  return listening_;
}

void PgKeyWatcher::ReadChanged(const std::vector<std::string>& ids) {
  absl::StatusOr<std::vector<KeyCredential>> changed = store_.Credentials(ids);
  if (!changed.ok()) {
    core::LogWarn("changed API keys not read; the next full reading catches up",
                  {{"error", std::string(changed.status().message())}});
    return;
  }
  keys_.Update(ids, *std::move(changed));
}

void PgKeyWatcher::Refresh() {
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      const absl::Time deadline = absl::Now() + absl::FromChrono(refresh_);
      while (!stopping_ && !changed_.WaitWithDeadline(&mu_, deadline)) {
      }
      if (stopping_) return;
    }
    (void)RefreshNow();  // an error leaves the keys as they were until the next one
  }
}

void PgKeyWatcher::Listen() {
  bool warned = false;
  while (!Stopping()) {
    try {
      pqxx::connection conn(dsn_);
      std::vector<std::string> ids;
      Receiver receiver(conn, ids);
      // Notifications missed while not listening: read everything once.
      if (warned) (void)RefreshNow();
      {
        absl::MutexLock lock(&mu_);
        listening_ = true;
      }
      changed_.SignalAll();
      warned = false;
      while (!Stopping()) {
        conn.await_notification(0, 200000);  // wakes to look at stopping_
        if (ids.empty()) continue;
        ReadChanged(ids);
        ids.clear();
      }
    } catch (const std::exception& e) {
      {
        absl::MutexLock lock(&mu_);
        listening_ = false;
      }
      if (!warned) {
        core::LogWarn("API key changes cannot be listened for; keys are read every refresh",
                      {{"error", e.what()}});
        warned = true;
      }
      absl::MutexLock lock(&mu_);
      const absl::Time deadline = absl::Now() + absl::Seconds(1);
      while (!stopping_ && !changed_.WaitWithDeadline(&mu_, deadline)) {
      }
    }
  }
}

}  // namespace omniforge::orchestrator
