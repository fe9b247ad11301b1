// Wall-clock time as stored and exchanged by omniforge: microseconds since
// the Unix epoch, UTC.
#pragma once

#include <chrono>
#include <cstdint>

namespace omniforge::core {

inline int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace omniforge::core
