// The key administration logic behind KeyAdminService: checks who may
// manage which tenant's keys and what a request asks, makes secrets, and
// keeps only their hashes in the KeyStore. Knows nothing of gRPC.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/core/clock.h"
#include "services/orchestrator/keys/key_store.h"

namespace omniforge::orchestrator {

// Who calls the admin API: an admin key's name and the tenant it manages
// (core::kAllTenants: every tenant).
struct KeyAdminCaller {
  std::string name;
  std::string tenant;
};

// A key and its secret, shown once.
struct IssuedKey {
  std::string key;
  StoredKey stored;
};

// Longest grace period a rotation grants the old secret.
inline constexpr int64_t kMaxRotationGraceMicros = int64_t{30} * 24 * 3600 * 1'000'000;
// Longest label.
inline constexpr size_t kMaxKeyLabelBytes = 200;

// Thread-safe: every state is in the store.
class KeyAdmin final {
 public:
  // `is_file_key` tells whether a key id belongs to the key file (such keys
  // are managed there, not here). `store` and `clock` must outlive this.
  KeyAdmin(KeyStore& store, std::function<bool(std::string_view)> is_file_key,
           const core::Clock& clock = core::SystemClock())
      : store_(store), is_file_key_(std::move(is_file_key)), clock_(clock) {}

  // Called with a key's id once its creation, rotation or revocation is
  // stored, before the caller hears of it: the replica that made the change
  // reads the key at once (the others on PostgreSQL's notification), so a
  // key works, or stops, here as soon as the call returns.
  void OnChanged(std::function<void(const std::string& key_id)> changed) {
    changed_ = std::move(changed);
  }

  // Every operation: PERMISSION_DENIED when `caller` does not manage
  // `tenant`; INVALID_ARGUMENT for a tenant, user, key id or label that is
  // not well formed; the store's errors otherwise.

  // A new key. INVALID_ARGUMENT for a user key without a user, a gateway
  // key with one, or an expiry (`expires_micros`, 0: never) not in the future.
  absl::StatusOr<IssuedKey> Create(const KeyAdminCaller& caller, const StoredKey& request);
  absl::StatusOr<std::vector<StoredKey>> List(const KeyAdminCaller& caller,
                                              const std::string& tenant, bool include_revoked);
  // A new secret; the old one works for `grace_micros` more (0..30 days,
  // INVALID_ARGUMENT outside). FAILED_PRECONDITION for a key-file key.
  absl::StatusOr<IssuedKey> Rotate(const KeyAdminCaller& caller, const std::string& tenant,
                                   const std::string& key_id, int64_t grace_micros);
  // FAILED_PRECONDITION for a key-file key.
  absl::StatusOr<StoredKey> Revoke(const KeyAdminCaller& caller, const std::string& tenant,
                                   const std::string& key_id);

 private:
  absl::Status CheckTenant(const KeyAdminCaller& caller, const std::string& tenant) const;
  absl::Status CheckKeyId(const std::string& key_id) const;

  void Changed(const std::string& key_id) const {
    if (changed_) changed_(key_id);
  }

  KeyStore& store_;
  const std::function<bool(std::string_view)> is_file_key_;
  std::function<void(const std::string&)> changed_;
  const core::Clock& clock_;
};

}  // namespace omniforge::orchestrator
