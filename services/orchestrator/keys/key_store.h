// API keys managed at runtime: what is stored of each (never the key, only
// its SHA-256) and the store they live in. PgKeyStore
// (storage/pg_key_store.h) keeps them in orchestration.api_keys.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/core/api_keys.h"

namespace omniforge::orchestrator {

using KeyHash = std::array<uint8_t, 32>;

// A stored key as the admin API shows it. Times are microseconds since the
// Unix epoch; 0 means unset.
struct StoredKey {
  std::string key_id;
  std::string tenant_id;
  std::string user_id;  // empty for a gateway key
  core::KeyKind kind = core::KeyKind::kUser;
  std::string label;
  int64_t created_micros = 0;
  int64_t rotated_micros = 0;
  int64_t expires_micros = 0;
  int64_t revoked_micros = 0;
  int64_t previous_valid_until_micros = 0;
};

// What authentication needs of a key that is not revoked.
struct KeyCredential {
  std::string key_id;
  core::KeyGrant grant;
  KeyHash hash{};
  int64_t expires_micros = 0;  // 0: never
  // The secret before the last rotation, valid until previous_valid_until_micros.
  std::optional<KeyHash> previous_hash;
  int64_t previous_valid_until_micros = 0;
};

// The stored keys. Admin operations work inside one tenant. Thread-safe in
// every implementation. Errors: UNAVAILABLE when storage cannot be reached.
class KeyStore {
 public:
  virtual ~KeyStore() = default;
  // Stores a new key with the hash of its secret; ALREADY_EXISTS when its
  // id is taken (by any tenant).
  virtual absl::Status Insert(const StoredKey& key, const KeyHash& hash) = 0;
  // The tenant's keys, oldest first; revoked ones only when asked.
  virtual absl::StatusOr<std::vector<StoredKey>> List(const std::string& tenant,
                                                      bool include_revoked) = 0;
  // Sets the key's hash to `hash` at `now_micros`, keeping the old one valid
  // until `previous_valid_until_micros` (0: not at all). NOT_FOUND when the
  // tenant has no such key, FAILED_PRECONDITION when it is revoked.
  virtual absl::StatusOr<StoredKey> Rotate(const std::string& tenant, const std::string& key_id,
                                           const KeyHash& hash, int64_t now_micros,
                                           int64_t previous_valid_until_micros) = 0;
  // Revokes the key at `now_micros` (a revoked key stays as it was).
  // NOT_FOUND when the tenant has no such key.
  virtual absl::StatusOr<StoredKey> Revoke(const std::string& tenant, const std::string& key_id,
                                           int64_t now_micros) = 0;
  // The credentials of the keys `ids` that are not revoked (of every such
  // key when `ids` is nullopt), across tenants.
  virtual absl::StatusOr<std::vector<KeyCredential>> Credentials(
      const std::optional<std::vector<std::string>>& ids) = 0;
};

}  // namespace omniforge::orchestrator
