#include "libs/core/call_cancellation.h"

#include <utility>

namespace omniforge::core {
namespace {

thread_local CancelSignal* current_signal = nullptr;

}  // namespace

void CancelSignal::Cancel() {
  RecursiveMutexLock lock(&mu_);
  if (cancelled_.exchange(true)) return;
  // Each hook is taken out before it runs, so that a hook (or what it sets
  // off on this thread) may call Forget: the lock is recursive, and a hook
  // forgotten before its turn does not run.
  while (!hooks_.empty()) {
    auto hook = hooks_.extract(hooks_.begin());
    hook.mapped()();
  }
}

uint64_t CancelSignal::OnCancel(std::function<void()> hook) {
  RecursiveMutexLock lock(&mu_);
  const uint64_t id = next_id_++;
  if (cancelled_.load()) {
    hook();
    return id;
  }
  hooks_.emplace(id, std::move(hook));
  return id;
}

void CancelSignal::Forget(uint64_t id) {
  RecursiveMutexLock lock(&mu_);
  hooks_.erase(id);
}

ScopedCallCancellation::ScopedCallCancellation(CancelSignal* signal) : previous_(current_signal) {
  current_signal = signal;
}

ScopedCallCancellation::~ScopedCallCancellation() { current_signal = previous_; }

CancelSignal* CallCancellation() { return current_signal; }

}  // namespace omniforge::core
