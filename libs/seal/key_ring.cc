#include "libs/seal/key_ring.h"

#include <sodium.h>

#include <cctype>
#include <regex>
#include <stdexcept>

#include "absl/strings/str_cat.h"

namespace omniforge::seal {
namespace {

constexpr size_t kNonceBytes = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES;
constexpr size_t kTagBytes = crypto_aead_xchacha20poly1305_ietf_ABYTES;

std::string WrapAd(const std::string& tenant, int key_id) {
  return "omniforge-tenant-key|" + tenant + "|" + std::to_string(key_id);
}

absl::StatusOr<DataKey> UnwrapWith(const KeyBytes& master, const std::string& master_key_id,
                                   const std::string& tenant, int key_id,
                                   const std::string& wrapped) {
  auto raw = KeyRing::Open(DataKey{0, master}, wrapped, WrapAd(tenant, key_id));
  if (!raw.ok() || raw->size() != sizeof(KeyBytes)) {
    return absl::DataLossError("tenant key " + std::to_string(key_id) +
                               " cannot be unwrapped with master key '" + master_key_id +
                               "' (wrong key for that id?)");
  }
  DataKey key{key_id, {}};
  std::copy(raw->begin(), raw->end(), key.bytes.begin());
  sodium_memzero(raw->data(), raw->size());
  return key;
}

// The table name is spliced into statements: only `schema.table` of
// lower-case letters, digits and underscores is accepted.
std::string CheckedTableName(std::string name) {
  static const std::regex kPlain("[a-z_][a-z0-9_]*\\.[a-z_][a-z0-9_]*");
  if (!std::regex_match(name, kPlain)) {
    throw std::invalid_argument("KeyRing: not a plain schema.table name: " + name);
  }
  return name;
}

}  // namespace

absl::StatusOr<KeyBytes> KeyRing::ParseMasterKey(std::string_view encoded) {
  if (sodium_init() < 0) return absl::InternalError("libsodium failed to initialise");
  while (!encoded.empty() && std::isspace(static_cast<unsigned char>(encoded.front()))) {
    encoded.remove_prefix(1);
  }
  while (!encoded.empty() && std::isspace(static_cast<unsigned char>(encoded.back()))) {
    encoded.remove_suffix(1);
  }
  KeyBytes key{};
  size_t length = 0;
  const std::string text(encoded);
  if (text.size() == 64 &&
      sodium_hex2bin(key.data(), key.size(), text.c_str(), text.size(), nullptr, &length,
                     nullptr) == 0 &&
      length == key.size()) {
    return key;
  }
  if (sodium_base642bin(key.data(), key.size(), text.c_str(), text.size(), nullptr, &length,
                        nullptr, sodium_base64_VARIANT_ORIGINAL) == 0 &&
      length == key.size()) {
    return key;
  }
  return absl::InvalidArgumentError(
      "the master key must be 32 bytes, written as 64 hex digits or base64");
}

KeyRing::KeyRing(pg::PgPool& pool, std::string keys_table, KeyBytes master_key,
                 std::string master_key_id, std::chrono::seconds active_key_ttl,
                 MasterKeys previous_master_keys)
    : pool_(pool),
      keys_table_(CheckedTableName(std::move(keys_table))),
      master_key_(master_key),
      master_key_id_(std::move(master_key_id)),
      previous_master_keys_(std::move(previous_master_keys)),
      active_key_ttl_(active_key_ttl) {}

std::string KeyRing::Seal(const DataKey& key, std::string_view plaintext, std::string_view ad) {
  std::string out(kNonceBytes + plaintext.size() + kTagBytes, '\0');
  auto* nonce = reinterpret_cast<unsigned char*>(out.data());
  randombytes_buf(nonce, kNonceBytes);
  unsigned long long written = 0;
  crypto_aead_xchacha20poly1305_ietf_encrypt(
      nonce + kNonceBytes, &written, reinterpret_cast<const unsigned char*>(plaintext.data()),
      plaintext.size(), reinterpret_cast<const unsigned char*>(ad.data()), ad.size(), nullptr,
      nonce, key.bytes.data());
  out.resize(kNonceBytes + written);
  return out;
}

absl::StatusOr<std::string> KeyRing::Open(const DataKey& key, std::string_view sealed,
                                          std::string_view ad) {
  if (sealed.size() < kNonceBytes + kTagBytes) {
    return absl::DataLossError("encrypted value is truncated");
  }
  const auto* nonce = reinterpret_cast<const unsigned char*>(sealed.data());
  std::string out(sealed.size() - kNonceBytes - kTagBytes, '\0');
  unsigned long long written = 0;
  if (crypto_aead_xchacha20poly1305_ietf_decrypt(
          reinterpret_cast<unsigned char*>(out.data()), &written, nullptr, nonce + kNonceBytes,
          sealed.size() - kNonceBytes, reinterpret_cast<const unsigned char*>(ad.data()), ad.size(),
          nonce, key.bytes.data()) != 0) {
    return absl::DataLossError("encrypted value failed authentication");
  }
  out.resize(written);
  return out;
}

absl::StatusOr<DataKey> KeyRing::Unwrap(const std::string& tenant, int key_id,
                                        const std::string& master_key_id,
                                        const std::string& wrapped) {
  const KeyBytes* master = nullptr;
  if (master_key_id == master_key_id_) {
    master = &master_key_;
  } else if (auto it = previous_master_keys_.find(master_key_id);
             it != previous_master_keys_.end()) {
    master = &it->second;
  } else {
    return absl::DataLossError("tenant key " + std::to_string(key_id) +
                               " is wrapped by master key '" + master_key_id +
                               "', which is not configured");
  }
  auto key = UnwrapWith(*master, master_key_id, tenant, key_id, wrapped);
  if (!key.ok()) return key.status();
  std::lock_guard lock(mu_);
  keys_[{tenant, key_id}] = key->bytes;
  return key;
}

absl::StatusOr<int> KeyRing::LatestKeyId(const std::string& tenant, bool create_next) {
  int key_id = 0;
  absl::Status status = pg::WithTenantTransaction(pool_, tenant, [&](pqxx::work& tx) {
    // Serialises key creation for this tenant across replicas (and services:
    // the key is the one the conversation service has always taken).
    tx.exec_params("SELECT pg_advisory_xact_lock(hashtext('omniforge-tenant-key:' || $1))", tenant);
    pqxx::row latest = tx.exec_params1(
        "SELECT COALESCE(max(key_id), 0) FROM " + keys_table_ + " WHERE tenant_id = $1", tenant);
    key_id = latest[0].as<int>();
    if (key_id > 0 && !create_next) return absl::OkStatus();
    ++key_id;
    DataKey fresh{key_id, {}};
    randombytes_buf(fresh.bytes.data(), fresh.bytes.size());
    const std::string raw(reinterpret_cast<const char*>(fresh.bytes.data()), fresh.bytes.size());
    const std::string wrapped = Seal(DataKey{0, master_key_}, raw, WrapAd(tenant, key_id));
    tx.exec_params("INSERT INTO " + keys_table_ +
                       " (tenant_id, key_id, master_key_id, wrapped_key) VALUES ($1, $2, $3, $4)",
                   tenant, key_id, master_key_id_, pqxx::binarystring(wrapped));
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  std::lock_guard lock(mu_);
  active_[tenant] = ActiveEntry{key_id, std::chrono::steady_clock::now()};
  return key_id;
}

absl::StatusOr<DataKey> KeyRing::ActiveKey(const std::string& tenant) {
  int key_id = 0;
  {
    std::lock_guard lock(mu_);
    if (auto it = active_.find(tenant);
        it != active_.end() &&
        std::chrono::steady_clock::now() - it->second.fetched < active_key_ttl_) {
      key_id = it->second.key_id;
      if (auto k = keys_.find({tenant, key_id}); k != keys_.end())
        return DataKey{key_id, k->second};
    }
  }
  if (key_id == 0) {
    auto latest = LatestKeyId(tenant, /*create_next=*/false);
    if (!latest.ok()) return latest.status();
    key_id = *latest;
  }
  return Key(tenant, key_id);
}

absl::StatusOr<DataKey> KeyRing::Key(const std::string& tenant, int key_id) {
  {
    std::lock_guard lock(mu_);
    if (auto it = keys_.find({tenant, key_id}); it != keys_.end())
      return DataKey{key_id, it->second};
  }
  absl::StatusOr<DataKey> key;
  absl::Status status = pg::WithTenantTransaction(pool_, tenant, [&](pqxx::work& tx) {
    key = KeyById(tx, tenant, key_id);
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return key;
}

absl::StatusOr<DataKey> KeyRing::KeyById(pqxx::work& tx, const std::string& tenant, int key_id) {
  {
    std::lock_guard lock(mu_);
    if (auto it = keys_.find({tenant, key_id}); it != keys_.end())
      return DataKey{key_id, it->second};
  }
  pqxx::result row = tx.exec_params("SELECT master_key_id, wrapped_key FROM " + keys_table_ +
                                        " WHERE tenant_id = $1 AND key_id = $2",
                                    tenant, key_id);
  if (row.empty()) {
    return absl::DataLossError("tenant key " + std::to_string(key_id) + " is missing");
  }
  return Unwrap(tenant, key_id, row[0][0].as<std::string>(), pqxx::binarystring(row[0][1]).str());
}

absl::StatusOr<int> KeyRing::RewrapTenantKeys(pg::PgPool& owner_pool,
                                              const std::string& keys_table_name,
                                              const KeyBytes& master_key,
                                              const std::string& master_key_id,
                                              const MasterKeys& previous, int batch) {
  const std::string keys_table = CheckedTableName(keys_table_name);
  int rewrapped = 0;
  for (;;) {
    int in_batch = 0;
    absl::Status failure;
    auto lease = owner_pool.Acquire();
    if (!lease.ok()) return lease.status();
    try {
      pqxx::work tx(lease->conn());
      // Every tenant's keys: the owner's cross-tenant policy, for this
      // transaction only. Any other role would see none of them.
      pqxx::result owner = tx.exec_params(
          "SELECT pg_has_role(current_user, c.relowner, 'USAGE') OR r.rolsuper OR r.rolbypassrls"
          " FROM pg_class c, pg_roles r WHERE c.oid = $1::regclass"
          " AND r.rolname = current_user",
          keys_table);
      if (!owner[0][0].as<bool>()) {
        return absl::FailedPreconditionError(
            "re-wrapping the tenant keys needs the schema's owner (database.migrate_dsn)");
      }
      tx.exec("SET LOCAL omniforge.cross_tenant = 'on'");
      pqxx::result rows = tx.exec_params(
          "SELECT tenant_id, key_id, master_key_id, wrapped_key FROM " + keys_table +
              " WHERE master_key_id <> $1 ORDER BY tenant_id, key_id LIMIT $2 FOR UPDATE",
          master_key_id, batch);
      for (const pqxx::row& row : rows) {
        const std::string tenant = row[0].as<std::string>();
        const int key_id = row[1].as<int>();
        const std::string old_id = row[2].as<std::string>();
        auto old_master = previous.find(old_id);
        if (old_master == previous.end()) {
          failure = absl::FailedPreconditionError(absl::StrCat(
              "tenant key ", key_id, " of tenant ", tenant, " is wrapped by master key '", old_id,
              "', which is not configured as a previous key"));
          break;
        }
        auto key = UnwrapWith(old_master->second, old_id, tenant, key_id,
                              pqxx::binarystring(row[3]).str());
        if (!key.ok()) {
          failure = key.status();
          break;
        }
        const std::string raw(reinterpret_cast<const char*>(key->bytes.data()), key->bytes.size());
        std::string raw_copy = raw;
        const std::string wrapped = Seal(DataKey{0, master_key}, raw_copy, WrapAd(tenant, key_id));
        sodium_memzero(raw_copy.data(), raw_copy.size());
        tx.exec_params(
            "UPDATE " + keys_table +
                " SET master_key_id = $3, wrapped_key = $4 WHERE tenant_id = $1 AND key_id = $2",
            tenant, key_id, master_key_id, pqxx::binarystring(wrapped));
        ++in_batch;
      }
      if (!failure.ok()) {
        tx.abort();
        return failure;
      }
      tx.commit();
    } catch (const std::exception& e) {
      return pg::StatusFromException(e);
    }
    rewrapped += in_batch;
    if (in_batch < batch) return rewrapped;
  }
}

absl::StatusOr<int> KeyRing::Rotate(const std::string& tenant) {
  return LatestKeyId(tenant, /*create_next=*/true);
}

}  // namespace omniforge::seal
