// How a turn's failures are named: the reason and retryable flag its error
// event carries to the client (documented in docs/api.md, "Errors"), and,
// for the error log (error_log.h), the kind of an error event and the part
// of the system the stage it happened in was waiting for.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "omniforge/orchestrator/v1/chat_service.pb.h"

namespace omniforge::orchestrator {

// What an error event with one code says to a program.
struct ErrorEventReason {
  ::omniforge::orchestrator::v1::ChatErrorCode code;
  // ErrorEvent.reason: UPPER_SNAKE_CASE.
  std::string_view reason;
  // ErrorEvent.retryable: sending the same message later may succeed.
  bool retryable;
};

// One entry per ChatErrorCode but UNSPECIFIED. Thread-safe (constant).
std::span<const ErrorEventReason> ErrorEventReasons();

// The entry of `code`; INTERNAL's for a code without one.
const ErrorEventReason& ErrorEventReasonOf(::omniforge::orchestrator::v1::ChatErrorCode code);

// The error log's kind of an error event; empty for what is not a failure
// of the orchestration (a cancel is the user's choice).
std::string ErrorKind(::omniforge::orchestrator::v1::ChatErrorCode code);

// The part of the system an error log row blames (TurnError::component):
// the turn itself for its guardrails, else the service or store that the
// turn's step `stage` was waiting for.
std::string ErrorComponent(const std::string& kind, const std::string& stage);

}  // namespace omniforge::orchestrator
