// The turn bus on PostgreSQL's LISTEN/NOTIFY (channel omniforge_turns):
// every replica listens on a connection of its own and sends its signals in
// the background from another, several per statement. Nothing is stored:
// a replica that is down misses the signals of that time, which only the
// turns running across that gap notice (they run on as with one replica).
//
// A payload holds ids only (turn_bus.h): a conversation's digest, a turn id,
// the id of a flow set aside, the sending replica's id; never a word of the
// user's. Given the orchestrator's master keys, every payload is sealed
// (XChaCha20-Poly1305, a key derived from the master key for the bus, the
// master key's id in the clear), so that a signal proves it comes from a
// replica: one that does not open with a key the replica has (sent by
// anything but a replica: another role that may NOTIFY, a forged cancel)
// or that was sealed more than a minute ago (a captured payload replayed)
// is dropped and counted (omniforge_orchestrator_turn_bus_rejected_total).
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "libs/seal/master_keys.h"
#include "services/orchestrator/turn/turn_bus.h"

namespace omniforge::orchestrator {

// The signal's text of a payload as a replica with `keys` sends it, opened
// with the bus's key derived from them (what an operator holding the master
// key reads off the channel); nullopt when it does not open or was sealed
// more than a minute ago.
std::optional<std::string> OpenTurnBusPayload(const seal::MasterKeySet& keys,
                                              const std::string& payload);

class PgTurnBus final : public TurnBus {
 public:
  // Connects to `dsn` in the background, again after any failure. Without
  // `keys`, payloads are plain JSON.
  explicit PgTurnBus(std::string dsn, std::optional<seal::MasterKeySet> keys = std::nullopt);
  ~PgTurnBus() override;
  PgTurnBus(const PgTurnBus&) = delete;
  PgTurnBus& operator=(const PgTurnBus&) = delete;

  void Publish(const TurnSignal& signal) override;
  void Subscribe(std::function<void(const TurnSignal&)> on_signal) override;

  // Waits until the replica listens (or `timeout` passes); false when it
  // does not, e.g. the database cannot be reached.
  bool WaitListening(std::chrono::milliseconds timeout);

  // This replica, as its signals name it.
  const std::string& origin() const { return origin_; }

 private:
  void Listen();
  void Send();
  void Deliver(const std::string& payload);
  // Sleeps up to `duration` unless stopping; false once stopping.
  bool Pause(std::chrono::milliseconds duration);

  // A payload as sent: the signal's text, sealed when there are keys.
  std::string Sealed(const std::string& text) const;
  // The signal's text of a received payload; nullopt when it does not open.
  std::optional<std::string> Opened(const std::string& payload) const;

  const std::string dsn_;
  const std::string origin_;
  // Keys derived for the bus, by master key id; empty: plain payloads.
  std::map<std::string, seal::DataKey> keys_;
  std::string current_key_id_;

  // Held while a signal is delivered, so that a subscriber that goes away
  // (Subscribe(nullptr)) never receives one afterwards.
  absl::Mutex deliver_mu_;
  std::function<void(const TurnSignal&)> on_signal_ ABSL_GUARDED_BY(deliver_mu_);

  absl::Mutex mu_;
  absl::CondVar changed_;
  std::deque<std::string> outbox_ ABSL_GUARDED_BY(mu_);
  bool listening_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  std::thread listener_;
  std::thread sender_;
};

}  // namespace omniforge::orchestrator
