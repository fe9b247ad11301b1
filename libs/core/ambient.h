// What the current thread is working for, beyond the core::Call a piece of
// work receives: the W3C trace context of the span it runs under
// (https://www.w3.org/TR/trace-context/) and the log fields that name the
// turn or call (turn_id, conversation_id, tenant). Every log line written
// under it carries them (logging.h), and outgoing gRPC and HTTP requests
// pass the trace context on (`traceparent`, `tracestate`).
//
// Per thread: a scope sets it for its lifetime and restores the previous one.
// Work handed to another thread carries it: core::ThreadPool and
// core::SideThreads capture the submitter's ambient and run the task under
// it; other hand-overs capture CurrentAmbient() and open a ScopedAmbient.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace omniforge::core {

// The position of a span in a trace: its trace id, its own id and the trace
// flags. All-zero ids mean "none" (no trace).
struct SpanContext {
  std::array<uint8_t, 16> trace_id{};
  std::array<uint8_t, 8> span_id{};
  uint8_t flags = 0;  // bit 0: sampled

  // Both ids set (the W3C spec forbids all-zero ids).
  bool valid() const;
};

// Parses a W3C `traceparent` header value ("00-<32 hex>-<16 hex>-<2 hex>").
// nullopt when it is malformed: wrong length or separators, upper-case or
// non-hex digits, version ff, all-zero trace or span id, or a version-00
// value with trailing data. A later version is read by its first four
// fields, as the spec asks. Never throws.
std::optional<SpanContext> ParseTraceparent(std::string_view header);

// "00-<trace id>-<span id>-<flags>", lower-case hex.
std::string FormatTraceparent(const SpanContext& context);

// Lower-case hex of the ids (32 and 16 characters).
std::string TraceIdHex(const SpanContext& context);
std::string SpanIdHex(const SpanContext& context);

// The fields every log line of a turn or call carries; empty ones are left
// out of the line.
struct LogContext {
  std::string turn_id;
  std::string conversation_id;
  std::string tenant;
};

struct Ambient {
  SpanContext span;                       // invalid: no trace
  std::string tracestate;                 // the caller's `tracestate`, passed on unchanged
  std::shared_ptr<const LogContext> log;  // null: none
};

// The current thread's ambient (an empty one outside any scope).
const Ambient& CurrentAmbient();

// Sets the thread's ambient for its lifetime, restoring the previous one.
class ScopedAmbient final {
 public:
  explicit ScopedAmbient(Ambient ambient);
  ~ScopedAmbient();
  ScopedAmbient(const ScopedAmbient&) = delete;
  ScopedAmbient& operator=(const ScopedAmbient&) = delete;

 private:
  Ambient previous_;
};

// Replaces only the log fields (the trace context stays), for a scope.
class ScopedLogContext final {
 public:
  explicit ScopedLogContext(LogContext log);

 private:
  ScopedAmbient scope_;
};

}  // namespace omniforge::core
