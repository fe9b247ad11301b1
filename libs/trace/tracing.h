// Tracing for a service process, from its `tracing.*` configuration
// (docs/observability.md): with `tracing.otlp_endpoint` set, spans are
// exported to that OTLP/HTTP collector; unset, tracing is off and costs
// nothing but an atomic load per would-be span.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "libs/core/config.h"
#include "libs/trace/otlp_exporter.h"

namespace omniforge::trace {

// Reads tracing.otlp_endpoint, tracing.service_name (default
// `service_name`), tracing.max_queue_spans, tracing.max_batch_spans,
// tracing.flush_interval_ms and tracing.export_timeout_ms.
// INVALID_ARGUMENT when the endpoint is set but is not an http:// or
// https:// address, or the batch is larger than the queue.
absl::StatusOr<OtlpOptions> ReadTracingOptions(core::ConfigReader& config,
                                               const std::string& service_name);

// Tracing for the life of the object: installs an OTLP exporter when
// `options.endpoint` is set (nothing otherwise); on destruction uninstalls
// it and sends what is queued.
class ProcessTracing final {
 public:
  explicit ProcessTracing(const OtlpOptions& options);
  ~ProcessTracing();
  ProcessTracing(const ProcessTracing&) = delete;
  ProcessTracing& operator=(const ProcessTracing&) = delete;

  bool enabled() const { return exporter_ != nullptr; }

 private:
  std::shared_ptr<OtlpHttpExporter> exporter_;
};

}  // namespace omniforge::trace
