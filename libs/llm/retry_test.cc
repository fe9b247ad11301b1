#include "libs/llm/retry.h"

#include <gtest/gtest.h>

namespace omniforge::llm {
namespace {

TEST(RetryTest, FullJitterSpansZeroToTheExponentialCeiling) {
  const RetryPolicy policy;  // 200 ms initial, x2, 10 s cap
  const int64_t ceilings[] = {200'000,   400'000,   800'000,    1'600'000,
                              3'200'000, 6'400'000, 10'000'000, 10'000'000};
  for (int retry = 1; retry <= 8; ++retry) {
    const int64_t ceiling = ceilings[retry - 1];
    EXPECT_EQ(JitteredBackoffMicros(policy, retry, 0.0), 0) << retry;
    EXPECT_EQ(JitteredBackoffMicros(policy, retry, 0.5), ceiling / 2) << retry;
    const int64_t near_top = JitteredBackoffMicros(policy, retry, 0.999999);
    EXPECT_LT(near_top, ceiling) << retry;
    EXPECT_GT(near_top, ceiling - ceiling / 1000) << retry;
  }
}

TEST(RetryTest, CeilingFollowsThePolicy) {
  RetryPolicy policy;
  policy.initial_backoff_micros = 1'000;
  policy.multiplier = 3;
  policy.max_backoff_micros = 20'000;
  EXPECT_EQ(JitteredBackoffMicros(policy, 1, 0.5), 500);
  EXPECT_EQ(JitteredBackoffMicros(policy, 2, 0.5), 1'500);
  EXPECT_EQ(JitteredBackoffMicros(policy, 3, 0.5), 4'500);
  EXPECT_EQ(JitteredBackoffMicros(policy, 4, 0.5), 10'000);   // 27 ms capped at 20 ms
  EXPECT_EQ(JitteredBackoffMicros(policy, 60, 0.5), 10'000);  // no overflow
}

TEST(RetryTest, RetryAfterIsTheMinimumWait) {
  const RetryPolicy policy;
  EXPECT_EQ(RetryWaitMicros(policy, 1, 0.5, 3'000'000), 3'000'000);
  // A hint shorter than the jittered backoff does not shorten it.
  EXPECT_EQ(RetryWaitMicros(policy, 3, 0.5, 1'000), 400'000);
  EXPECT_EQ(RetryWaitMicros(policy, 3, 0.5, std::nullopt), 400'000);
}

TEST(RetryTest, RealClockSleepStopsWhenCancelled) {
  RealClock clock;
  const int64_t before = clock.NowMicros();
  EXPECT_FALSE(clock.SleepFor(60'000'000, [] { return true; }));
  EXPECT_LT(clock.NowMicros() - before, 10'000'000);
  EXPECT_TRUE(clock.SleepFor(1'000, nullptr));
}

TEST(RetryTest, RealRandomStaysInUnitInterval) {
  RealRandom random;
  for (int i = 0; i < 1000; ++i) {
    const double value = random.Uniform();
    EXPECT_GE(value, 0.0);
    EXPECT_LT(value, 1.0);
  }
}

}  // namespace
}  // namespace omniforge::llm
