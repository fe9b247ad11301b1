#include "libs/core/side_threads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "libs/core/call_cancellation.h"

namespace omniforge::core {
namespace {

using namespace std::chrono_literals;

// Calls that wait for each other all run: none waits in a queue behind
// another (a fixed pool smaller than the calls would never finish them).
TEST(SideThreadsTest, ConcurrentCallsNeverQueueBehindEachOther) {
  SideThreads threads;
  constexpr int kCalls = 12;
  std::mutex mu;
  std::condition_variable all_started;
  int started = 0;
  std::vector<SideCall<bool>> calls;
  calls.reserve(kCalls);
  for (int i = 0; i < kCalls; ++i) {
    calls.push_back(threads.Async([&] {
      std::unique_lock lock(mu);
      ++started;
      all_started.notify_all();
      return all_started.wait_for(lock, 10s, [&] { return started == kCalls; });
    }));
  }
  for (auto& call : calls) EXPECT_TRUE(call.get());
  EXPECT_EQ(threads.threads(), static_cast<size_t>(kCalls));
}

// Past its bound no thread starts: the call runs on its caller's thread
// before Async returns, and the calls on threads are not held up.
TEST(SideThreadsTest, BeyondItsBoundACallRunsOnItsCallersThread) {
  SideThreads threads(2);
  std::mutex mu;
  std::condition_variable changed;
  int started = 0;
  bool release = false;
  auto held = [&] {
    std::unique_lock lock(mu);
    ++started;
    changed.notify_all();
    changed.wait(lock, [&] { return release; });
    return std::this_thread::get_id();
  };
  SideCall<std::thread::id> first = threads.Async(held);
  SideCall<std::thread::id> second = threads.Async(held);
  {
    std::unique_lock lock(mu);
    changed.wait(lock, [&] { return started == 2; });
  }
  SideCall<std::thread::id> third = threads.Async([] { return std::this_thread::get_id(); });
  EXPECT_EQ(third.get(), std::this_thread::get_id());
  EXPECT_EQ(threads.ran_inline(), 1u);
  {
    std::lock_guard lock(mu);
    release = true;
  }
  changed.notify_all();
  EXPECT_NE(first.get(), std::this_thread::get_id());
  EXPECT_NE(second.get(), std::this_thread::get_id());
  EXPECT_EQ(threads.threads(), 2u);
  // Once they are idle again, calls go to the threads.
  EXPECT_NE(threads.Async([] { return std::this_thread::get_id(); }).get(),
            std::this_thread::get_id());
}

// One call after another reuses one thread instead of starting one per
// call: a thread counts as idle before its caller has the result.
TEST(SideThreadsTest, SequentialCallsReuseOneThread) {
  SideThreads threads;
  int sum = 0;
  for (int i = 1; i <= 100; ++i) sum += threads.Async([i] { return i; }).get();
  EXPECT_EQ(sum, 5050);
  EXPECT_EQ(threads.threads(), 1u);
}

// Like std::async's future, the handle waits for its call when it goes, so
// a call may write to its caller's locals.
TEST(SideThreadsTest, TheHandleWaitsForItsCallWhenDestroyed) {
  SideThreads threads;
  std::string written;
  {
    SideCall<void> call = threads.Async([&] {
      std::this_thread::sleep_for(50ms);
      written = "done";
    });
  }
  EXPECT_EQ(written, "done");
  // Assigning over a running call waits for it as well.
  std::atomic<bool> first_done{false};
  SideCall<void> call = threads.Async([&] {
    std::this_thread::sleep_for(30ms);
    first_done = true;
  });
  call = threads.Async([] {});
  EXPECT_TRUE(first_done.load());
  call.get();
}

TEST(SideThreadsTest, ExceptionsReachTheCaller) {
  SideThreads threads;
  SideCall<int> call = threads.Async([]() -> int { throw std::runtime_error("boom"); });
  EXPECT_THROW(call.get(), std::runtime_error);
}

TEST(SideThreadsTest, DestructionEndsIdleThreads) {
  std::atomic<int> ran{0};
  {
    SideThreads threads;
    for (int i = 0; i < 3; ++i) threads.Async([&] { ++ran; }).get();
  }
  EXPECT_EQ(ran.load(), 3);
}

// A side call carries nothing of its caller's thread: a cancel scope the
// caller is in does not reach it (calls carry their cancel signal
// explicitly, in a core::Call).
TEST(SideThreadsTest, ASideCallDoesNotInheritItsCallersThreadScope) {
  SideThreads threads;
  CancelSignal turn;
  const ScopedCallCancellation scope(&turn);
  EXPECT_EQ(threads.Async([] { return CallCancellation(); }).get(), nullptr);
}

}  // namespace
}  // namespace omniforge::core
