#include <chrono>
#include <mutex>

#include "services/orchestrator/turn/turn_runner.h"

namespace omniforge::orchestrator {

void TurnControl::SetFlow(SuspendedFlow flow) {
  std::lock_guard<std::mutex> lock(mu_);
  flow_ = std::move(flow);
}

void TurnControl::Ended(std::optional<SuspendedFlow> suspended) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ended_) return;
    ended_ = true;
    suspended_ = std::move(suspended);
  }
  ended_cv_.notify_all();
}

std::optional<SuspendedFlow> TurnControl::SuspendedState() {
  std::lock_guard<std::mutex> lock(mu_);
  return ended_ ? suspended_ : std::nullopt;
}

std::optional<SuspendedFlow> TurnControl::AwaitSuspension(core::TimePoint deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  if (ended_cv_.wait_until(lock, deadline, [this] { return ended_; })) return suspended_;
  return flow_;
}

}  // namespace omniforge::orchestrator
