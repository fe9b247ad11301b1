// One call made on someone's behalf to another part of the system (a
// service, a database, a model): whom it acts for, when it must end and
// what cancels it, passed as a parameter so that nothing about the call
// travels in thread-local state. A caller derives each call's Call from its
// own (CallContext in the orchestrator), never past its own deadline.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "libs/core/call_cancellation.h"
#include "libs/core/clock.h"
#include "libs/core/identity.h"

namespace omniforge::core {

struct Call {
  // Whom the call acts for; the caller keeps it alive for the call.
  const Identity& who;
  // The call ends by then, answered or not.
  TimePoint deadline;
  // Cancels the call early (a subscriber removes its hook when it is done:
  // CancelSubscription). Null: the call is not cancelled, e.g. the writes
  // that keep what a cancelled turn did.
  CancelSignal* cancel = nullptr;

  int64_t DeadlineMicros() const { return MicrosOf(deadline); }
  // The same call, ending `timeout` after `now` if that is sooner.
  Call Within(TimePoint now, std::chrono::milliseconds timeout) const {
    return Call{
        who,
        std::min(deadline, now + std::chrono::duration_cast<std::chrono::microseconds>(timeout)),
        cancel};
  }
  // The same call, not cancelled with its caller.
  Call Uncancelled() const { return Call{who, deadline, nullptr}; }
};

}  // namespace omniforge::core
