#include "libs/core/error_catalog.h"

#include <chrono>

#include "libs/core/error_reason.h"
#include "libs/core/retry_hint.h"

namespace omniforge::core {
namespace {

using Code = absl::StatusCode;

// The hint sent with a retryable refusal that named no delay of its own.
constexpr std::chrono::milliseconds kDefaultRetryAfter{1000};

constexpr ErrorReasonEntry kReasons[] = {
    {kReasonApiKeyMissing, Code::kUnauthenticated, false},
    {kReasonApiKeyInvalid, Code::kUnauthenticated, false},
    {kReasonApiKeyExpired, Code::kUnauthenticated, false},
    {kReasonRateLimited, Code::kResourceExhausted, true},
    {kReasonTooManyTurns, Code::kResourceExhausted, true},
    {kReasonBudgetExhausted, Code::kResourceExhausted, true},
    {kReasonServerBusy, Code::kResourceExhausted, true},
    {kReasonRequestMalformed, Code::kInvalidArgument, false},
    {kReasonInvalidUtf8, Code::kInvalidArgument, false},
    {kReasonFieldRequired, Code::kInvalidArgument, false},
    {kReasonFieldInvalid, Code::kInvalidArgument, false},
    {kReasonFieldTooLarge, Code::kInvalidArgument, false},
    {kReasonConversationNotFound, Code::kNotFound, false},
    {kReasonTurnInProgress, Code::kAborted, true},
    {kReasonTurnNotFound, Code::kNotFound, false},
    {kReasonResumeSeqOutOfRange, Code::kOutOfRange, false},
    {kReasonResumeEventsDropped, Code::kFailedPrecondition, true},
    {kReasonStorageUnavailable, Code::kUnavailable, true},
    {kReasonStorageBacklogFull, Code::kResourceExhausted, true},
    // The general reasons, one per code: failures passed on from a service
    // behind the API.
    {"CANCELLED", Code::kCancelled, false},
    {"UNKNOWN_ERROR", Code::kUnknown, false},
    {"DEADLINE_EXCEEDED", Code::kDeadlineExceeded, true},
    {"NOT_FOUND", Code::kNotFound, false},
    {"ALREADY_EXISTS", Code::kAlreadyExists, false},
    {"PERMISSION_DENIED", Code::kPermissionDenied, false},
    {"FAILED_PRECONDITION", Code::kFailedPrecondition, false},
    {"ABORTED", Code::kAborted, true},
    {"OUT_OF_RANGE", Code::kOutOfRange, false},
    {"UNIMPLEMENTED", Code::kUnimplemented, false},
    {"INTERNAL_ERROR", Code::kInternal, false},
    {"SERVICE_UNAVAILABLE", Code::kUnavailable, true},
    {"DATA_LOSS", Code::kDataLoss, false},
};

}  // namespace

std::span<const ErrorReasonEntry> ErrorReasons() { return kReasons; }

const ErrorReasonEntry* FindErrorReason(std::string_view reason) {
  for (const ErrorReasonEntry& entry : kReasons) {
    if (entry.reason == reason) return &entry;
  }
  return nullptr;
}

std::string_view GeneralReason(absl::StatusCode code) {
  switch (code) {
    case Code::kInvalidArgument:
      return kReasonFieldInvalid;
    case Code::kResourceExhausted:
      return kReasonServerBusy;
    case Code::kUnauthenticated:
      return kReasonApiKeyInvalid;
    default:
      break;
  }
  // The general reasons follow the specific ones: the last entry of a code is its own.
  std::string_view general = "UNKNOWN_ERROR";
  for (const ErrorReasonEntry& entry : kReasons) {
    if (entry.code == code) general = entry.reason;
  }
  return general;
}

absl::Status Classified(absl::Status status) {
  if (status.ok()) return status;
  const Code code = status.code();
  const ErrorReasonEntry* own = FindErrorReason(ReasonOf(status));
  if (own == nullptr || own->code != code) {
    status = WithReason(std::move(status), GeneralReason(code));
  }
  const bool hinted =
      code == Code::kResourceExhausted || code == Code::kUnavailable || code == Code::kAborted;
  if (hinted && !RetryAfter(status)) status = WithRetryAfter(std::move(status), kDefaultRetryAfter);
  return status;
}

}  // namespace omniforge::core
