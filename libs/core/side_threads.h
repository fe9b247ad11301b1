// Threads for calls a task starts beside its own work (std::async without a
// new thread per call): each call runs at once on an idle thread, or on a
// new one when none is idle, so a call never waits in a queue; threads stay
// for the next calls instead of being created and torn down every time
// (a thread's start and exit cost more than a short loopback call).
//
// The handle a call returns waits for the call in its destructor, as a
// std::future from std::async does, so a call may use its caller's locals.
// The threads are bounded: once `max_threads` are busy, a call runs on its
// caller's thread before Async returns (never queued behind another call,
// which could wait on it), so a burst of work costs time, not threads.
// Thread-safe. Destruction waits for running calls and ends the threads.
#pragma once

#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <thread>
#include <type_traits>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "libs/core/ambient.h"

namespace omniforge::core {

// The result of a call on SideThreads; waits for it when destroyed.
template <typename T>
class SideCall final {
 public:
  SideCall() = default;
  explicit SideCall(std::future<T> future) : future_(std::move(future)) {}
  SideCall(SideCall&&) noexcept = default;
  SideCall& operator=(SideCall&& other) noexcept {
    Wait();
    future_ = std::move(other.future_);
    return *this;
  }
  ~SideCall() { Wait(); }

  bool valid() const { return future_.valid(); }
  T get() { return future_.get(); }

 private:
  void Wait() {
    if (future_.valid()) future_.wait();
  }

  std::future<T> future_;
};

class SideThreads final {
 public:
  // At most `max_threads` threads (at least 1).
  explicit SideThreads(size_t max_threads = kDefaultMaxThreads)
      : max_threads_(max_threads == 0 ? 1 : max_threads) {}
  ~SideThreads();
  SideThreads(const SideThreads&) = delete;
  SideThreads& operator=(const SideThreads&) = delete;

  template <typename F>
  SideCall<std::invoke_result_t<F>> Async(F call) {
    using R = std::invoke_result_t<F>;
    auto promise = std::make_shared<std::promise<R>>();
    SideCall<R> result(promise->get_future());
    // Of the caller's thread only its ambient (trace context, log fields)
    // travels with the call: what the call needs (its deadline, its cancel
    // signal) it captures, e.g. a core::Call.
    Call task = [promise, call = std::move(call),
                 ambient = CurrentAmbient()]() mutable -> std::function<void()> {
      const ScopedAmbient scope(std::move(ambient));
      try {
        if constexpr (std::is_void_v<R>) {
          call();
          return [promise] { promise->set_value(); };
        } else {
          auto value = std::make_shared<R>(call());
          return [promise, value] { promise->set_value(std::move(*value)); };
        }
      } catch (...) {
        return [promise, error = std::current_exception()] { promise->set_exception(error); };
      }
    };
    // Every thread busy and no more allowed: the call runs here.
    if (!TryPost(task)) task()();
    return result;
  }

  // Threads started so far (idle or busy).
  size_t threads() const;
  // Calls run on their caller's thread because every thread was busy.
  size_t ran_inline() const;

  static constexpr size_t kDefaultMaxThreads = 256;

 private:
  // A call runs its work and returns what hands the result to its caller;
  // the thread counts as idle again before that, so the caller's next call
  // finds it.
  using Call = std::function<std::function<void()>()>;

  // Hands `call` to an idle thread or a new one (moved from then); false
  // when every thread is busy and no more may start (`call` untouched).
  bool TryPost(Call& call);
  void Work();

  const size_t max_threads_;
  mutable absl::Mutex mu_;
  absl::CondVar ready_;
  std::deque<Call> calls_ ABSL_GUARDED_BY(mu_);
  size_t idle_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
  size_t ran_inline_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace omniforge::core
