#include "libs/core/timed_mutex.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace omniforge::core {
namespace {

using namespace std::chrono_literals;

TEST(TimedMutexTest, AWaitGivesUpWhileTheMutexIsHeldAndSucceedsOnceItIsFree) {
  TimedMutex mu;
  std::unique_lock<TimedMutex> held(mu);
  std::atomic<bool> gave_up{false};
  std::thread other([&] {
    const auto start = std::chrono::steady_clock::now();
    std::unique_lock<TimedMutex> attempt(mu, std::defer_lock);
    gave_up = !attempt.try_lock_for(50ms);
    EXPECT_GE(std::chrono::steady_clock::now() - start, 50ms);
    EXPECT_FALSE(mu.try_lock());
  });
  other.join();
  EXPECT_TRUE(gave_up.load());
  held.unlock();

  std::unique_lock<TimedMutex> attempt(mu, std::defer_lock);
  EXPECT_TRUE(attempt.try_lock_for(0ms));
  EXPECT_FALSE(mu.try_lock());
}

TEST(TimedMutexTest, AWaiterTakesTheMutexWhenItsHolderLetsGo) {
  TimedMutex mu;
  int guarded = 0;  // written by both threads, only with `mu` held
  mu.lock();
  std::thread waiter([&] {
    std::unique_lock<TimedMutex> attempt(mu, std::defer_lock);
    ASSERT_TRUE(attempt.try_lock_for(30s));
    EXPECT_EQ(guarded, 1);
    guarded = 2;
  });
  std::this_thread::sleep_for(20ms);
  guarded = 1;
  mu.unlock();
  waiter.join();
  std::lock_guard<TimedMutex> lock(mu);
  EXPECT_EQ(guarded, 2);
}

TEST(TimedMutexTest, OneHolderAtATimeAmongManyThreads) {
  TimedMutex mu;
  int holders = 0;
  int most = 0;
  long total = 0;
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        std::unique_lock<TimedMutex> lock(mu, std::defer_lock);
        if (i % 2 == 0) {
          lock.lock();
        } else if (!lock.try_lock_for(10s)) {
          continue;
        }
        most = std::max(most, ++holders);
        ++total;
        --holders;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(most, 1);
  EXPECT_EQ(total, 8000);
}

}  // namespace
}  // namespace omniforge::core
