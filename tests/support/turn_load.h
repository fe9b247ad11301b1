// Load on the public chat API for the fault-injection test and the soak
// bench: client threads sending turns with turn_ids to conversations of
// their own, each turn retried with the same turn_id until it is
// acknowledged, and the storage read back to count what was lost,
// duplicated or reordered among the acknowledged turns.
//   - acknowledged: the stream ended with status OK and its last event was
//     `done` (docs/api.md: an RPC error means nothing was stored; a turn
//     answered while storage was out of reach is stored from the spool);
//   - lost: an acknowledged turn whose user message or reply is not stored;
//   - duplicated: copies beyond the first of a turn's user message or reply;
//   - reordered: a conversation's acknowledged turns stored in another
//     order than sent, or a reply not right after its user message.
#pragma once

#include <atomic>
#include <chrono>
#include <latch>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "omniforge/orchestrator/v1/chat_service.grpc.pb.h"
#include "tests/support/chat_turn.h"

namespace omniforge::testing {

// One turn as its client sent it.
struct TurnRecord {
  std::string conversation;
  std::string turn_id;
  std::string message;
  int attempts = 0;
  bool acknowledged = false;
  // Acknowledged with no error event and its reply stored at once.
  bool normal = false;
  // The first attempt's start; the last attempt's start and end.
  std::chrono::steady_clock::time_point first_started;
  std::chrono::steady_clock::time_point started;
  std::chrono::steady_clock::time_point ended;
};

// Whether the client may take `turn` as acknowledged: the stream ended OK
// and its last event is `done`.
bool Acknowledged(const ChatTurn& turn);

// How a LoadClient behaves.
struct LoadOptions {
  // Conversations each client opens and sends to in turn.
  int conversations = 2;
  // The pause between two turns (a person reads the answer).
  std::chrono::milliseconds think_time{20};
  // A turn is sent again (same turn_id) for this long before the client
  // gives up; each attempt has `turn_deadline`, the next waits `retry_pause`.
  std::chrono::seconds retry_for{30};
  std::chrono::seconds turn_deadline{20};
  std::chrono::milliseconds retry_pause{100};
  // The messages sent, taking turns. By default two the local policy
  // answers without a question back: one reads through the executor (the
  // user's agents), one does not.
  std::vector<std::string> messages = {"list my agents", "what can you do for me?"};
};

// One client: a user of its own (`key`) and its conversations, sending one
// turn after another (its conversations taking turns) to the orchestrator
// at `address` until told to stop. turn_ids are `prefix`-<n>. Run is called
// from one thread; turns() from any.
class LoadClient final {
 public:
  LoadClient(std::string address, std::string key, std::string prefix, LoadOptions options = {});

  // Opens the conversations (counting down `ready` once they are), then
  // sends turns until `stop`.
  void Run(const std::atomic<bool>& stop, std::latch& ready);

  const std::string& key() const { return key_; }
  // The conversations opened; read once Run has returned.
  const std::vector<std::string>& conversations() const { return conversations_; }
  std::vector<TurnRecord> turns() const;
  // How many turns are done with (acknowledged or given up on).
  size_t turn_count() const;

 private:
  // Sends one turn until it is acknowledged or retry_for has passed.
  void Send(const std::string& conversation, const std::string& n);
  void Connect();

  const std::string address_;
  std::unique_ptr<::omniforge::orchestrator::v1::ChatService::Stub> stub_;
  const std::string key_;
  const std::string prefix_;
  const LoadOptions options_;
  size_t turns_count_ = 0;
  std::vector<std::string> conversations_;
  mutable absl::Mutex mu_;
  std::vector<TurnRecord> turns_ ABSL_GUARDED_BY(mu_);
};

// The stored messages of one conversation, oldest first, as its user reads
// them through the public API (page by page, newest first). Returns
// ListMessages' error when a page cannot be read.
absl::StatusOr<std::vector<::omniforge::orchestrator::v1::Message>> Stored(
    ::omniforge::orchestrator::v1::ChatService::Stub& stub, const std::string& key,
    const std::string& conversation);

// Acknowledged turns lost, duplicated and reordered (see the top).
struct TurnCounts {
  int lost = 0;
  int duplicated = 0;
  int reordered = 0;
};

// Adds to `counts` the lost, duplicated and reordered turns of one
// conversation: `sent` its turns in the order sent, `stored` its messages
// oldest first. A message stored twice counts once for each copy too many
// of a turn's message; the order is counted only when nothing is lost or
// duplicated.
void Tally(const std::vector<const TurnRecord*>& sent,
           const std::vector<::omniforge::orchestrator::v1::Message>& stored, TurnCounts& counts);

// Waits up to `timeout` until the clients' conversations hold at least two
// messages for each acknowledged turn of `turns` (the spool drained).
// Returns whether they do.
bool WaitForStored(::omniforge::orchestrator::v1::ChatService::Stub& stub,
                   const std::vector<std::unique_ptr<LoadClient>>& clients,
                   const std::vector<TurnRecord>& turns, std::chrono::seconds timeout);

}  // namespace omniforge::testing
