// The turn bus between replicas of one process (PgTurnBus's stand-in), so
// that a turn on one replica is suspended or cancelled from another in a
// unit test, without PostgreSQL. Thread-safe.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "services/orchestrator/turn/turn_bus.h"

namespace omniforge::orchestrator::testing {

// Like the real bus: Publish never waits, and each signal reaches every
// other replica (never its sender) later, on the bus's own thread.
class InProcessTurnBus final {
 public:
  InProcessTurnBus();
  ~InProcessTurnBus();
  InProcessTurnBus(const InProcessTurnBus&) = delete;
  InProcessTurnBus& operator=(const InProcessTurnBus&) = delete;

  // A replica's end of the bus; it must not outlive the bus.
  std::unique_ptr<TurnBus> Join();
  // Waits until every signal published so far has been delivered.
  void Settle();

 private:
  class Replica;
  void Send(const Replica* from, const TurnSignal& signal);
  void Leave(const Replica* replica);
  void Deliver();

  mutable absl::Mutex mu_;
  absl::CondVar changed_;
  std::vector<Replica*> replicas_ ABSL_GUARDED_BY(mu_);
  std::deque<std::pair<const Replica*, TurnSignal>> queue_ ABSL_GUARDED_BY(mu_);
  bool delivering_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace omniforge::orchestrator::testing
