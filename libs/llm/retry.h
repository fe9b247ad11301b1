// Retry timing for LLM calls: the backoff policy (exponential with full
// jitter, Retry-After as a floor) and the clock and randomness it runs on,
// injected so tests control time.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

namespace omniforge::llm {

// Time as the client sees it. Absolute times are in core::NowMicros() units
// (microseconds since the Unix epoch), like CallContext deadlines.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t NowMicros() = 0;
  // Waits `micros`, returning early with false once `cancelled` (may be
  // empty) returns true; true when the full wait elapsed.
  virtual bool SleepFor(int64_t micros, const std::function<bool()>& cancelled) = 0;
};

// Wall-clock time and real sleeps; polls `cancelled` every few milliseconds
// while sleeping. Thread-safe.
class RealClock final : public Clock {
 public:
  int64_t NowMicros() override;
  bool SleepFor(int64_t micros, const std::function<bool()>& cancelled) override;
};

// A source of uniform randomness for jitter.
class Random {
 public:
  virtual ~Random() = default;
  // A value in [0, 1).
  virtual double Uniform() = 0;
};

// Seeded from the OS once per thread. Thread-safe.
class RealRandom final : public Random {
 public:
  double Uniform() override;
};

// The process-wide real clock and randomness (never destroyed).
Clock& DefaultClock();
Random& DefaultRandom();

struct RetryPolicy {
  // Attempts per target of a fallback chain, the first included.
  int max_attempts = 3;
  int64_t initial_backoff_micros = 200'000;
  int64_t max_backoff_micros = 10'000'000;
  double multiplier = 2;
};

// The wait before retry number `retry` (1 for the second attempt) with full
// jitter: uniform in [0, min(max, initial * multiplier^(retry-1))), so that
// clients failing together do not retry together. `uniform01` is a draw
// from Random::Uniform().
int64_t JitteredBackoffMicros(const RetryPolicy& policy, int retry, double uniform01);

// The wait before the next attempt: the jittered backoff, but never less
// than a server's Retry-After hint (the server knows when capacity returns;
// retrying earlier only earns another 429).
int64_t RetryWaitMicros(const RetryPolicy& policy, int retry, double uniform01,
                        std::optional<int64_t> retry_after_micros);

}  // namespace omniforge::llm
