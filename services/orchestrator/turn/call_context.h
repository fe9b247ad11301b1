// Everything a turn's work needs to know about the call it serves, passed
// as one parameter: who asks, when the turn must end (a time point on an
// injected clock, so guardrails are tested on a clock the test moves),
// how it is cancelled or suspended (the turn's control, whose cancel
// signal each downstream call carries in its core::Call and subscribes to
// with core::CancelSubscription), and where its model calls' usage adds up.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "libs/core/call.h"
#include "libs/core/call_cancellation.h"
#include "libs/core/clock.h"
#include "libs/core/identity.h"
#include "services/orchestrator/usage/usage_meter.h"

namespace omniforge::orchestrator {

class TurnControl;

class CallContext final {
 public:
  // The turn ends `turn_timeout` after now, or at `client_deadline`
  // (TimePoint::max(): none) when that comes first.
  // Cancelling `cancel` (the control's signal) cancels the turn's calls.
  CallContext(const core::Identity& who, const core::Clock& clock,
              std::chrono::milliseconds turn_timeout, core::TimePoint client_deadline,
              TurnControl& control, core::CancelSignal& cancel, UsageTotals& usage)
      : who_(who),
        clock_(clock),
        started_(clock.Now()),
        control_(control),
        cancel_(cancel),
        usage_(usage) {
    deadline_ = started_ + std::chrono::duration_cast<std::chrono::microseconds>(turn_timeout);
    deadline_ = std::min(deadline_, client_deadline);
  }

  const core::Identity& who() const { return who_; }
  const core::Clock& clock() const { return clock_; }
  core::TimePoint Now() const { return clock_.Now(); }
  int64_t NowMicros() const { return clock_.NowMicros(); }
  core::TimePoint started() const { return started_; }
  core::TimePoint deadline() const { return deadline_; }
  // The turn's time is up.
  bool Expired() const { return Now() >= deadline_; }
  // One downstream call of the turn: for the turn's caller, ending
  // `timeout` from now or at the turn's deadline, whichever comes first,
  // and cancelled with the turn. A write that must keep what a cancelled
  // turn did takes its .Uncancelled().
  core::Call ForCall(std::chrono::milliseconds timeout) const {
    return core::Call{who_, deadline_, &cancel_}.Within(Now(), timeout);
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
  core::CancelSignal& cancel_;
  UsageTotals& usage_;
};

}  // namespace omniforge::orchestrator
