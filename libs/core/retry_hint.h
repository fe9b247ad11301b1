// When a refused call is worth trying again: a hint carried in an
// absl::Status (as a payload, decimal milliseconds) from the code that
// refuses to the gRPC layer, which sends it as google.rpc.RetryInfo in the
// status details (core::ToGrpcStatus) and names it in the message.
#pragma once

#include <chrono>
#include <optional>

#include "absl/status/status.h"

namespace omniforge::core {

inline constexpr char kRetryInfoTypeUrl[] = "type.googleapis.com/google.rpc.RetryInfo";

// `status` with the hint `after` (not for OK).
absl::Status WithRetryAfter(absl::Status status, std::chrono::milliseconds after);
// The hint `status` carries; nullopt when none.
std::optional<std::chrono::milliseconds> RetryAfter(const absl::Status& status);

}  // namespace omniforge::core
