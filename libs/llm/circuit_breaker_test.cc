#include "libs/llm/circuit_breaker.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "libs/llm/client_test_fakes.h"

namespace omniforge::llm {
namespace {

using Admission = CircuitBreaker::Admission;
using State = CircuitBreaker::State;

class CircuitBreakerTest : public ::testing::Test {
 protected:
  static CircuitBreakerOptions Options() {
    CircuitBreakerOptions options;
    options.failure_threshold = 3;
    options.open_micros = 30'000'000;
    return options;
  }

  void Fail(LlmErrorKind kind) {
    const Admission admission = breaker_.TryAcquire();
    ASSERT_NE(admission, Admission::kRefused);
    breaker_.OnResult(admission, kind);
  }

  FakeClock clock_;
  CircuitBreaker breaker_{"p/m", Options(), &clock_};
};

TEST_F(CircuitBreakerTest, OpensAfterThresholdConsecutiveRetryableFailures) {
  Fail(LlmErrorKind::kServerError);
  Fail(LlmErrorKind::kRateLimited);
  EXPECT_EQ(breaker_.state(), State::kClosed);
  Fail(LlmErrorKind::kTimeout);
  EXPECT_EQ(breaker_.state(), State::kOpen);
  EXPECT_EQ(breaker_.TryAcquire(), Admission::kRefused);
}

TEST_F(CircuitBreakerTest, SuccessResetsTheCount) {
  Fail(LlmErrorKind::kServerError);
  Fail(LlmErrorKind::kServerError);
  Fail(LlmErrorKind::kNone);
  Fail(LlmErrorKind::kServerError);
  Fail(LlmErrorKind::kServerError);
  EXPECT_EQ(breaker_.state(), State::kClosed);
}

TEST_F(CircuitBreakerTest, NonRetryableErrorsDoNotCount) {
  for (int i = 0; i < 10; ++i) {
    Fail(LlmErrorKind::kInvalidRequest);
    Fail(LlmErrorKind::kAuth);
    Fail(LlmErrorKind::kCancelled);
  }
  EXPECT_EQ(breaker_.state(), State::kClosed);
}

TEST_F(CircuitBreakerTest, HalfOpenAdmitsOneProbeAndItsSuccessCloses) {
  for (int i = 0; i < 3; ++i) Fail(LlmErrorKind::kConnection);
  clock_.Advance(29'999'999);
  EXPECT_EQ(breaker_.TryAcquire(), Admission::kRefused);
  clock_.Advance(1);
  EXPECT_EQ(breaker_.state(), State::kHalfOpen);
  const Admission probe = breaker_.TryAcquire();
  EXPECT_EQ(probe, Admission::kProbe);
  EXPECT_EQ(breaker_.TryAcquire(), Admission::kRefused);  // one probe at a time
  breaker_.OnResult(probe, LlmErrorKind::kNone);
  EXPECT_EQ(breaker_.state(), State::kClosed);
  EXPECT_EQ(breaker_.TryAcquire(), Admission::kCall);
}

TEST_F(CircuitBreakerTest, FailedProbeReopensForAnotherPeriod) {
  for (int i = 0; i < 3; ++i) Fail(LlmErrorKind::kServerError);
  clock_.Advance(30'000'000);
  const Admission probe = breaker_.TryAcquire();
  ASSERT_EQ(probe, Admission::kProbe);
  breaker_.OnResult(probe, LlmErrorKind::kServerError);
  EXPECT_EQ(breaker_.state(), State::kOpen);
  clock_.Advance(29'000'000);
  EXPECT_EQ(breaker_.TryAcquire(), Admission::kRefused);
  clock_.Advance(1'000'000);
  EXPECT_EQ(breaker_.TryAcquire(), Admission::kProbe);
}

TEST_F(CircuitBreakerTest, ProbeEndingNeutrallyFreesTheSlot) {
  for (int i = 0; i < 3; ++i) Fail(LlmErrorKind::kServerError);
  clock_.Advance(30'000'000);
  const Admission probe = breaker_.TryAcquire();
  ASSERT_EQ(probe, Admission::kProbe);
  breaker_.OnResult(probe, LlmErrorKind::kCancelled);
  EXPECT_EQ(breaker_.state(), State::kHalfOpen);
  EXPECT_EQ(breaker_.TryAcquire(), Admission::kProbe);
}

TEST_F(CircuitBreakerTest, LateFailuresOfEarlierCallsDoNotDecideTheProbe) {
  const Admission slow_call = breaker_.TryAcquire();
  for (int i = 0; i < 3; ++i) Fail(LlmErrorKind::kServerError);
  clock_.Advance(30'000'000);
  const Admission probe = breaker_.TryAcquire();
  ASSERT_EQ(probe, Admission::kProbe);
  breaker_.OnResult(slow_call, LlmErrorKind::kTimeout);
  EXPECT_EQ(breaker_.state(), State::kHalfOpen);
  breaker_.OnResult(probe, LlmErrorKind::kNone);
  EXPECT_EQ(breaker_.state(), State::kClosed);
}

TEST_F(CircuitBreakerTest, ConcurrentCallersGetExactlyOneProbe) {
  for (int i = 0; i < 3; ++i) Fail(LlmErrorKind::kServerError);
  clock_.Advance(30'000'000);
  std::atomic<int> probes{0};
  std::atomic<int> refused{0};
  constexpr int kThreads = 8;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) {
        const Admission admission = breaker_.TryAcquire();
        (admission == Admission::kProbe ? probes : refused).fetch_add(1);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(probes.load(), 1);
  EXPECT_EQ(refused.load(), 799);
}

}  // namespace
}  // namespace omniforge::llm
