// std::recursive_mutex as a capability clang's thread-safety analysis
// (-Wthread-safety, `make lint`) understands, so that members declared
// ABSL_GUARDED_BY it are checked. absl::Mutex is not recursive; use this only
// where a thread must re-enter the lock (e.g. a callback run under it that
// calls back into the object). Thread-safe.
#pragma once

#include <mutex>

#include "absl/base/thread_annotations.h"

namespace omniforge::core {

class ABSL_LOCKABLE RecursiveMutex final {
 public:
  RecursiveMutex() = default;
  RecursiveMutex(const RecursiveMutex&) = delete;
  RecursiveMutex& operator=(const RecursiveMutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

 private:
  std::recursive_mutex mu_;
};

// Holds a RecursiveMutex for its scope.
class ABSL_SCOPED_LOCKABLE RecursiveMutexLock final {
 public:
  explicit RecursiveMutexLock(RecursiveMutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_->Lock();
  }
  ~RecursiveMutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  RecursiveMutexLock(const RecursiveMutexLock&) = delete;
  RecursiveMutexLock& operator=(const RecursiveMutexLock&) = delete;

 private:
  RecursiveMutex* const mu_;
};

}  // namespace omniforge::core
