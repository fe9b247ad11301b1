// How a provider's HTTP failure becomes a typed LlmError: the status code
// mapping, Retry-After, and the provider's own error message pulled out of
// its error body. Shared by both wire formats (their error bodies agree on
// `error.message`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "libs/llm/errors.h"
#include "libs/llm/http_transport.h"

namespace omniforge::llm {

// 429 kRateLimited; 5xx (529 "overloaded" included) and 409 (a conflict the
// providers' own SDKs retry) kServerError; 408 (the server gave up waiting
// for the request) kTimeout; 401/403 kAuth; any other status kInvalidRequest.
// Only meaningful for non-2xx.
LlmErrorKind ErrorKindForHttpStatus(int status);

// A Retry-After value as a wait from `now_micros`: delta-seconds (a
// fractional value is accepted too) or an HTTP-date in any of the three
// forms HTTP allows. A date in the past gives 0; waits are capped at one day.
// nullopt when the value is neither.
std::optional<int64_t> ParseRetryAfterMicros(std::string_view value, int64_t now_micros);

// A retry-after-ms value (OpenAI's, more precise than its Retry-After) as a
// wait: non-negative milliseconds, a fraction accepted, capped at one day.
// nullopt when it is not such a number.
std::optional<int64_t> ParseRetryAfterMsMicros(std::string_view value);

// The provider's explanation in an error body: `error.message` (OpenAI,
// Anthropic), `error` when it is a string, or top-level `message`; failing
// those, a printable prefix of the body (a proxy's HTML page, say). At most
// 500 bytes.
std::string ProviderErrorMessage(std::string_view body);

// The status for a non-2xx answer: "<provider>: HTTP <status>: <message>",
// of the kind ErrorKindForHttpStatus gives, carrying the server's wait when
// a header gives a valid one: retry-after-ms, else Retry-After.
absl::Status HttpErrorStatus(std::string_view provider, const HttpResponseHead& head,
                             std::string_view body, int64_t now_micros);

}  // namespace omniforge::llm
