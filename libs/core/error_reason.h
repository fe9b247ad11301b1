// Why a call failed, in a form a program can act on: a stable reason
// (UPPER_SNAKE_CASE, from the list in error_catalog.h) with metadata, and
// the request fields at fault. Carried in an absl::Status as payloads, like
// the retry hint (retry_hint.h), from the code that refuses to the gRPC
// layer, which sends them as google.rpc.ErrorInfo and google.rpc.BadRequest
// in the status details (core::ToGrpcStatus) and reads them back
// (core::FromGrpcStatus).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace omniforge::core {

inline constexpr char kErrorInfoTypeUrl[] = "type.googleapis.com/google.rpc.ErrorInfo";
inline constexpr char kBadRequestTypeUrl[] = "type.googleapis.com/google.rpc.BadRequest";
// The ErrorInfo domain of every reason this project sends.
inline constexpr char kErrorDomain[] = "omniforge.dev";

// A request field at fault: its path in the request message (`message`,
// `decision.arguments_json`) and what is wrong with it.
struct FieldViolation {
  std::string field;
  std::string description;

  friend bool operator==(const FieldViolation&, const FieldViolation&) = default;
};

// `status` with `reason` and its metadata (replacing any reason it had);
// OK stays OK. Reasons and metadata keys must not hold a newline or '='.
absl::Status WithReason(absl::Status status, std::string_view reason,
                        const std::map<std::string, std::string>& metadata = {});
// The reason `status` carries; empty when none.
std::string ReasonOf(const absl::Status& status);
// The metadata of that reason; empty when none.
std::map<std::string, std::string> ReasonMetadataOf(const absl::Status& status);

// `status` with one more field violation; OK stays OK.
absl::Status WithFieldViolation(absl::Status status, std::string_view field,
                                std::string_view description);
// The field violations `status` carries, in the order they were added.
std::vector<FieldViolation> FieldViolationsOf(const absl::Status& status);

// INVALID_ARGUMENT "<field>: <description>" with `reason` and the field
// violation, the shape every request check returns.
absl::Status InvalidField(std::string_view field, std::string_view reason,
                          std::string_view description);

}  // namespace omniforge::core
