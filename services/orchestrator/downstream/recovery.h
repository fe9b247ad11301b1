// What to do about a failed call to another service or a tool. A temporary
// failure (the service is down or overloaded, the call timed out, a rate
// limit) may succeed when tried again a moment later; a permanent one (not
// found, forbidden, invalid, not implemented) fails the same way each time,
// so trying again only wastes the turn's time. MCP servers' JSON-RPC errors
// and HTTP statuses reach the orchestrator as the executor's gRPC codes
// (libs/mcp maps them: 429 RESOURCE_EXHAUSTED, 408 and 5xx UNAVAILABLE);
// a tool that ran and reported a failure names its own code in its result.
//
// Pure functions: no I/O, thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "absl/status/status.h"
#include "libs/llm/retry.h"

namespace omniforge::orchestrator {

enum class Failure { kTemporary, kPermanent };

// "temporary" / "permanent" (logs and metrics).
std::string_view FailureName(Failure failure);

// UNAVAILABLE, RESOURCE_EXHAUSTED, ABORTED and DEADLINE_EXCEEDED are
// temporary; every other code is permanent (OK included: nothing to retry).
Failure ClassifyStatus(absl::StatusCode code);

// 408, 425, 429 and 5xx are temporary; everything else is permanent.
Failure ClassifyHttpStatus(int status);

// A tool's error result `{"error": {"code": ..., "message": ...}}`, or an
// MCP tool's, whose structuredContent carries that error (under
// `structured_content` as the executor passes it on, or `data` for a domain
// tool):
// temporary when its code names a temporary status ("unavailable",
// "resource_exhausted", "aborted", "deadline_exceeded", "timeout",
// "rate_limited", in any case) or is a temporary HTTP status (a number or
// its digits); permanent otherwise, and for anything not shaped so.
Failure ClassifyToolError(const nlohmann::json& result);

// Whether a failed call is tried again: when its failure is temporary,
// fewer than `policy.max_attempts` attempts were made, and the wait before
// the next one (`wait`) ends before `time_left` does, with room for the
// attempt itself (`attempt_room`).
bool ShouldRetry(const llm::RetryPolicy& policy, Failure failure, int attempts_made,
                 std::chrono::microseconds wait, std::chrono::microseconds time_left,
                 std::chrono::microseconds attempt_room);

}  // namespace omniforge::orchestrator
