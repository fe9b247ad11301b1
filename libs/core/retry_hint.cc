#include "libs/core/retry_hint.h"

#include <cstdint>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace omniforge::core {

absl::Status WithRetryAfter(absl::Status status, std::chrono::milliseconds after) {
  status.SetPayload(kRetryInfoTypeUrl, absl::Cord(absl::StrCat(after.count())));
  return status;
}

std::optional<std::chrono::milliseconds> RetryAfter(const absl::Status& status) {
  const auto payload = status.GetPayload(kRetryInfoTypeUrl);
  int64_t millis = 0;
  if (!payload || !absl::SimpleAtoi(std::string(*payload), &millis) || millis < 0) {
    return std::nullopt;
  }
  return std::chrono::milliseconds(millis);
}

}  // namespace omniforge::core
