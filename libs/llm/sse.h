// An incremental Server-Sent Events parser (WHATWG HTML "event stream
// interpretation"): the providers stream their answers as SSE, and the bytes
// arrive in pieces cut anywhere, even between the CR and LF of a line end.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace omniforge::llm {

// One dispatched event. `type` is the last `event:` field, "message" when
// there was none; `data` is the `data:` lines joined with "\n".
struct SseEvent {
  std::string type;
  std::string data;

  friend bool operator==(const SseEvent&, const SseEvent&) = default;
};

// An event still incomplete when the stream ends is never dispatched, as the
// spec requires, so a cut stream cannot yield a truncated event. `id:` and
// `retry:` are kept for a client that resumes a stream (MCP sends
// Last-Event-ID when it reconnects): last_event_id() is the id of the last
// dispatched event, so an id whose event was cut off is never reported as
// received. Not thread-safe: one parser per stream.
class SseParser final {
 public:
  // Receives each complete event; returning false stops the parser (later
  // Feed calls then ignore their input).
  using EventCallback = std::function<bool(const SseEvent&)>;

  explicit SseParser(EventCallback on_event);

  // Consumes the next bytes of the stream and dispatches every event they
  // complete. Returns false once the callback has stopped the parser.
  bool Feed(std::string_view bytes);

  // Bytes held for the event in progress (its unfinished line and data so
  // far): what a caller bounds to keep one endless line or event from
  // growing without limit.
  size_t buffered_bytes() const { return line_.size() + data_.size() + event_type_.size(); }

  // The spec's "last event ID string": set from the `id:` field when an
  // event is dispatched (also an event without data); it carries over to
  // events without an id. Empty before any. Valid inside the callback too.
  const std::string& last_event_id() const { return last_event_id_; }

  // The reconnection time the server asked for with `retry:` in
  // milliseconds; -1 when it sent none.
  long long retry_ms() const { return retry_ms_; }

 private:
  void ProcessLine(std::string_view line);
  void Dispatch();

  EventCallback on_event_;
  SseEvent event_;  // the event being dispatched
  std::string line_;
  std::string event_type_;
  std::string data_;
  std::string id_buffer_;      // the `id:` field of the event in progress
  std::string last_event_id_;  // the id as of the last dispatched event
  long long retry_ms_ = -1;
  bool has_data_ = false;
  bool after_cr_ = false;  // the last byte fed was a CR: a following LF ends no line
  bool at_stream_start_ = true;
  bool stopped_ = false;
};

}  // namespace omniforge::llm
