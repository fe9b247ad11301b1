// The ThreadSanitizer shim (tsan_absl_shim.cc) at work, built in TSan
// builds only: hand-offs through each Abseil primitive the code uses are
// not races, and the same hand-off without a lock is one. Under TSan any
// report fails the program, so a shim that stopped working (a symbol no
// longer bound to it, an annotation lost) fails the first group, and a
// TSan that stopped watching fails the last test.
#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace {

constexpr int kIncrements = 10'000;

template <typename Body>
void RunTwice(Body body) {
  std::thread first(body);
  std::thread second(body);
  first.join();
  second.join();
}

TEST(TsanAbslShimTest, TwoThreadsIncrementingUnderMutexLockAreNoRace) {
  absl::Mutex mu;
  int counter = 0;
  RunTwice([&] {
    for (int i = 0; i < kIncrements; ++i) {
      absl::MutexLock lock(&mu);
      ++counter;
    }
  });
  absl::MutexLock lock(&mu);
  EXPECT_EQ(counter, 2 * kIncrements);
}

TEST(TsanAbslShimTest, TryLockThatSucceededGuardsLikeLock) {
  absl::Mutex mu;
  int counter = 0;
  RunTwice([&] {
    for (int i = 0; i < kIncrements; ++i) {
      while (!mu.TryLock()) std::this_thread::yield();
      ++counter;
      mu.Unlock();
    }
  });
  absl::MutexLock lock(&mu);
  EXPECT_EQ(counter, 2 * kIncrements);
}

TEST(TsanAbslShimTest, ReadersSeeWhatTheWriterWrote) {
  absl::Mutex mu;
  int value = 0;
  std::thread writer([&] {
    absl::MutexLock lock(&mu);
    value = 7;
  });
  RunTwice([&] {
    for (int i = 0; i < kIncrements; ++i) {
      absl::ReaderMutexLock lock(&mu);
      EXPECT_GE(value, 0);
    }
  });
  writer.join();
}

// The waiter holds the mutex, gives it up inside Wait and holds it again:
// what the other thread wrote meanwhile under the mutex is no race.
TEST(TsanAbslShimTest, ACondVarWaiterSeesWhatWasWrittenWhileItWaited) {
  absl::Mutex mu;
  absl::CondVar ready;
  bool done = false;
  int value = 0;
  std::thread producer([&] {
    absl::MutexLock lock(&mu);
    value = 42;
    done = true;
    ready.SignalAll();
  });
  {
    absl::MutexLock lock(&mu);
    while (!done) ready.Wait(&mu);
    EXPECT_EQ(value, 42);
  }
  producer.join();
}

TEST(TsanAbslShimTest, ACondVarWaitWithTimeoutSeesWhatWasWritten) {
  absl::Mutex mu;
  absl::CondVar ready;
  bool done = false;
  int value = 0;
  std::thread producer([&] {
    absl::MutexLock lock(&mu);
    value = 42;
    done = true;
    ready.Signal();
  });
  {
    absl::MutexLock lock(&mu);
    while (!done) ready.WaitWithTimeout(&mu, absl::Milliseconds(5));
    EXPECT_EQ(value, 42);
  }
  producer.join();
}

TEST(TsanAbslShimTest, AwaitAndLockWhenSeeWhatWasWritten) {
  absl::Mutex mu;
  bool done = false;
  int value = 0;
  std::thread producer([&] {
    absl::MutexLock lock(&mu);
    value = 42;
    done = true;
  });
  {
    absl::MutexLock lock(&mu);
    mu.Await(absl::Condition(&done));
    EXPECT_EQ(value, 42);
    value = 43;
  }
  {
    absl::MutexLock lock(&mu, absl::Condition(&done));
    EXPECT_EQ(value, 43);
  }
  {
    absl::MutexLock lock(&mu);
    EXPECT_TRUE(mu.AwaitWithTimeout(absl::Condition(&done), absl::Seconds(10)));
  }
  producer.join();
}

TEST(TsanAbslShimTest, AWaitForNotificationSeesWhatWasWrittenBeforeNotify) {
  absl::Notification notification;
  int value = 0;
  std::thread producer([&] {
    value = 42;
    notification.Notify();
  });
  notification.WaitForNotification();
  EXPECT_EQ(value, 42);
  producer.join();
}

// TSan stops the child at its first report (halt_on_error) with exit code
// 66; a child that gets to _Exit(0) raced unseen.
TEST(TsanAbslShimTest, TheSameIncrementsWithoutTheLockAreARace) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  setenv("TSAN_OPTIONS", "halt_on_error=1 exitcode=66", 1);
  EXPECT_EXIT(
      {
        int counter = 0;
        RunTwice([&] {
          for (int i = 0; i < kIncrements; ++i) ++counter;
        });
        std::_Exit(counter == 0 ? 1 : 0);
      },
      testing::ExitedWithCode(66), "ThreadSanitizer: data race");
}

}  // namespace
