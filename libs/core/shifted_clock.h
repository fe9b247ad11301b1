// A clock that reads a chosen time when made and then runs at the system
// clock's pace: what a service's test-only "now" setting gives (the
// sandbox's OMNIFORGE_SANDBOX_NOW, the orchestrator's turn.calendar_now),
// so that tests read "today" and "tomorrow" on a day of their choosing
// whatever day they run. Thread-safe.
#pragma once

#include "libs/core/clock.h"

namespace omniforge::core {

class ShiftedClock final : public Clock {
 public:
  explicit ShiftedClock(TimePoint start) : shift_(start - SystemClock().Now()) {}
  TimePoint Now() const override { return SystemClock().Now() + shift_; }

 private:
  const TimePoint::duration shift_;
};

}  // namespace omniforge::core
