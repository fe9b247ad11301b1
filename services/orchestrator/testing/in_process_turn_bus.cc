#include "services/orchestrator/testing/in_process_turn_bus.h"

#include <algorithm>
#include <optional>

namespace omniforge::orchestrator::testing {

class InProcessTurnBus::Replica final : public TurnBus {
 public:
  explicit Replica(InProcessTurnBus& bus) : bus_(bus) {}
  ~Replica() override { bus_.Leave(this); }

  void Publish(const TurnSignal& signal) override { bus_.Send(this, signal); }
  void Subscribe(std::function<void(const TurnSignal&)> on_signal) override {
    // Held while a signal is delivered: once this returns, the old
    // subscriber hears nothing more.
    absl::MutexLock lock(&subscriber_mu_);
    on_signal_ = std::move(on_signal);
  }
  void Hear(const TurnSignal& signal) {
    absl::MutexLock lock(&subscriber_mu_);
    if (on_signal_) on_signal_(signal);
  }

 private:
  InProcessTurnBus& bus_;
  absl::Mutex subscriber_mu_;
  std::function<void(const TurnSignal&)> on_signal_ ABSL_GUARDED_BY(subscriber_mu_);
};

InProcessTurnBus::InProcessTurnBus() : thread_([this] { Deliver(); }) {}

InProcessTurnBus::~InProcessTurnBus() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  changed_.SignalAll();
  thread_.join();
}

std::unique_ptr<TurnBus> InProcessTurnBus::Join() {
  auto replica = std::make_unique<Replica>(*this);
  absl::MutexLock lock(&mu_);
  replicas_.push_back(replica.get());
  return replica;
}

void InProcessTurnBus::Send(const Replica* from, const TurnSignal& signal) {
  {
    absl::MutexLock lock(&mu_);
    queue_.emplace_back(from, signal);
  }
  changed_.SignalAll();
}

void InProcessTurnBus::Leave(const Replica* replica) {
  absl::MutexLock lock(&mu_);
  // A replica leaving waits for a delivery in progress, which may be to it.
  while (delivering_) changed_.Wait(&mu_);
  replicas_.erase(std::remove(replicas_.begin(), replicas_.end(), replica), replicas_.end());
}

void InProcessTurnBus::Settle() {
  absl::MutexLock lock(&mu_);
  while (!queue_.empty() || delivering_) changed_.Wait(&mu_);
}

void InProcessTurnBus::Deliver() {
  while (true) {
    std::vector<Replica*> to;
    std::optional<TurnSignal> signal;
    {
      absl::MutexLock lock(&mu_);
      while (!stopping_ && queue_.empty()) changed_.Wait(&mu_);
      if (stopping_) return;
      const Replica* const from = queue_.front().first;
      signal = std::move(queue_.front().second);
      queue_.pop_front();
      delivering_ = true;
      for (Replica* replica : replicas_) {
        if (replica != from) to.push_back(replica);
      }
    }
    for (Replica* replica : to) replica->Hear(*signal);
    absl::MutexLock lock(&mu_);
    delivering_ = false;
    changed_.SignalAll();
  }
}

}  // namespace omniforge::orchestrator::testing
