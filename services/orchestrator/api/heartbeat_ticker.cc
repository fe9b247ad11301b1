#include "services/orchestrator/api/heartbeat_ticker.h"

#include <utility>
#include <vector>

#include "absl/time/time.h"

namespace omniforge::orchestrator {

HeartbeatTicker::HeartbeatTicker(std::chrono::milliseconds interval) : interval_(interval) {
  if (interval_.count() > 0) thread_ = std::thread([this] { Loop(); });
}

HeartbeatTicker::~HeartbeatTicker() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

HeartbeatTicker::Subscription::~Subscription() {
  // Taken after the entry is gone: a tick of it that had started is over.
  {
    absl::MutexLock lock(&ticker_.mu_);
    ticker_.ticks_.erase(id_);
  }
  absl::MutexLock ticking(&ticker_.ticking_);
}

std::unique_ptr<HeartbeatTicker::Subscription> HeartbeatTicker::Subscribe(
    std::function<void()> tick) {
  if (interval_.count() <= 0) return nullptr;
  absl::MutexLock lock(&mu_);
  const int id = next_id_++;
  ticks_.emplace(id, std::move(tick));
  return std::unique_ptr<Subscription>(new Subscription(*this, id));
}

void HeartbeatTicker::Loop() {
  // Four ticks per interval: a heartbeat is late by a quarter at most.
  const absl::Duration period = absl::FromChrono(interval_) / 4;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping_), period)) return;
    }
    absl::MutexLock ticking(&ticking_);
    std::vector<std::function<void()>> ticks;
    {
      absl::MutexLock lock(&mu_);
      for (const auto& [id, tick] : ticks_) ticks.push_back(tick);
    }
    for (const auto& tick : ticks) tick();
  }
}

}  // namespace omniforge::orchestrator
