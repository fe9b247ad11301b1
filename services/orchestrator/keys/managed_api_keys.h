// The API keys callers present, from both sources: the key file
// (auth.api_keys_file) and the keys managed through the admin API, which
// every replica holds in memory (ManagedApiKeys) and reads again when a key
// changes (PgKeyWatcher, storage/pg_key_store.h) and periodically.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "libs/core/api_keys.h"
#include "libs/core/clock.h"
#include "services/orchestrator/keys/key_store.h"

namespace omniforge::orchestrator {

// The managed keys as last read. Thread-safe.
class ManagedApiKeys final : public core::ApiKeys {
 public:
  explicit ManagedApiKeys(const core::Clock& clock = core::SystemClock()) : clock_(clock) {}

  // Every key, replacing what was held.
  void ReplaceAll(std::vector<KeyCredential> credentials);
  // The keys `ids` as read now: those missing from `credentials` (revoked)
  // are dropped.
  void Update(const std::vector<std::string>& ids, std::vector<KeyCredential> credentials);

  absl::StatusOr<core::Identity> Authenticate(std::string_view key) const override;
  // The current secret, or the previous one until its grace period ends;
  // then the expiry. The errors of ApiKeys::Authenticate.
  absl::StatusOr<core::KeyGrant> Grant(std::string_view key) const override;

  size_t size() const;

 private:
  const core::Clock& clock_;
  mutable absl::Mutex mu_;
  std::unordered_map<std::string, KeyCredential> keys_ ABSL_GUARDED_BY(mu_);
};

// The key file's keys first (a key id it lists is decided there), then the
// managed ones (may be null: none). Both must outlive this.
class LayeredApiKeys final : public core::ApiKeys {
 public:
  LayeredApiKeys(const core::ApiKeyFile* file, const core::ApiKeys* managed)
      : file_(file), managed_(managed) {}

  absl::StatusOr<core::Identity> Authenticate(std::string_view key) const override;
  absl::StatusOr<core::KeyGrant> Grant(std::string_view key) const override;

 private:
  const core::ApiKeyFile* file_;
  const core::ApiKeys* managed_;
};

}  // namespace omniforge::orchestrator
