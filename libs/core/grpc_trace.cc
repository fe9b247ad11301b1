#include "libs/core/grpc_trace.h"

#include <optional>

namespace omniforge::core {
namespace {

// The W3C spec bounds tracestate at 32 list members; 512 bytes is the
// length a vendor must at least propagate.
constexpr size_t kMaxTracestate = 512;

}  // namespace

IncomingTrace TraceFromContext(const grpc::ServerContextBase& context) {
  IncomingTrace incoming;
  const auto& metadata = context.client_metadata();
  auto parent = metadata.find("traceparent");
  if (parent == metadata.end()) return incoming;
  std::optional<SpanContext> parsed =
      ParseTraceparent(std::string_view(parent->second.data(), parent->second.size()));
  if (!parsed) return incoming;
  incoming.parent = *parsed;
  auto state = metadata.find("tracestate");
  if (state != metadata.end() && state->second.size() <= kMaxTracestate) {
    incoming.tracestate.assign(state->second.data(), state->second.size());
  }
  return incoming;
}

void AttachTrace(grpc::ClientContext& context) {
  const Ambient& ambient = CurrentAmbient();
  if (!ambient.span.valid()) return;
  context.AddMetadata("traceparent", FormatTraceparent(ambient.span));
  if (!ambient.tracestate.empty()) context.AddMetadata("tracestate", ambient.tracestate);
}

}  // namespace omniforge::core
