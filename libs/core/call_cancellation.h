// The cancellation of the work a thread does for someone (a chat turn the
// user cancelled, or whose client went away), so that calls it makes further
// down stop at once instead of running to their deadline. The work opens a
// scope with its signal; a client library registers a hook (cancel the
// outgoing call) for as long as its call runs.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>

#include "absl/base/thread_annotations.h"
#include "libs/core/recursive_mutex.h"

namespace omniforge::core {

// Thread-safe. Cancel() is final and runs every registered hook once.
class CancelSignal final {
 public:
  CancelSignal() = default;
  CancelSignal(const CancelSignal&) = delete;
  CancelSignal& operator=(const CancelSignal&) = delete;

  void Cancel();
  bool cancelled() const { return cancelled_.load(); }

  // Runs `hook` on cancellation: at once (before returning) when already
  // cancelled. Returns an id for Forget.
  uint64_t OnCancel(std::function<void()> hook);
  // Removes the hook; once this returns it is not running and will not run,
  // so it may refer to the caller's stack. May be called from a hook, or
  // from what a hook sets off on its thread (a call's completion that
  // cancelling it runs at once).
  void Forget(uint64_t id);

 private:
  std::atomic<bool> cancelled_{false};
  RecursiveMutex mu_;  // held while hooks run
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<uint64_t, std::function<void()>> hooks_ ABSL_GUARDED_BY(mu_);
};

// A hook on a signal for as long as the subscription lives: it removes
// itself when it goes out of scope (CancelSignal::Forget), so the hook may
// refer to the subscriber's stack. A null signal: no hook.
class CancelSubscription final {
 public:
  CancelSubscription(CancelSignal* signal, std::function<void()> hook)
      : signal_(signal), id_(signal != nullptr ? signal->OnCancel(std::move(hook)) : 0) {}
  ~CancelSubscription() { Reset(); }
  CancelSubscription(const CancelSubscription&) = delete;
  CancelSubscription& operator=(const CancelSubscription&) = delete;
  // Removes the hook now; once this returns it neither runs nor will run.
  void Reset() {
    if (signal_ != nullptr) signal_->Forget(id_);
    signal_ = nullptr;
  }

 private:
  CancelSignal* signal_;
  uint64_t id_;
};

// Sets the thread's cancel signal for its lifetime (null: calls made in the
// scope are not cancelled, e.g. the writes that keep what a cancelled turn
// did). Scopes nest; the innermost one counts.
class ScopedCallCancellation final {
 public:
  explicit ScopedCallCancellation(CancelSignal* signal);
  ~ScopedCallCancellation();
  ScopedCallCancellation(const ScopedCallCancellation&) = delete;
  ScopedCallCancellation& operator=(const ScopedCallCancellation&) = delete;

 private:
  CancelSignal* previous_;
};

// The innermost scope's signal on this thread; null outside any scope.
CancelSignal* CallCancellation();

}  // namespace omniforge::core
