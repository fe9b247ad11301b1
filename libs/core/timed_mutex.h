// A mutex whose acquisition can give up after a while (the TimedLockable
// requirements, so std::unique_lock's try_lock_for works on it), built on
// absl::Mutex. It replaces std::timed_mutex, whose try_lock_for goes through
// pthread_mutex_clocklock: ThreadSanitizer (GCC 12) does not intercept that
// call, so it saw the unlock of a mutex it never saw taken. Every operation
// here is an absl::Mutex lock, which a TSan build sees (docs/tests.md,
// "ThreadSanitizer"). Not recursive. Thread-safe.
#pragma once

#include <chrono>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace omniforge::core {

class ABSL_LOCKABLE TimedMutex final {
 public:
  TimedMutex() = default;
  TimedMutex(const TimedMutex&) = delete;
  TimedMutex& operator=(const TimedMutex&) = delete;

  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    mu_.LockWhen(absl::Condition(&free_));
    free_ = false;
    mu_.Unlock();
  }

  bool try_lock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) {
    absl::MutexLock lock(&mu_);
    if (!free_) return false;
    free_ = false;
    return true;
  }

  // Waits up to `wait` (none when it is not positive) for the mutex; true
  // when it was taken.
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& wait)
      ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) {
    const bool taken = mu_.LockWhenWithTimeout(
        absl::Condition(&free_),
        absl::FromChrono(std::chrono::duration_cast<std::chrono::nanoseconds>(wait)));
    if (taken) free_ = false;
    mu_.Unlock();
    return taken;
  }

  void unlock() ABSL_UNLOCK_FUNCTION() {
    absl::MutexLock lock(&mu_);
    free_ = true;
  }

 private:
  absl::Mutex mu_;
  bool free_ ABSL_GUARDED_BY(mu_) = true;
};

}  // namespace omniforge::core
