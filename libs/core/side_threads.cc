#include "libs/core/side_threads.h"

namespace omniforge::core {

SideThreads::~SideThreads() {
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    threads.swap(threads_);
  }
  ready_.notify_all();
  for (std::thread& t : threads) t.join();
}

size_t SideThreads::threads() const {
  std::lock_guard lock(mu_);
  return threads_.size();
}

void SideThreads::Post(Call call) {
  std::unique_lock lock(mu_);
  calls_.push_back(std::move(call));
  // An idle thread for each waiting call, or a new one: no call waits for
  // another to finish.
  if (calls_.size() > idle_) {
    try {
      threads_.emplace_back([this] { Work(); });
    } catch (...) {
      calls_.pop_back();  // not run: the caller gets the error instead
      throw;
    }
    ++idle_;  // the new thread, until it takes a call
    return;
  }
  lock.unlock();
  ready_.notify_one();
}

void SideThreads::Work() {
  std::unique_lock lock(mu_);
  for (;;) {
    ready_.wait(lock, [this] { return stopping_ || !calls_.empty(); });
    if (calls_.empty()) return;  // stopping
    Call call = std::move(calls_.front());
    calls_.pop_front();
    --idle_;
    lock.unlock();
    std::function<void()> hand_over = call();
    call = nullptr;  // its captures go before the caller has the result
    lock.lock();
    ++idle_;  // idle before the caller can see the result and call again
    lock.unlock();
    hand_over();
    hand_over = nullptr;
    lock.lock();
  }
}

}  // namespace omniforge::core
