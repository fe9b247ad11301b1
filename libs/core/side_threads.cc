#include "libs/core/side_threads.h"

namespace omniforge::core {

SideThreads::~SideThreads() {
  std::vector<std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    threads.swap(threads_);
  }
  ready_.SignalAll();
  for (std::thread& t : threads) t.join();
}

size_t SideThreads::threads() const {
  absl::MutexLock lock(&mu_);
  return threads_.size();
}

size_t SideThreads::ran_inline() const {
  absl::MutexLock lock(&mu_);
  return ran_inline_;
}

bool SideThreads::TryPost(Call& call) {
  {
    absl::MutexLock lock(&mu_);
    // An idle thread for each waiting call, or a new one while the bound
    // allows: no call waits for another to finish.
    if (calls_.size() >= idle_ && threads_.size() >= max_threads_) {
      ++ran_inline_;
      return false;
    }
    calls_.push_back(std::move(call));
    if (calls_.size() > idle_) {
      try {
        threads_.emplace_back([this] { Work(); });
      } catch (...) {
        call = std::move(calls_.back());  // not run here: the caller runs it
        calls_.pop_back();
        ++ran_inline_;
        return false;
      }
      ++idle_;  // the new thread, until it takes a call
      return true;
    }
  }
  ready_.Signal();
  return true;
}

void SideThreads::Work() {
  absl::MutexLock lock(&mu_);
  for (;;) {
    while (!stopping_ && calls_.empty()) ready_.Wait(&mu_);
    if (calls_.empty()) return;  // stopping
    Call call = std::move(calls_.front());
    calls_.pop_front();
    --idle_;
    mu_.Unlock();
    std::function<void()> hand_over = call();
    call = nullptr;  // its captures go before the caller has the result
    mu_.Lock();
    ++idle_;  // idle before the caller can see the result and call again
    mu_.Unlock();
    hand_over();
    hand_over = nullptr;
    mu_.Lock();
  }
}

}  // namespace omniforge::core
