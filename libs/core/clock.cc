#include "libs/core/clock.h"

namespace omniforge::core {
namespace {

class SystemWallClock final : public Clock {
 public:
  TimePoint Now() const override {
    return std::chrono::time_point_cast<std::chrono::microseconds>(
        std::chrono::system_clock::now());
  }
};

}  // namespace

const Clock& SystemClock() {
  static const SystemWallClock clock;
  return clock;
}

}  // namespace omniforge::core
