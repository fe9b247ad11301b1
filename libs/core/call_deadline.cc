#include "libs/core/call_deadline.h"

#include <algorithm>

namespace omniforge::core {
namespace {

constexpr auto kNoDeadline = std::chrono::system_clock::time_point::max();
thread_local std::chrono::system_clock::time_point current_deadline = kNoDeadline;

}  // namespace

ScopedCallDeadline::ScopedCallDeadline(std::chrono::system_clock::time_point deadline)
    : previous_(current_deadline) {
  current_deadline = std::min(deadline, previous_);
}

ScopedCallDeadline::~ScopedCallDeadline() { current_deadline = previous_; }

std::optional<std::chrono::system_clock::time_point> CallDeadline() {
  if (current_deadline == kNoDeadline) return std::nullopt;
  return current_deadline;
}

}  // namespace omniforge::core
