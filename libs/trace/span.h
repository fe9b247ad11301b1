// Spans: the timed, named pieces of work a trace is made of. A span is
// recorded only while an exporter is installed (InstallExporter, done once
// at start-up from the `tracing.*` configuration); otherwise Span::Start
// returns an inactive span at the cost of one atomic load: no ids, no
// allocation, and the thread's trace context stays as it was.
//
// Spans nest through the thread's ambient (libs/core/ambient.h): a
// ScopedSpan makes its span the current one, so spans started inside it,
// and the `traceparent` of requests sent inside it, are its children.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "libs/core/ambient.h"

namespace omniforge::trace {

// OTLP's SpanKind numbers.
enum class SpanKind { kInternal = 1, kServer = 2, kClient = 3 };

// A finished span, as an exporter receives it.
struct SpanRecord {
  core::SpanContext context;
  std::array<uint8_t, 8> parent_span_id{};  // all zero: a root span
  std::string name;
  SpanKind kind = SpanKind::kInternal;
  int64_t start_unix_nanos = 0;
  int64_t end_unix_nanos = 0;
  std::vector<std::pair<std::string, std::string>> attributes;
  bool error = false;
  std::string status_message;  // set with `error`
};

// Receives every finished span. Export must not block (queue and return)
// and is called from any thread.
class SpanExporter {
 public:
  virtual ~SpanExporter() = default;
  virtual void Export(SpanRecord record) = 0;
};

// Installs the process's exporter (nullptr: tracing off). Spans started
// before keep the exporter they started with. Thread-safe.
void InstallExporter(std::shared_ptr<SpanExporter> exporter);

// Tracing is on (an exporter is installed).
bool Enabled();

class Span final {
 public:
  Span() = default;  // inactive
  Span(Span&& other) noexcept = default;
  Span& operator=(Span&& other) noexcept;
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;
  ~Span() { End(); }

  // A child of the thread's current span, or the first span of a new trace
  // when there is none. Inactive when tracing is off.
  static Span Start(std::string_view name, SpanKind kind = SpanKind::kInternal);
  // A child of `parent` (a caller's context from its traceparent; invalid:
  // a new trace). Inactive when tracing is off.
  static Span StartUnder(std::string_view name, SpanKind kind, const core::SpanContext& parent);

  bool active() const { return record_ != nullptr; }
  // The span's context (invalid when inactive).
  core::SpanContext context() const;
  // No-ops on an inactive span.
  void SetAttribute(std::string_view key, std::string_view value);
  void SetError(std::string_view message);
  // Records the end time and hands the span to the exporter; later calls
  // do nothing.
  void End();

 private:
  std::unique_ptr<SpanRecord> record_;
  std::shared_ptr<SpanExporter> exporter_;
};

// A span that is the thread's current one for the scope (its children and
// outgoing requests see it); ends when the scope does.
class ScopedSpan final {
 public:
  explicit ScopedSpan(std::string_view name, SpanKind kind = SpanKind::kInternal);
  // Under a caller's context (server side): the trace context, active or
  // not, becomes the thread's, so that it is passed on even with tracing off.
  ScopedSpan(std::string_view name, SpanKind kind, const core::SpanContext& parent,
             std::string tracestate);
  ScopedSpan(const ScopedSpan&) = delete;
  ScopedSpan& operator=(const ScopedSpan&) = delete;

  Span& span() { return span_; }

 private:
  Span span_;
  std::optional<core::ScopedAmbient> current_;
};

}  // namespace omniforge::trace
