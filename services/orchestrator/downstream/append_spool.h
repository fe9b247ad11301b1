// Messages of a turn outlive an outage of conversation storage: an append
// that cannot reach the conversation service (UNAVAILABLE,
// DEADLINE_EXCEEDED) is written to an append-only file and fsynced before
// the turn goes on, and a background drainer stores it once the service
// takes calls again, oldest first per conversation. Every spooled append
// carries an idempotency key, so a retry of an append that did land (a
// deadline that passed after the commit) stores nothing twice. What one
// process left in the spool is drained by the next one started on the same
// directory.
//
// The file is a sequence of records [u32 payload length][u32 CRC-32 of the
// payload][payload]; a payload is the record's number, the identity, the id
// of the master key the message is sealed under and the sealed, serialized
// AppendMessageRequest (XChaCha20-Poly1305 with a key derived from that
// master key; a spool without master keys writes the message in the clear,
// without the key id). A record cut short by a crash was never
// acknowledged (the fsync did not return), so reopening drops it. Stored
// records leave the file when the drainer rewrites it (write, fsync, rename).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "libs/core/identity.h"
#include "libs/core/timed_mutex.h"
#include "libs/seal/master_keys.h"
#include "services/orchestrator/downstream/downstream.h"

namespace omniforge::orchestrator {

struct AppendSpoolOptions {
  // Holds the spool file (appends.log) and its lock; created if missing.
  std::filesystem::path dir;
  // The spool file's size limit; an append that does not fit is refused.
  int64_t max_bytes = 64LL << 20;
  // Upper bound of each call the drainer makes.
  std::chrono::milliseconds call_timeout{10000};
  // The drainer's wait after a pass that stored nothing: doubles from
  // min_backoff up to max_backoff, back to min_backoff once storage takes a
  // message.
  std::chrono::milliseconds min_backoff{200};
  std::chrono::milliseconds max_backoff{30000};
  // The service's master keys: messages are sealed under the current one
  // (with a key derived for the spool) and records sealed under an earlier
  // one still open. Without, messages are written in the clear.
  std::optional<seal::MasterKeySet> master_keys;
};

// True for the statuses that mean "conversation storage cannot be reached
// now" (UNAVAILABLE, DEADLINE_EXCEEDED): the ones worth spooling and retrying.
bool IsStorageUnreachable(const absl::Status& status);

class AppendSpool final {
 public:
  // Opens the spool in `options.dir` for appends to `memory` (which must
  // outlive it) and reads what an earlier process left there, dropping a
  // record cut short by a crash and skipping a damaged one. FAILED_PRECONDITION when another
  // process holds the directory; INTERNAL when it cannot be read or written.
  static absl::StatusOr<std::unique_ptr<AppendSpool>> Open(Memory& memory,
                                                           AppendSpoolOptions options);
  // Stops the drainer; what is still spooled stays in the file.
  ~AppendSpool();
  AppendSpool(const AppendSpool&) = delete;
  AppendSpool& operator=(const AppendSpool&) = delete;

  // Stores `request` (given an idempotency key when it has none) for
  // `call.who` by `call.deadline`. Returns the stored message, or nullopt when it waits in
  // the spool because storage could not be reached. While a conversation has
  // spooled messages, its new ones queue behind them (they are tried right
  // away, in order), so the conversation keeps the order they were written
  // in. Errors: the conversation service's own (INVALID_ARGUMENT,
  // NOT_FOUND, ...); RESOURCE_EXHAUSTED when storage is unreachable and the
  // spool is full; INTERNAL when the spool file cannot be written.
  // Thread-safe.
  absl::StatusOr<std::optional<convpb::AppendMessageResponse>> Append(
      const core::Call& call, const convpb::AppendMessageRequest& request);

