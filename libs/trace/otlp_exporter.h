// Sends finished spans to an OpenTelemetry collector: OTLP over HTTP with
// the JSON encoding (POST <endpoint>/v1/traces), in batches, from one
// background thread. The queue is bounded: a span finished while it is full
// is dropped, as is a batch the collector does not accept (it is not
// retried), and both are counted (omniforge_trace_spans_dropped_total
// {reason}). Export never blocks the span's thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "libs/trace/span.h"

namespace omniforge::trace {

struct OtlpOptions {
  // The collector's OTLP/HTTP base address, e.g. "http://127.0.0.1:4318";
  // "/v1/traces" is appended unless it already ends with it.
  std::string endpoint;
  std::string service_name;  // the `service.name` resource attribute
  size_t max_queue_spans = 2048;
  size_t max_batch_spans = 512;
  std::chrono::milliseconds flush_interval{1000};
  std::chrono::milliseconds export_timeout{3000};
};

// The OTLP/JSON body (ExportTraceServiceRequest) for `spans`. Exposed for tests.
std::string OtlpJson(const std::vector<SpanRecord>& spans, const std::string& service_name);

class OtlpHttpExporter final : public SpanExporter {
 public:
  // Starts the sending thread.
  explicit OtlpHttpExporter(OtlpOptions options);
  // Sends what is queued (each request bounded by export_timeout), then stops.
  ~OtlpHttpExporter() override;
  OtlpHttpExporter(const OtlpHttpExporter&) = delete;
  OtlpHttpExporter& operator=(const OtlpHttpExporter&) = delete;

  void Export(SpanRecord record) override;

  // Waits until every span queued before the call was sent or dropped, or
  // `timeout` passed; false on timeout.
  bool Flush(std::chrono::milliseconds timeout);

  uint64_t exported() const;
  uint64_t dropped() const;

 private:
  void Run();
  // POSTs one batch; false when the collector did not accept it.
  bool Send(const std::vector<SpanRecord>& batch) const;

  const OtlpOptions options_;
  const std::string url_;
  mutable absl::Mutex mu_;
  absl::CondVar wake_;
  std::deque<SpanRecord> queue_ ABSL_GUARDED_BY(mu_);
  uint64_t queued_total_ ABSL_GUARDED_BY(mu_) = 0;  // spans ever queued
  uint64_t done_total_ ABSL_GUARDED_BY(mu_) = 0;    // of those, sent or dropped
  uint64_t exported_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
  bool flush_now_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread sender_;
};

}  // namespace omniforge::trace
