// Typed LLM errors. Every failure a ChatModel returns is an absl::Status with
// the most specific code plus a payload naming its LlmErrorKind, so callers
// and the retry logic can tell a rate limit from a malformed answer without
// parsing messages.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "libs/llm/chat.h"

namespace omniforge::llm {

enum class LlmErrorKind {
  kNone,
  kRateLimited,     // HTTP 429                         -> RESOURCE_EXHAUSTED
  kServerError,     // HTTP 5xx, 409                    -> UNAVAILABLE
  kConnection,      // refused, reset, DNS, TLS          -> UNAVAILABLE
  kTimeout,         // attempt or call ran out, HTTP 408 -> DEADLINE_EXCEEDED
  kBadResponse,     // unparsable or malformed body      -> INTERNAL
  kStreamBroken,    // stream ended after output began   -> ABORTED
  kInvalidRequest,  // HTTP 400/404/413/422              -> INVALID_ARGUMENT
  kAuth,            // HTTP 401/403                      -> PERMISSION_DENIED
  kCircuitOpen,     // provider skipped by its breaker   -> UNAVAILABLE
  kInvalidOutput,   // structured output failed validation, repair included -> FAILED_PRECONDITION
  kCancelled,       // the caller gave up                -> CANCELLED
  kNotConfigured,   // no provider/profile for the call  -> FAILED_PRECONDITION
};

std::string_view ErrorKindName(LlmErrorKind kind);
// The kind ErrorKindName gives `name`; nullopt for another name.
std::optional<LlmErrorKind> ErrorKindFromName(std::string_view name);

// Builds the status for `kind` with `message`. `retry_after_micros` (from a
// Retry-After header) is carried along when given.
absl::Status LlmError(LlmErrorKind kind, std::string_view message,
                      std::optional<int64_t> retry_after_micros = std::nullopt);

// kNone for OK and for statuses not made by LlmError.
LlmErrorKind ErrorKindOf(const absl::Status& status);
std::optional<int64_t> RetryAfterMicrosOf(const absl::Status& status);

// `status` carrying the tokens its attempt was billed for although it failed
// (a stream that broke or was cancelled after the provider reported usage);
// the client adds them to the call's usage record. OK stays OK.
absl::Status WithBilledUsage(absl::Status status, const TokenUsage& usage);
// What WithBilledUsage attached; nullopt when nothing was.
std::optional<TokenUsage> BilledUsageOf(const absl::Status& status);

// Whether trying again (same or another provider) may succeed:
// rate limits, server errors, connection failures, per-attempt timeouts and
// malformed answers.
bool IsRetryable(LlmErrorKind kind);

}  // namespace omniforge::llm
