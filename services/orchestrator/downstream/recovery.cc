#include "services/orchestrator/downstream/recovery.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"

namespace omniforge::orchestrator {

std::string_view FailureName(Failure failure) {
  return failure == Failure::kTemporary ? "temporary" : "permanent";
}

Failure ClassifyStatus(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kDeadlineExceeded:
      return Failure::kTemporary;
    default:
      return Failure::kPermanent;
  }
}

Failure ClassifyHttpStatus(int status) {
  if (status == 408 || status == 425 || status == 429 || (status >= 500 && status <= 599)) {
    return Failure::kTemporary;
  }
  return Failure::kPermanent;
}

namespace {

// The `error` object of a tool's result: its own, or the one an MCP tool
// put in its structuredContent (the executor's `structured_content`; a
// domain tool's `data`). Null when there is none.
const nlohmann::json* ErrorObjectOf(const nlohmann::json& result) {
  if (!result.is_object()) return nullptr;
  const auto error = result.find("error");
  if (error != result.end()) return error->is_object() ? &*error : nullptr;
  for (const char* wrapper : {"structured_content", "data"}) {
    const auto inner = result.find(wrapper);
    if (inner == result.end() || !inner->is_object()) continue;
    const auto nested = inner->find("error");
    if (nested != inner->end() && nested->is_object()) return &*nested;
  }
  return nullptr;
}

}  // namespace

Failure ClassifyToolError(const nlohmann::json& result) {
  const nlohmann::json* error = ErrorObjectOf(result);
  if (error == nullptr) return Failure::kPermanent;
  const auto code = error->find("code");
  if (code == error->end()) return Failure::kPermanent;
  if (code->is_number_integer()) return ClassifyHttpStatus(code->get<int>());
  if (!code->is_string()) return Failure::kPermanent;
  const std::string name = absl::AsciiStrToLower(code->get<std::string>());
  int http = 0;
  if (absl::SimpleAtoi(name, &http)) return ClassifyHttpStatus(http);
  for (const char* temporary : {"unavailable", "resource_exhausted", "aborted", "deadline_exceeded",
                                "timeout", "rate_limited"}) {
    if (name == temporary) return Failure::kTemporary;
  }
  return Failure::kPermanent;
}

bool ShouldRetry(const llm::RetryPolicy& policy, Failure failure, int attempts_made,
                 std::chrono::microseconds wait, std::chrono::microseconds time_left,
                 std::chrono::microseconds attempt_room) {
  return failure == Failure::kTemporary && attempts_made < policy.max_attempts &&
         wait + attempt_room < time_left;
}

}  // namespace omniforge::orchestrator
