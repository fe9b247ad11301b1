// How the CLI reports a failed call: the gRPC code by name, the server's
// message and the reason of its status details, so a script and a person
// both see what went wrong.
#pragma once

#include <grpcpp/support/status.h>

#include <string>

namespace omniforge::cli {

// "UNAUTHENTICATED: invalid API key [API_KEY_INVALID]" (no brackets when
// the status carries no reason).
std::string DescribeRpcError(const grpc::Status& status);

// Prints "error: <DescribeRpcError>" to stderr when `status` is not OK.
// Returns 0 when OK, else 1 (the CLI's exit code for a failed call).
int ReportRpcError(const grpc::Status& status);

}  // namespace omniforge::cli
