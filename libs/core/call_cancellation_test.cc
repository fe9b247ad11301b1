#include "libs/core/call_cancellation.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace omniforge::core {
namespace {

TEST(CallCancellationTest, CancelRunsTheHooksOfTheCallsInFlightOnce) {
  CancelSignal signal;
  int first = 0, second = 0, forgotten = 0;
  signal.OnCancel([&] { ++first; });
  const uint64_t gone = signal.OnCancel([&] { ++forgotten; });
  signal.OnCancel([&] { ++second; });
  signal.Forget(gone);  // that call ended before the cancel
  EXPECT_FALSE(signal.cancelled());
  signal.Cancel();
  signal.Cancel();
  EXPECT_TRUE(signal.cancelled());
  EXPECT_EQ(first, 1);
  EXPECT_EQ(second, 1);
  EXPECT_EQ(forgotten, 0);
  // A call that starts after the cancel is cancelled at once.
  int late = 0;
  signal.OnCancel([&] { ++late; });
  EXPECT_EQ(late, 1);
}

TEST(CallCancellationTest, ScopesNestAndAreThreadLocal) {
  CancelSignal turn;
  EXPECT_EQ(CallCancellation(), nullptr);
  {
    ScopedCallCancellation scope(&turn);
    EXPECT_EQ(CallCancellation(), &turn);
    {
      ScopedCallCancellation keep(nullptr);  // writes that must go through
      EXPECT_EQ(CallCancellation(), nullptr);
    }
    EXPECT_EQ(CallCancellation(), &turn);
    CancelSignal* elsewhere = &turn;
    std::thread([&] { elsewhere = CallCancellation(); }).join();
    EXPECT_EQ(elsewhere, nullptr);
  }
  EXPECT_EQ(CallCancellation(), nullptr);
}

// Forget waits for a hook that is running, so a hook may use the caller's
// stack: after Forget returns, nothing of it runs.
TEST(CallCancellationTest, ForgetNeverLeavesAHookRunning) {
  for (int round = 0; round < 200; ++round) {
    CancelSignal signal;
    std::atomic<int> alive{1};
    std::atomic<bool> used_after{false};
    const uint64_t id = signal.OnCancel([&] {
      if (alive.load() == 0) used_after = true;
    });
    std::thread canceller([&] { signal.Cancel(); });
    signal.Forget(id);
    alive = 0;
    canceller.join();
    EXPECT_FALSE(used_after.load());
  }
}

// Cancelling a call may end it at once, on the cancelling thread: its
// completion, which forgets its hook, then runs inside Cancel.
TEST(CallCancellationTest, AHookMayForgetItselfAndOthersWhileItRuns) {
  CancelSignal signal;
  int ran = 0;
  uint64_t first = 0, second = 0;
  first = signal.OnCancel([&] {
    ++ran;
    signal.Forget(first);
    signal.Forget(second);
  });
  second = signal.OnCancel([&] { ++ran; });
  signal.Cancel();  // returns: no deadlock
  // The second was forgotten before its turn came.
  EXPECT_EQ(ran, 1);
}

}  // namespace
}  // namespace omniforge::core
