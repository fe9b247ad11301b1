#include "libs/llm/errors.h"

#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace omniforge::llm {
namespace {

constexpr char kKindPayload[] = "type.omniforge.dev/llm.error_kind";
constexpr char kRetryAfterPayload[] = "type.omniforge.dev/llm.retry_after_micros";
constexpr char kBilledUsagePayload[] = "type.omniforge.dev/llm.billed_usage";

absl::StatusCode CodeFor(LlmErrorKind kind) {
  switch (kind) {
    case LlmErrorKind::kNone:
      return absl::StatusCode::kOk;
    case LlmErrorKind::kRateLimited:
      return absl::StatusCode::kResourceExhausted;
    case LlmErrorKind::kServerError:
    case LlmErrorKind::kConnection:
    case LlmErrorKind::kCircuitOpen:
      return absl::StatusCode::kUnavailable;
    case LlmErrorKind::kTimeout:
      return absl::StatusCode::kDeadlineExceeded;
    case LlmErrorKind::kBadResponse:
      return absl::StatusCode::kInternal;
    case LlmErrorKind::kStreamBroken:
      return absl::StatusCode::kAborted;
    case LlmErrorKind::kInvalidRequest:
      return absl::StatusCode::kInvalidArgument;
    case LlmErrorKind::kAuth:
      return absl::StatusCode::kPermissionDenied;
    case LlmErrorKind::kInvalidOutput:
    case LlmErrorKind::kNotConfigured:
      return absl::StatusCode::kFailedPrecondition;
    case LlmErrorKind::kCancelled:
      return absl::StatusCode::kCancelled;
  }
  return absl::StatusCode::kUnknown;
}

constexpr LlmErrorKind kAllKinds[] = {
    LlmErrorKind::kRateLimited,    LlmErrorKind::kServerError, LlmErrorKind::kConnection,
    LlmErrorKind::kTimeout,        LlmErrorKind::kBadResponse, LlmErrorKind::kStreamBroken,
    LlmErrorKind::kInvalidRequest, LlmErrorKind::kAuth,        LlmErrorKind::kCircuitOpen,
    LlmErrorKind::kInvalidOutput,  LlmErrorKind::kCancelled,   LlmErrorKind::kNotConfigured,
};

}  // namespace

std::string_view ErrorKindName(LlmErrorKind kind) {
  switch (kind) {
    case LlmErrorKind::kNone:
      return "none";
    case LlmErrorKind::kRateLimited:
      return "rate_limited";
    case LlmErrorKind::kServerError:
      return "server_error";
    case LlmErrorKind::kConnection:
      return "connection";
    case LlmErrorKind::kTimeout:
      return "timeout";
    case LlmErrorKind::kBadResponse:
      return "bad_response";
    case LlmErrorKind::kStreamBroken:
      return "stream_broken";
    case LlmErrorKind::kInvalidRequest:
      return "invalid_request";
    case LlmErrorKind::kAuth:
      return "auth";
    case LlmErrorKind::kCircuitOpen:
      return "circuit_open";
    case LlmErrorKind::kInvalidOutput:
      return "invalid_output";
    case LlmErrorKind::kCancelled:
      return "cancelled";
    case LlmErrorKind::kNotConfigured:
      return "not_configured";
  }
  return "unknown";
}

std::optional<LlmErrorKind> ErrorKindFromName(std::string_view name) {
  for (int k = static_cast<int>(LlmErrorKind::kNone);
       k <= static_cast<int>(LlmErrorKind::kNotConfigured); ++k) {
    if (ErrorKindName(static_cast<LlmErrorKind>(k)) == name) return static_cast<LlmErrorKind>(k);
  }
  return std::nullopt;
}

absl::Status LlmError(LlmErrorKind kind, std::string_view message,
                      std::optional<int64_t> retry_after_micros) {
  if (kind == LlmErrorKind::kNone) return absl::OkStatus();
  absl::Status status(CodeFor(kind), absl::string_view(message.data(), message.size()));
  status.SetPayload(kKindPayload, absl::Cord(std::string(ErrorKindName(kind))));
  if (retry_after_micros.has_value()) {
    status.SetPayload(kRetryAfterPayload, absl::Cord(std::to_string(*retry_after_micros)));
  }
  return status;
}

LlmErrorKind ErrorKindOf(const absl::Status& status) {
  if (status.ok()) return LlmErrorKind::kNone;
  absl::optional<absl::Cord> payload = status.GetPayload(kKindPayload);
  if (!payload.has_value()) return LlmErrorKind::kNone;
  std::string name(*payload);
  for (LlmErrorKind kind : kAllKinds) {
    if (ErrorKindName(kind) == name) return kind;
  }
  return LlmErrorKind::kNone;
}

std::optional<int64_t> RetryAfterMicrosOf(const absl::Status& status) {
  absl::optional<absl::Cord> payload = status.GetPayload(kRetryAfterPayload);
  int64_t micros = 0;
  if (!payload.has_value() || !absl::SimpleAtoi(std::string(*payload), &micros)) {
    return std::nullopt;
  }
  return micros;
}

absl::Status WithBilledUsage(absl::Status status, const TokenUsage& usage) {
  if (status.ok()) return status;
  status.SetPayload(kBilledUsagePayload,
                    absl::Cord(absl::StrCat(usage.prompt_tokens, " ", usage.completion_tokens, " ",
                                            usage.cached_tokens, " ", usage.cache_write_tokens)));
  return status;
}

std::optional<TokenUsage> BilledUsageOf(const absl::Status& status) {
  absl::optional<absl::Cord> payload = status.GetPayload(kBilledUsagePayload);
  if (!payload.has_value()) return std::nullopt;
  const std::vector<std::string> counts = absl::StrSplit(std::string(*payload), ' ');
  TokenUsage usage;
  int64_t* const fields[] = {&usage.prompt_tokens, &usage.completion_tokens, &usage.cached_tokens,
                             &usage.cache_write_tokens};
  if (counts.size() != std::size(fields)) return std::nullopt;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (!absl::SimpleAtoi(counts[i], fields[i])) return std::nullopt;
  }
  return usage;
}

bool IsRetryable(LlmErrorKind kind) {
  switch (kind) {
    case LlmErrorKind::kRateLimited:
    case LlmErrorKind::kServerError:
    case LlmErrorKind::kConnection:
    case LlmErrorKind::kTimeout:
    case LlmErrorKind::kBadResponse:
      return true;
    default:
      return false;
  }
}

}  // namespace omniforge::llm
