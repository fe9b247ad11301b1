#include "libs/trace/span.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>

#include "absl/synchronization/mutex.h"

namespace omniforge::trace {
namespace {

struct Installed {
  absl::Mutex mu;
  std::shared_ptr<SpanExporter> exporter ABSL_GUARDED_BY(mu);
  std::atomic<bool> enabled{false};
};

Installed& Global() {
  static auto* const installed = new Installed();  // never destroyed
  return *installed;
}

std::shared_ptr<SpanExporter> CurrentExporter() {
  Installed& installed = Global();
  absl::MutexLock lock(&installed.mu);
  return installed.exporter;
}

int64_t NowUnixNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

template <size_t N>
void FillRandom(std::array<uint8_t, N>& bytes) {
  thread_local std::mt19937_64 random{std::random_device{}()};
  for (size_t i = 0; i < N; i += 8) {
    uint64_t word = random();
    for (size_t j = i; j < i + 8 && j < N; ++j, word >>= 8) bytes[j] = static_cast<uint8_t>(word);
  }
}

// Random bytes, not all zero (an all-zero id means "none").
template <size_t N>
void FillNonZero(std::array<uint8_t, N>& bytes) {
  do {
    FillRandom(bytes);
  } while (std::all_of(bytes.begin(), bytes.end(), [](uint8_t b) { return b == 0; }));
}

}  // namespace

void InstallExporter(std::shared_ptr<SpanExporter> exporter) {
  Installed& installed = Global();
  absl::MutexLock lock(&installed.mu);
  installed.enabled = exporter != nullptr;
  installed.exporter = std::move(exporter);
}

bool Enabled() { return Global().enabled.load(std::memory_order_relaxed); }

Span& Span::operator=(Span&& other) noexcept {
  if (this != &other) {
    End();
    record_ = std::move(other.record_);
    exporter_ = std::move(other.exporter_);
  }
  return *this;
}

Span Span::Start(std::string_view name, SpanKind kind) {
  if (!Enabled()) return Span();
  return StartUnder(name, kind, core::CurrentAmbient().span);
}

Span Span::StartUnder(std::string_view name, SpanKind kind, const core::SpanContext& parent) {
  if (!Enabled()) return Span();
  Span span;
  span.exporter_ = CurrentExporter();
  if (span.exporter_ == nullptr) return Span();
  span.record_ = std::make_unique<SpanRecord>();
  SpanRecord& record = *span.record_;
  if (parent.valid()) {
    record.context.trace_id = parent.trace_id;
    record.parent_span_id = parent.span_id;
  } else {
    FillNonZero(record.context.trace_id);
  }
  FillNonZero(record.context.span_id);
  record.context.flags = 0x01;  // sampled: every span is recorded
  record.name = std::string(name);
  record.kind = kind;
  record.start_unix_nanos = NowUnixNanos();
  return span;
}

core::SpanContext Span::context() const {
  return record_ != nullptr ? record_->context : core::SpanContext{};
}

void Span::SetAttribute(std::string_view key, std::string_view value) {
  if (record_ == nullptr) return;
  record_->attributes.emplace_back(std::string(key), std::string(value));
}

void Span::SetError(std::string_view message) {
  if (record_ == nullptr) return;
  record_->error = true;
  record_->status_message = std::string(message);
}

void Span::End() {
  if (record_ == nullptr) return;
  record_->end_unix_nanos = NowUnixNanos();
  std::unique_ptr<SpanRecord> record = std::move(record_);
  exporter_->Export(std::move(*record));
  exporter_.reset();
}

namespace {
core::Ambient AmbientOf(const Span& span, std::string tracestate) {
  core::Ambient ambient = core::CurrentAmbient();
  ambient.span = span.context();
  ambient.tracestate = std::move(tracestate);
  return ambient;
}
}  // namespace

ScopedSpan::ScopedSpan(std::string_view name, SpanKind kind) : span_(Span::Start(name, kind)) {
  if (span_.active()) current_.emplace(AmbientOf(span_, core::CurrentAmbient().tracestate));
}

ScopedSpan::ScopedSpan(std::string_view name, SpanKind kind, const core::SpanContext& parent,
                       std::string tracestate)
    : span_(Span::StartUnder(name, kind, parent)) {
  if (span_.active()) {
    current_.emplace(AmbientOf(span_, std::move(tracestate)));
  } else if (parent.valid()) {
    core::Ambient ambient = core::CurrentAmbient();
    ambient.span = parent;
    ambient.tracestate = std::move(tracestate);
    current_.emplace(std::move(ambient));
  }
}

}  // namespace omniforge::trace
