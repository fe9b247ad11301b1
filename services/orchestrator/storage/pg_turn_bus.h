// The turn bus on PostgreSQL's LISTEN/NOTIFY (channel omniforge_turns):
// every replica listens on a connection of its own and sends its signals in
// the background from another, several per statement. Nothing is stored:
// a replica that is down misses the signals of that time, which only the
// turns running across that gap notice (they run on as with one replica).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "services/orchestrator/turn/turn_bus.h"

namespace omniforge::orchestrator {

class PgTurnBus final : public TurnBus {
 public:
  // Connects to `dsn` in the background, again after any failure.
  explicit PgTurnBus(std::string dsn);
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

  const std::string dsn_;
  const std::string origin_;

  // Held while a signal is delivered, so that a subscriber that goes away
  // (Subscribe(nullptr)) never receives one afterwards.
  std::mutex deliver_mu_;
  std::function<void(const TurnSignal&)> on_signal_;  // Guarded by deliver_mu_.

  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<std::string> outbox_;  // Guarded by mu_.
  bool listening_ = false;          // Guarded by mu_.
  bool stopping_ = false;           // Guarded by mu_.

  std::thread listener_;
  std::thread sender_;
};

}  // namespace omniforge::orchestrator
