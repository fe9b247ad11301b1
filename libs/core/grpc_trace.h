// W3C trace context in gRPC metadata (`traceparent`, `tracestate`): read
// from an incoming call, attached to an outgoing one. Include only from a
// service's gRPC layer (.cc files): it pulls in grpcpp.
#pragma once

#include <grpcpp/client_context.h>
#include <grpcpp/server_context.h>

#include <string>

#include "libs/core/ambient.h"

namespace omniforge::core {

// The caller's trace context. A missing or malformed `traceparent` gives
// an invalid context (the call starts a new trace), never an error.
struct IncomingTrace {
  SpanContext parent;
  std::string tracestate;  // passed on only with a valid parent
};
IncomingTrace TraceFromContext(const grpc::ServerContextBase& context);

// Adds `traceparent` (and `tracestate`, when the thread's ambient has one)
// for the thread's current span; nothing outside a trace.
void AttachTrace(grpc::ClientContext& context);

}  // namespace omniforge::core
