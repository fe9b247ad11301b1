// How a turn's failures are filed in the error log (error_log.h): the kind
// of an error event, and the part of the system the stage it happened in
// was waiting for.
#pragma once

#include <string>

#include "omniforge/orchestrator/v1/chat_service.pb.h"

namespace omniforge::orchestrator {

// The error log's kind of an error event; empty for what is not a failure
// of the orchestration (a cancel is the user's choice).
std::string ErrorKind(::omniforge::orchestrator::v1::ChatErrorCode code);

// The part of the system an error log row blames (TurnError::component):
// the turn itself for its guardrails, else the service or store that the
// turn's step `stage` was waiting for.
std::string ErrorComponent(const std::string& kind, const std::string& stage);

}  // namespace omniforge::orchestrator
