// Envelope encryption for what users and models wrote, at rest.
//
// Each tenant has numbered data keys (XChaCha20-Poly1305, 256-bit) stored in
// a service's own `<schema>.tenant_keys` table wrapped by the service's
// master key; every encrypted value
// records the key id that sealed it, so a tenant's key can rotate while old
// rows stay readable. Associated data binds a ciphertext to its tenant and
// row: a value copied to another row or tenant fails to open.
// The master key itself can rotate: a KeyRing also knows earlier master keys
// by id, unwraps with whichever wrapped a row, always wraps new keys with the
// current one, and RewrapTenantKeys moves every row to the current one.
// Thread-safe; unwrapped keys are cached in memory.
#pragma once

#include <array>
#include <chrono>
#include <map>
#include <mutex>
#include <pqxx/pqxx>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "libs/pg/pool.h"
#include "libs/seal/keys.h"

namespace omniforge::seal {

class KeyRing final {
 public:
  // Parses a master key given as 64 hex digits or standard base64 of 32
  // bytes (surrounding whitespace ignored). INVALID_ARGUMENT otherwise.
  static absl::StatusOr<KeyBytes> ParseMasterKey(std::string_view encoded);

  // `keys_table` is the schema-qualified table of the tenant keys (such as
  // "conversation.tenant_keys"); it must be a plain `schema.table` name.
  // `active_key_ttl` bounds how long a replica keeps writing with a key after
  // another replica rotated it.
  KeyRing(pg::PgPool& pool, std::string keys_table, KeyBytes master_key, std::string master_key_id,
          std::chrono::seconds active_key_ttl = std::chrono::seconds(60),
          MasterKeys previous_master_keys = {});

  // The key new data of `tenant` is sealed with; creates key 1 on first use.
  absl::StatusOr<DataKey> ActiveKey(const std::string& tenant);

  // A key by id, read inside the caller's tenant transaction when not cached.
  // DATA_LOSS when the key is missing or was not wrapped by this master key.
  absl::StatusOr<DataKey> KeyById(pqxx::work& tx, const std::string& tenant, int key_id);

  // A key by id from the cache, or read in a transaction of its own.
  absl::StatusOr<DataKey> Key(const std::string& tenant, int key_id);

  // Creates the tenant's next key and makes it active; returns its id.
  absl::StatusOr<int> Rotate(const std::string& tenant);

  // Re-wraps every tenant key not wrapped by `master_key_id` (of every
  // tenant: `owner_pool` must connect as the schema owner, which sees them
  // all through its cross-tenant policy, or a superuser; any other role is
  // FAILED_PRECONDITION) with `master_key`, unwrapping each with the
  // previous master key its row names, in transactions of up to `batch`
  // keys. Returns how many keys were re-wrapped. FAILED_PRECONDITION naming
  // the id when a row's master key is not among `previous`; DATA_LOSS when a
  // key does not open with it. Safe to re-run; safe while services serve.
  static absl::StatusOr<int> RewrapTenantKeys(pg::PgPool& owner_pool, const std::string& keys_table,
                                              const KeyBytes& master_key,
                                              const std::string& master_key_id,
                                              const MasterKeys& previous, int batch = 500);

  // nonce || ciphertext || tag.
  static std::string Seal(const DataKey& key, std::string_view plaintext, std::string_view ad);
  // DATA_LOSS when the value was tampered with or the associated data differs.
  static absl::StatusOr<std::string> Open(const DataKey& key, std::string_view sealed,
                                          std::string_view ad);

 private:
  absl::StatusOr<DataKey> Unwrap(const std::string& tenant, int key_id,
                                 const std::string& master_key_id, const std::string& wrapped);
  absl::StatusOr<int> LatestKeyId(const std::string& tenant, bool create_next);

  pg::PgPool& pool_;
  std::string keys_table_;
  KeyBytes master_key_;
  std::string master_key_id_;
  MasterKeys previous_master_keys_;
  std::chrono::seconds active_key_ttl_;

  struct ActiveEntry {
    int key_id;
    std::chrono::steady_clock::time_point fetched;
  };
  std::mutex mu_;
  std::map<std::pair<std::string, int>, KeyBytes> keys_;
  std::map<std::string, ActiveEntry> active_;
};

}  // namespace omniforge::seal
