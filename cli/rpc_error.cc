#include "cli/rpc_error.h"

#include <iostream>

#include "absl/status/status.h"
#include "libs/core/error_reason.h"
#include "libs/core/grpc_status.h"

namespace omniforge::cli {

std::string DescribeRpcError(const grpc::Status& status) {
  // gRPC and absl share the numeric codes; absl has their names.
  std::string text = absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code())) +
                     ": " + status.error_message();
  // The ErrorInfo reason of the status details, for scripts to match on.
  const std::string reason = core::ReasonOf(core::FromGrpcStatus(status));
  if (!reason.empty()) text += " [" + reason + "]";
  return text;
}

int ReportRpcError(const grpc::Status& status) {
  if (status.ok()) return 0;
  std::cerr << "error: " << DescribeRpcError(status) << "\n";
  return 1;
}

}  // namespace omniforge::cli
