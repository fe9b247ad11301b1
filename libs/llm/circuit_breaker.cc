#include "libs/llm/circuit_breaker.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/core/logging.h"

namespace omniforge::llm {

CircuitBreaker::CircuitBreaker(std::string name, CircuitBreakerOptions options, Clock* clock)
    : name_(std::move(name)), options_(options), clock_(clock) {}

void CircuitBreaker::Refresh() {
  if (state_ == State::kOpen && clock_->NowMicros() - opened_at_micros_ >= options_.open_micros) {
    state_ = State::kHalfOpen;
    probe_in_flight_ = false;
  }
}

CircuitBreaker::Admission CircuitBreaker::TryAcquire() {
  absl::MutexLock lock(&mu_);
  Refresh();
  switch (state_) {
    case State::kClosed:
      return Admission::kCall;
    case State::kOpen:
      return Admission::kRefused;
    case State::kHalfOpen:
      if (probe_in_flight_) return Admission::kRefused;
      probe_in_flight_ = true;
      return Admission::kProbe;
  }
  return Admission::kRefused;
}

void CircuitBreaker::OnResult(Admission admission, LlmErrorKind kind) {
  absl::MutexLock lock(&mu_);
  if (admission == Admission::kRefused) return;
  const bool failed = IsRetryable(kind);
  if (admission == Admission::kProbe) {
    probe_in_flight_ = false;
    if (state_ != State::kHalfOpen) return;
    if (kind == LlmErrorKind::kNone) {
      state_ = State::kClosed;
      consecutive_failures_ = 0;
      core::LogInfo("llm circuit closed", {{"target", name_}});
      return;
    }
    if (failed) Open(kind);
    return;
  }
  if (state_ != State::kClosed) return;
  if (kind == LlmErrorKind::kNone) {
    consecutive_failures_ = 0;
  } else if (failed && ++consecutive_failures_ >= options_.failure_threshold) {
    Open(kind);
  }
}

void CircuitBreaker::Open(LlmErrorKind cause) {
  state_ = State::kOpen;
  opened_at_micros_ = clock_->NowMicros();
  consecutive_failures_ = 0;
  core::LogWarn("llm circuit opened", {{"target", name_},
                                       {"error_kind", std::string(ErrorKindName(cause))},
                                       {"open_ms", absl::StrCat(options_.open_micros / 1000)}});
}

CircuitBreaker::State CircuitBreaker::state() {
  absl::MutexLock lock(&mu_);
  Refresh();
  return state_;
}

}  // namespace omniforge::llm
