// Wall-clock time as stored and exchanged by omniforge: microseconds since
// the Unix epoch, UTC; and the clock as an interface, so that code whose
// behaviour depends on time (deadlines, guardrails, expiry) takes it as a
// parameter and is tested on a clock the test moves.
#pragma once

#include <chrono>
#include <cstdint>

namespace omniforge::core {

inline int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A point in wall-clock time, at the resolution omniforge stores.
using TimePoint = std::chrono::time_point<std::chrono::system_clock, std::chrono::microseconds>;

inline TimePoint TimePointFromMicros(int64_t micros) {
  return TimePoint(std::chrono::microseconds(micros));
}
inline int64_t MicrosOf(TimePoint t) { return t.time_since_epoch().count(); }

// Thread-safe in every implementation.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint Now() const = 0;
  int64_t NowMicros() const { return MicrosOf(Now()); }
};

// The system's wall clock.
const Clock& SystemClock();

}  // namespace omniforge::core
