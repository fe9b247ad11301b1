// Everything a turn's work needs to know about the call it serves, passed
// as one parameter: who asks, when the turn must end (a time point on an
// injected clock, so guardrails are tested on a clock the test moves),
// how it is cancelled or suspended (the turn's control, whose cancel
// signal downstream calls subscribe to with core::CancelSubscription), and
// where its model calls' usage adds up.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "libs/core/clock.h"
#include "libs/core/identity.h"
#include "services/orchestrator/usage/usage_meter.h"

namespace omniforge::orchestrator {

class TurnControl;

class CallContext final {
 public:
  // The turn ends `turn_timeout` after now, or at `client_deadline`
  // (microseconds since the epoch; 0: none) when that comes first.
  CallContext(const core::Identity& who, const core::Clock& clock,
              std::chrono::milliseconds turn_timeout, int64_t client_deadline, TurnControl& control,
              UsageTotals& usage)
      : who_(who), clock_(clock), started_(clock.Now()), control_(control), usage_(usage) {
    deadline_ = started_ + std::chrono::duration_cast<std::chrono::microseconds>(turn_timeout);
    if (client_deadline > 0)
      deadline_ = std::min(deadline_, core::TimePointFromMicros(client_deadline));
  }

  const core::Identity& who() const { return who_; }
  const core::Clock& clock() const { return clock_; }
  core::TimePoint Now() const { return clock_.Now(); }
  int64_t NowMicros() const { return clock_.NowMicros(); }
  core::TimePoint started() const { return started_; }
  core::TimePoint deadline() const { return deadline_; }
  int64_t DeadlineMicros() const { return core::MicrosOf(deadline_); }
  // The turn's time is up.
  bool Expired() const { return Now() >= deadline_; }
  // The deadline of one downstream call: `call_timeout` from now, never
  // after the turn's own (microseconds since the epoch, as the downstream
  // interfaces take it).
  int64_t CallDeadline(std::chrono::milliseconds call_timeout) const {
    return core::MicrosOf(std::min(
        deadline_, Now() + std::chrono::duration_cast<std::chrono::microseconds>(call_timeout)));
  }
  // Milliseconds since the turn started, for `done`.
  double ElapsedMs() const {
    return std::chrono::duration<double, std::milli>(Now() - started_).count();
  }
  TurnControl& control() const { return control_; }
  UsageTotals& usage() const { return usage_; }

 private:
  const core::Identity& who_;
  const core::Clock& clock_;
  const core::TimePoint started_;
  core::TimePoint deadline_;
  TurnControl& control_;
  UsageTotals& usage_;
};

}  // namespace omniforge::orchestrator
