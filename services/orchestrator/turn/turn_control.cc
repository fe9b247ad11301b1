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

std::optional<SuspendedFlow> TurnControl::AwaitSuspension(int64_t deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto until = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::microseconds(deadline)));
  if (ended_cv_.wait_until(lock, until, [this] { return ended_; })) return suspended_;
  return flow_;
}

}  // namespace omniforge::orchestrator
