// The documented list of error reasons (docs/api.md, "Errors"): every
// reason a public call can fail with, its gRPC code and whether the same
// call may succeed later. Code that refuses names a specific reason
// (core::WithReason, core::InvalidField); Classified fills in the general
// reason of the code for failures passed on from elsewhere.
#pragma once

#include <span>
#include <string_view>

#include "absl/status/status.h"

namespace omniforge::core {

inline constexpr char kReasonApiKeyMissing[] = "API_KEY_MISSING";
inline constexpr char kReasonApiKeyInvalid[] = "API_KEY_INVALID";
inline constexpr char kReasonApiKeyExpired[] = "API_KEY_EXPIRED";
inline constexpr char kReasonRateLimited[] = "RATE_LIMITED";
inline constexpr char kReasonTooManyTurns[] = "TOO_MANY_TURNS";
inline constexpr char kReasonBudgetExhausted[] = "BUDGET_EXHAUSTED";
inline constexpr char kReasonServerBusy[] = "SERVER_BUSY";
inline constexpr char kReasonRequestMalformed[] = "REQUEST_MALFORMED";
inline constexpr char kReasonInvalidUtf8[] = "INVALID_UTF8";
inline constexpr char kReasonFieldRequired[] = "FIELD_REQUIRED";
inline constexpr char kReasonFieldInvalid[] = "FIELD_INVALID";
inline constexpr char kReasonFieldTooLarge[] = "FIELD_TOO_LARGE";
inline constexpr char kReasonConversationNotFound[] = "CONVERSATION_NOT_FOUND";
inline constexpr char kReasonTurnInProgress[] = "TURN_IN_PROGRESS";
inline constexpr char kReasonTurnNotFound[] = "TURN_NOT_FOUND";
inline constexpr char kReasonResumeSeqOutOfRange[] = "RESUME_SEQ_OUT_OF_RANGE";
inline constexpr char kReasonResumeEventsDropped[] = "RESUME_EVENTS_DROPPED";
inline constexpr char kReasonStorageUnavailable[] = "STORAGE_UNAVAILABLE";
inline constexpr char kReasonStorageBacklogFull[] = "STORAGE_BACKLOG_FULL";

// One documented reason.
struct ErrorReasonEntry {
  std::string_view reason;
  absl::StatusCode code;
  // Whether the same call may succeed later (after the RetryInfo delay when
  // one is sent).
  bool retryable;
};

// Every documented reason, the specific ones first, then one general
// reason per code. Thread-safe (constant).
std::span<const ErrorReasonEntry> ErrorReasons();

// The entry of `reason`; null when it is not documented.
const ErrorReasonEntry* FindErrorReason(std::string_view reason);

// The general reason of a failure with `code` (not OK) and no reason of its own.
std::string_view GeneralReason(absl::StatusCode code);

// `status` as a public call returns it: with a documented reason (its own
// when it carries one whose code matches, else the code's general reason)
// and, for RESOURCE_EXHAUSTED, UNAVAILABLE and ABORTED, a retry hint (1 s
// when it carries none). OK stays OK.
absl::Status Classified(absl::Status status);

}  // namespace omniforge::core
