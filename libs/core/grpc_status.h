// Conversion between absl::Status (used inside services) and grpc::Status
// (on the wire). The codes are numerically identical. The payloads of
// retry_hint.h and error_reason.h travel as google.rpc.Status details
// (RetryInfo, ErrorInfo, BadRequest) in grpc-status-details-bin, both ways.
#pragma once

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace omniforge::core {

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace omniforge::core
