#include "cli/rpc_error.h"

#include <iostream>

#include "absl/status/status.h"

namespace omniforge::cli {

std::string DescribeRpcError(const grpc::Status& status) {
  // gRPC and absl share the numeric codes; absl has their names.
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code())) + ": " +
         status.error_message();
}

int ReportRpcError(const grpc::Status& status) {
  if (status.ok()) return 0;
  std::cerr << "error: " << DescribeRpcError(status) << "\n";
  return 1;
}

}  // namespace omniforge::cli
