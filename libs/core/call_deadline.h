// The deadline of the call the current thread is serving, so work done on
// the caller's behalf further down (database statements, outgoing calls)
// can stop when the caller stops waiting. The service layer opens a scope
// around a call's work; libraries read it.
#pragma once

#include <chrono>
#include <optional>

namespace omniforge::core {

// Sets the thread's call deadline for its lifetime. Scopes nest: an inner
// scope can only shorten the deadline. Not thread-safe by design (per thread).
class ScopedCallDeadline final {
 public:
  explicit ScopedCallDeadline(std::chrono::system_clock::time_point deadline);
  ~ScopedCallDeadline();
  ScopedCallDeadline(const ScopedCallDeadline&) = delete;
  ScopedCallDeadline& operator=(const ScopedCallDeadline&) = delete;

 private:
  std::chrono::system_clock::time_point previous_;
};

// The innermost scope's deadline on this thread; nullopt outside any scope
// or when the call has no deadline.
std::optional<std::chrono::system_clock::time_point> CallDeadline();

}  // namespace omniforge::core
