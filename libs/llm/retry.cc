#include "libs/llm/retry.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <thread>

#include "libs/core/clock.h"

namespace omniforge::llm {
namespace {

// How often a sleeping retry looks at its caller's cancellation flag: short
// enough that a cancelled call frees its thread promptly.
constexpr int64_t kCancelPollMicros = 5'000;

}  // namespace

int64_t RealClock::NowMicros() { return core::NowMicros(); }

bool RealClock::SleepFor(int64_t micros, const std::function<bool()>& cancelled) {
  const int64_t end = core::NowMicros() + micros;
  while (true) {
    if (cancelled && cancelled()) return false;
    const int64_t left = end - core::NowMicros();
    if (left <= 0) return true;
    const int64_t slice = cancelled ? std::min(left, kCancelPollMicros) : left;
    std::this_thread::sleep_for(std::chrono::microseconds(slice));
  }
}

double RealRandom::Uniform() {
  thread_local std::mt19937_64 engine{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(engine);
}

Clock& DefaultClock() {
  static RealClock* const clock = new RealClock();
  return *clock;
}

Random& DefaultRandom() {
  static RealRandom* const random = new RealRandom();
  return *random;
}

int64_t JitteredBackoffMicros(const RetryPolicy& policy, int retry, double uniform01) {
  const double exponent = std::max(0, retry - 1);
  const double ceiling = std::min(
      static_cast<double>(policy.max_backoff_micros),
      static_cast<double>(policy.initial_backoff_micros) * std::pow(policy.multiplier, exponent));
  return static_cast<int64_t>(std::clamp(uniform01, 0.0, 1.0) * std::max(0.0, ceiling));
}

int64_t RetryWaitMicros(const RetryPolicy& policy, int retry, double uniform01,
                        std::optional<int64_t> retry_after_micros) {
  const int64_t backoff = JitteredBackoffMicros(policy, retry, uniform01);
  return std::max(backoff, retry_after_micros.value_or(0));
}

}  // namespace omniforge::llm