  // Starts the background drainer (at once when something is spooled).
  void StartDrainer();
  // One pass over the spool: each conversation's messages, oldest first, in
  // batches of up to 256 messages per call, until storage cannot be reached. A message storage
  // refuses for good (its conversation is gone, ...) is dropped and logged. Returns how many left
  // the spool.
  size_t DrainOnce();

  // Messages waiting in the spool.
  size_t depth() const;
  // The spool file's size in bytes.
  int64_t file_bytes() const;

 private:
  struct Entry {
    uint64_t number = 0;
    core::Identity who;
    convpb::AppendMessageRequest request;
    int64_t record_bytes = 0;
  };

  AppendSpool(Memory& memory, AppendSpoolOptions options);
  // Reads the file: every sound record is kept. A damaged record in the
  // middle is skipped (logged and counted) and the records after it kept;
  // a record cut short at the end (a crash mid-write) is dropped.
  absl::Status Recover();
  // The record starting at `pos` of `data`, when a whole and sound one does
  // (nullopt otherwise); errors as OpenMessage's.
  absl::StatusOr<std::optional<Entry>> RecordAt(const std::string& data, size_t pos) const;
  // The record of a message (append_spool_record.h), sealed when the spool
  // has keys.
  std::string EncodedRecord(uint64_t number, const core::Identity& who,
                            const convpb::AppendMessageRequest& request) const;
  // A recovered record's serialized message, sealed under master key
  // `key_id`. FAILED_PRECONDITION when that key is not configured;
  // DATA_LOSS when it does not open.
  absl::StatusOr<std::string> OpenMessage(uint64_t number, const core::Identity& who,
                                          const std::string& key_id,
                                          const std::string& sealed) const;
  // Keys derived for the spool from the master keys, by master key id.
  std::map<std::string, seal::DataKey> spool_keys_;
  // Writes and fsyncs `entry`'s record; RESOURCE_EXHAUSTED when it does not
  // fit.
  absl::Status WriteLocked(Entry& entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sends the oldest spooled messages of `keys` (conversations of one
  // caller), oldest first per conversation, in one AppendMessages call of up
  // to 256 messages and removes those stored or refused for good.
  // `unreachable` is set when storage could not be reached (or `deadline`
  // has passed). Returns the response to message `wanted`, if it was
  // stored. Requires drain_mu_.
  std::optional<convpb::AppendMessageResponse> DrainBatchLocked(
      const std::vector<std::string>& keys, core::TimePoint deadline, uint64_t wanted,
      size_t& removed, bool& unreachable);
  // Sends `key`'s spooled messages in batches until none is left or storage
  // cannot be reached (or `deadline` passes; TimePoint::max(): none).
  // Returns the response to message `wanted`, if it was stored. Requires
  // drain_mu_.
  std::optional<convpb::AppendMessageResponse> DrainConversationLocked(const std::string& key,
                                                                       core::TimePoint deadline,
                                                                       uint64_t wanted,
                                                                       size_t& removed,
                                                                       bool& unreachable);
  // Rewrites the file with the entries still spooled.
  absl::Status CompactLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UpdateGaugesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DrainLoop() ABSL_LOCKS_EXCLUDED(mu_);

  Memory& memory_;
  const AppendSpoolOptions options_;
  const std::filesystem::path path_;
  int lock_fd_ = -1;

  // One drain at a time, so a conversation's messages are sent in order.
  // The background pass takes it per batch and lets turns waiting for it
  // (turns_waiting_) go first.
  core::TimedMutex drain_mu_;
  std::atomic<int> turns_waiting_{0};

  mutable absl::Mutex mu_;
  int fd_ ABSL_GUARDED_BY(mu_) = -1;
  int64_t file_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_number_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<uint64_t, Entry> entries_ ABSL_GUARDED_BY(mu_);
  // Entry numbers per conversation (tenant, user, conversation id), oldest
  // first.
  std::map<std::string, std::deque<uint64_t>> queues_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::CondVar wake_;
  std::thread drainer_;
};

}  // namespace omniforge::orchestrator
