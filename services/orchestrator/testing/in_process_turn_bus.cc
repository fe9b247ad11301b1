#include "services/orchestrator/testing/in_process_turn_bus.h"

#include <algorithm>

namespace omniforge::orchestrator::testing {

class InProcessTurnBus::Replica final : public TurnBus {
 public:
  explicit Replica(InProcessTurnBus& bus) : bus_(bus) {}
  ~Replica() override { bus_.Leave(this); }

  void Publish(const TurnSignal& signal) override { bus_.Send(this, signal); }
  void Subscribe(std::function<void(const TurnSignal&)> on_signal) override {
    // Held while a signal is delivered: once this returns, the old
    // subscriber hears nothing more.
    std::lock_guard lock(subscriber_mu_);
    on_signal_ = std::move(on_signal);
  }
  void Hear(const TurnSignal& signal) {
    std::lock_guard lock(subscriber_mu_);
    if (on_signal_) on_signal_(signal);
  }

 private:
  InProcessTurnBus& bus_;
  std::mutex subscriber_mu_;
  std::function<void(const TurnSignal&)> on_signal_ ABSL_GUARDED_BY(subscriber_mu_);
};

InProcessTurnBus::InProcessTurnBus() : thread_([this] { Deliver(); }) {}

InProcessTurnBus::~InProcessTurnBus() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

std::unique_ptr<TurnBus> InProcessTurnBus::Join() {
  auto replica = std::make_unique<Replica>(*this);
  std::lock_guard lock(mu_);
  replicas_.push_back(replica.get());
  return replica;
}

void InProcessTurnBus::Send(const Replica* from, const TurnSignal& signal) {
  {
    std::lock_guard lock(mu_);
    queue_.emplace_back(from, signal);
  }
  changed_.notify_all();
}

void InProcessTurnBus::Leave(const Replica* replica) {
  std::unique_lock lock(mu_);
  // A replica leaving waits for a delivery in progress, which may be to it.
  changed_.wait(lock, [this] { return !delivering_; });
  replicas_.erase(std::remove(replicas_.begin(), replicas_.end(), replica), replicas_.end());
}

void InProcessTurnBus::Settle() {
  std::unique_lock lock(mu_);
  changed_.wait(lock, [this] { return queue_.empty() && !delivering_; });
}

void InProcessTurnBus::Deliver() {
  std::unique_lock lock(mu_);
  while (true) {
    changed_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    auto [from, signal] = std::move(queue_.front());
    queue_.pop_front();
    delivering_ = true;
    std::vector<Replica*> to;
    for (Replica* replica : replicas_) {
      if (replica != from) to.push_back(replica);
    }
    lock.unlock();
    for (Replica* replica : to) replica->Hear(signal);
    lock.lock();
    delivering_ = false;
    changed_.notify_all();
  }
}

}  // namespace omniforge::orchestrator::testing
