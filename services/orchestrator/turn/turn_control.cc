#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "services/orchestrator/turn/turn_runner.h"

namespace omniforge::orchestrator {

void TurnControl::SetFlow(SuspendedFlow flow) {
  absl::MutexLock lock(&mu_);
  flow_ = std::move(flow);
}

void TurnControl::Ended(std::optional<SuspendedFlow> suspended) {
  {
    absl::MutexLock lock(&mu_);
    if (ended_) return;
    ended_ = true;
    suspended_ = std::move(suspended);
  }
  ended_cv_.SignalAll();
}

void TurnControl::EndedElsewhere(const std::string& set_aside_flow_id) {
  {
    absl::MutexLock lock(&mu_);
    if (ended_) return;
    ended_ = true;
    elsewhere_ = true;
    if (!set_aside_flow_id.empty()) {
      SuspendedFlow flow;
      flow.flow_id = set_aside_flow_id;
      suspended_ = std::move(flow);
    }
  }
  ended_cv_.SignalAll();
}

bool TurnControl::ended_elsewhere() {
  absl::MutexLock lock(&mu_);
  return elsewhere_;
}

std::optional<SuspendedFlow> TurnControl::SuspendedState() {
  absl::MutexLock lock(&mu_);
  return ended_ ? suspended_ : std::nullopt;
}

std::optional<SuspendedFlow> TurnControl::AwaitSuspension(core::TimePoint deadline) {
  absl::MutexLock lock(&mu_);
  const absl::Time until = absl::FromUnixMicros(core::MicrosOf(deadline));
  while (!ended_ && !ended_cv_.WaitWithDeadline(&mu_, until)) {
  }
  if (ended_) return suspended_;
  return flow_;
}

}  // namespace omniforge::orchestrator
