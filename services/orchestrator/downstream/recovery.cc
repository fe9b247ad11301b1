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

Failure ClassifyToolError(const nlohmann::json& result) {
  if (!result.is_object()) return Failure::kPermanent;
  const auto error = result.find("error");
  if (error == result.end() || !error->is_object()) return Failure::kPermanent;
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
