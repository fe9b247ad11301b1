// Conventional gRPC metrics for every server and client of the process, in
// the names and labels dashboards for gRPC services expect
// (grpc_server_started_total, grpc_server_handled_total{grpc_code},
// grpc_server_handling_seconds, grpc_server_msg_{received,sent}_total and
// the same for clients, labelled grpc_type, grpc_service, grpc_method), as
// gRPC interceptors: no handler records them itself.
#pragma once

#include <grpcpp/support/client_interceptor.h>
#include <grpcpp/support/server_interceptor.h>
#include <grpcpp/support/status.h>

#include <memory>
#include <string>
#include <vector>

#include "libs/core/metrics.h"

namespace omniforge::core {

// The status code as the conventional metrics spell it: "OK", "NotFound",
// "ResourceExhausted", ...
const char* GrpcCodeLabel(grpc::StatusCode code);

// Counts every RPC the server handles (ServiceServer installs it).
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> MakeServerMetricsFactory(
    MetricsRegistry& registry = MetricsRegistry::Global());

// Counts every RPC made on a channel created with it (CreateServiceChannel).
std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>>
ClientMetricsInterceptors(MetricsRegistry& registry = MetricsRegistry::Global());

}  // namespace omniforge::core
