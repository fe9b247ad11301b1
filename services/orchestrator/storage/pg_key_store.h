// The managed API keys in orchestration.api_keys (migration 0011), and the
// watcher that keeps every replica's ManagedApiKeys current: each change is
// announced with NOTIFY on channel omniforge_api_keys, the payload the key's
// id only, and every replica LISTENs on a connection of its own and reads
// that key again, so a revoked key is refused everywhere within a second. A
// full reading every refresh interval (and after the listening connection
// is made again) covers notifications a replica missed while cut off.
// A forged notification can only make replicas read a key again.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "libs/pg/pool.h"
#include "services/orchestrator/keys/key_store.h"
#include "services/orchestrator/keys/managed_api_keys.h"

namespace omniforge::orchestrator {

// The channel key changes are announced on.
inline constexpr char kApiKeyChannel[] = "omniforge_api_keys";

class PgKeyStore final : public KeyStore {
 public:
  // `pool` logs in as the orchestrator's role and must outlive this.
  explicit PgKeyStore(pg::PgPool& pool) : pool_(pool) {}

  absl::Status Insert(const StoredKey& key, const KeyHash& hash) override;
  absl::StatusOr<std::vector<StoredKey>> List(const std::string& tenant,
                                              bool include_revoked) override;
  absl::StatusOr<StoredKey> Rotate(const std::string& tenant, const std::string& key_id,
                                   const KeyHash& hash, int64_t now_micros,
                                   int64_t previous_valid_until_micros) override;
  absl::StatusOr<StoredKey> Revoke(const std::string& tenant, const std::string& key_id,
                                   int64_t now_micros) override;
  absl::StatusOr<std::vector<KeyCredential>> Credentials(
      const std::optional<std::vector<std::string>>& ids) override;

 private:
  pg::PgPool& pool_;
};

// Keeps `keys` current from `store`: reads every key at start (Start waits
// for that first reading), then listens on `dsn` for changes. Stops when
// destroyed.
class PgKeyWatcher final {
 public:
  // `refresh`: how often every key is read again (0: only on changes and
  // RefreshNow). `store` and `keys` must outlive this.
  PgKeyWatcher(std::string dsn, KeyStore& store, ManagedApiKeys& keys,
               std::chrono::milliseconds refresh);
  ~PgKeyWatcher();
  PgKeyWatcher(const PgKeyWatcher&) = delete;
  PgKeyWatcher& operator=(const PgKeyWatcher&) = delete;

  // Reads every key now (SIGHUP); the store's error leaves the keys as they were.
  absl::Status RefreshNow();
  // Waits until the watcher listens (or `timeout` passes); false when not.
  bool WaitListening(std::chrono::milliseconds timeout);
  // Reads the keys `ids` now (notified, or changed by this replica); an
  // error is logged and left to the next full reading.
  void ReadChanged(const std::vector<std::string>& ids);

 private:
  void Listen();
  void Refresh();
  bool Stopping();

  const std::string dsn_;
  KeyStore& store_;
  ManagedApiKeys& keys_;
  const std::chrono::milliseconds refresh_;

  absl::Mutex mu_;
  absl::CondVar changed_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool listening_ ABSL_GUARDED_BY(mu_) = false;
  std::thread listener_;
  std::thread refresher_;
};

}  // namespace omniforge::orchestrator
