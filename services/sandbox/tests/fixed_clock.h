// A clock the tests set (the sandbox's "now").
#pragma once

#include <atomic>

#include "libs/core/clock.h"

namespace omniforge::sandbox::testing {

class FixedClock final : public core::Clock {
 public:
  explicit FixedClock(core::TimePoint now) : now_(core::MicrosOf(now)) {}
  core::TimePoint Now() const override { return core::TimePointFromMicros(now_.load()); }
  void Set(core::TimePoint now) { now_ = core::MicrosOf(now); }

 private:
  std::atomic<int64_t> now_;
};

}  // namespace omniforge::sandbox::testing
