// A circuit breaker for one provider+model: after repeated transient failures
// the client stops sending it calls for a while and falls back instead,
// rather than spending every caller's deadline on a target that is down.
//
// Kept per provider+model, not per provider: providers rate-limit and
// overload per model (a 429 or 529 on one model says little about its
// siblings), so a chain "openai/gpt-4.1 -> openai/gpt-4.1-mini" can still use
// the second while the first is saturated. A provider-wide outage trips each
// of its models' breakers after a few calls anyway.
#pragma once

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "libs/llm/errors.h"
#include "libs/llm/retry.h"

namespace omniforge::llm {

struct CircuitBreakerOptions {
  // Consecutive retryable failures that open the circuit.
  int failure_threshold = 5;
  // How long an open circuit refuses calls before letting a probe through.
  int64_t open_micros = 30'000'000;
};

// closed --(failure_threshold consecutive retryable failures)--> open
// open --(open_micros elapsed)--> half-open: one probe call at a time
// half-open --probe succeeds--> closed; --probe fails (retryably)--> open.
// Only retryable failures (IsRetryable) count: an invalid request or a bad
// key says nothing about the target's health. Thread-safe.
class CircuitBreaker final {
 public:
  enum class State { kClosed, kOpen, kHalfOpen };

  // `name` (e.g. "openai/gpt-4.1") labels the transition logs. `clock` must
  // outlive the breaker.
  CircuitBreaker(std::string name, CircuitBreakerOptions options, Clock* clock);

  // How a call was let through: kProbe is the single trial call of the
  // half-open state, whose outcome decides the next state.
  enum class Admission { kRefused, kCall, kProbe };

  // Whether a call may go ahead now. Unless kRefused, the caller must report
  // the call's outcome with OnResult (a probe holds the half-open state's one
  // slot until then).
  Admission TryAcquire();

  // The outcome of a call TryAcquire admitted as `admission`: kNone for
  // success, else the error kind. Kinds that are not retryable change
  // nothing but free the probe slot. Outcomes of calls admitted before the
  // circuit opened only count while it is closed.
  void OnResult(Admission admission, LlmErrorKind kind);

  // The current state; kOpen turns into kHalfOpen once open_micros passed.
  State state();

 private:
  // Moves open -> half-open when due.
  void Refresh() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Open(LlmErrorKind cause) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string name_;
  const CircuitBreakerOptions options_;
  Clock* const clock_;
  absl::Mutex mu_;
  State state_ ABSL_GUARDED_BY(mu_) = State::kClosed;
  int consecutive_failures_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t opened_at_micros_ ABSL_GUARDED_BY(mu_) = 0;
  bool probe_in_flight_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace omniforge::llm
