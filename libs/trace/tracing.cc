#include "libs/trace/tracing.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "libs/core/logging.h"

namespace omniforge::trace {

absl::StatusOr<OtlpOptions> ReadTracingOptions(core::ConfigReader& config,
                                               const std::string& service_name) {
  OtlpOptions options;
  options.endpoint = config.String("tracing.otlp_endpoint", "");
  options.service_name = config.String("tracing.service_name", service_name);
  options.max_queue_spans =
      static_cast<size_t>(config.Int("tracing.max_queue_spans", 2048, 1, 1 << 20));
  options.max_batch_spans =
      static_cast<size_t>(config.Int("tracing.max_batch_spans", 512, 1, 1 << 16));
  options.flush_interval =
      std::chrono::milliseconds(config.Int("tracing.flush_interval_ms", 1000, 10, 600'000));
  options.export_timeout =
      std::chrono::milliseconds(config.Int("tracing.export_timeout_ms", 3000, 100, 60'000));
  if (!options.endpoint.empty() && !absl::StartsWith(options.endpoint, "http://") &&
      !absl::StartsWith(options.endpoint, "https://")) {
    return absl::InvalidArgumentError(
        absl::StrCat("tracing.otlp_endpoint must be an http:// or https:// address of an OTLP/HTTP "
                     "collector (e.g. http://127.0.0.1:4318), not \"",
                     options.endpoint, "\""));
  }
  if (options.max_batch_spans > options.max_queue_spans) {
    return absl::InvalidArgumentError(
        "tracing.max_batch_spans must not be larger than tracing.max_queue_spans");
  }
  return options;
}

ProcessTracing::ProcessTracing(const OtlpOptions& options) {
  if (options.endpoint.empty()) return;
  exporter_ = std::make_shared<OtlpHttpExporter>(options);
  InstallExporter(exporter_);
  core::LogInfo("tracing on", {{"component", "tracing"}, {"endpoint", options.endpoint}});
}

ProcessTracing::~ProcessTracing() {
  if (exporter_ == nullptr) return;
  InstallExporter(nullptr);
  exporter_->Flush(std::chrono::seconds(5));
}

}  // namespace omniforge::trace
