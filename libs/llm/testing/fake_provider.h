// A fake LLM provider for tests: an HTTP server on 127.0.0.1 that speaks the
// OpenAI chat-completions and Anthropic Messages wire formats (requests
// validated like the real APIs, answers and SSE streams shaped like theirs),
// answering from a script of rules and injecting faults on demand. Services
// and the LLM client are tested against it instead of real providers.
//
// Endpoints: POST /v1/chat/completions (OpenAI) and POST /v1/messages
// (Anthropic). A POST anywhere else gets 404 in OpenAI's error shape.
//
// Streams, exactly as sent (each SSE event ends with a blank line):
//  OpenAI     `data: <chat.completion.chunk>` ... `data: [DONE]`. The first
//             chunk has delta {"role":"assistant","content":"","refusal":null};
//             when the answer is tool calls only, that first chunk carries
//             "content":null and the first call's header instead, as OpenAI
//             does. Text comes in `chunk_chars`-character pieces; each tool
//             call starts with {index,id,type,function{name,arguments:""}},
//             then argument fragments of 2, 5, 3, 2, 5, 3... characters (split
//             inside strings and keys). Then delta {} with finish_reason; then,
//             only with stream_options.include_usage, a chunk with
//             "choices":[] and the usage (earlier chunks then carry
//             "usage":null, otherwise no usage key at all).
//  Anthropic  `event: <type>\ndata: <json>`: message_start, then per block
//             content_block_start / content_block_delta... / content_block_stop
//             (a ping after the first content_block_start), message_delta,
//             message_stop. tool_use blocks stream input_json_delta fragments
//             (an empty one first, then 2, 5, 3... characters).
// Each event is one HTTP chunk (with FakeRule::one_write, the whole stream is
// one); Content-Type is exactly text/event-stream.
// A cut stream (kCutStream) ends after the last complete chunk with a plain
// close (FIN) and no terminating zero-length chunk: curl reports error 18
// (CURLE_PARTIAL_FILE), httplib Error::Read.
//
// Usage numbers are provider-neutral: Anthropic answers report
// input_tokens = prompt - cached, cache_read_input_tokens = cached and
// cache_creation_input_tokens = 0, so a client that normalises usage like
// NormaliseAnthropicUsage (llm/anthropic_wire.h) reads back exactly the
// rule's numbers.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace omniforge::llm::testing {

struct FakeToolCall {
  std::string id;  // empty: generated ("call_..." / "toolu_...")
  std::string name;
  // Sent byte for byte, valid JSON or not (a non-streamed Anthropic answer
  // can only carry an object: anything else goes out as {}).
  std::string arguments_json;
};

struct FakeUsage {
  int64_t prompt_tokens = 0;  // cached ones included
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;
};

// What the model says. A matched rule's reply is sent as is (an empty reply
// is an empty answer); only requests no rule matches get the echo.
struct FakeReply {
  std::string text;
  std::vector<FakeToolCall> tool_calls;
  // Answer to a structured-output request (OpenAI response_format json_schema,
  // Anthropic forced tool_choice {"type":"tool"}): sent as the message content
  // (OpenAI) or the forced tool_use input (Anthropic). Without it such requests
  // get `text` when non-empty, else the smallest JSON the schema accepts (its
  // required properties with empty values). On Anthropic an answer that is not
  // a JSON object comes back as a text block instead of a tool_use.
  std::optional<std::string> json;
  // Unset: estimated as one token per 4 characters of prompt and answer.
  std::optional<FakeUsage> usage;
  // "stop", "length", "tool_calls" or "content_filter" (Anthropic: end_turn,
  // max_tokens, tool_use, refusal). Empty: tool_calls when there are tool
  // calls, else stop.
  std::string finish_reason;
};

struct FakeFault {
  enum class Kind {
    kNone,
    // HTTP `status` with the API's error body (or `body` verbatim when set)
    // and a Retry-After header when `retry_after` is set.
    kStatus,
    // Nothing is sent, not even headers, for `hang_ms`; then the rule's
    // reply. 0: until Stop(), which answers 503.
    kHang,
    // Non-streamed: 200 with the answer's JSON cut in half. Streamed: a
    // truncated copy of the next event is inserted after `after_deltas`
    // output events; the stream then continues to its normal end.
    kMalformedJson,
    // Streamed: after `after_deltas` output events the connection is closed
    // without the terminating zero-length chunk (no [DONE] / message_stop).
    // Non-streamed: Content-Length promises the whole answer, half is sent,
    // then the connection is closed.
    kCutStream,
    // The structured answer lacks the schema's first required property (or,
    // when none is required, has the wrong JSON type).
    kInvalidStructuredOutput,
    // Streamed: after `after_deltas` output events, OpenAI gets
    // `data: {"error":{...server_error...}}` and Anthropic `event: error` with
    // overloaded_error; then the stream ends cleanly. Non-streamed: as kStatus.
    kStreamError,
  };

  Kind kind = Kind::kNone;
  int status = 500;
  std::string retry_after;  // header value as sent: seconds or an HTTP date
  std::string body;
  int64_t hang_ms = 0;
  // Output events (content pieces, tool-call headers and argument fragments)
  // sent before a stream fault fires; the events before the next output event
  // (role chunk, message_start, content_block_start, ping...) are sent too.
  // 0: the fault fires before any output. Past the end: after the last one.
  int after_deltas = 1;
};

// All set conditions must hold; an empty rule matches every request.
struct FakeMatch {
  std::string api;        // "openai", "anthropic"; empty: both
  std::string operation;  // header x-omniforge-operation, exact
  std::string model;      // exact
  // The last user message that has text (OpenAI role user; Anthropic user
  // turns made only of tool_result blocks are skipped).
  std::string last_user_contains;  // case-insensitive substring
  std::string last_user_regex;     // RE2 syntax, case-insensitive, searched
  std::string tool_offered;        // a tool of this name is in the request
  // The conversation ends with a tool result (OpenAI role tool; Anthropic a
  // user turn with tool_result blocks) — the second step of a tool loop.
  std::optional<bool> last_is_tool_result;
};

struct FakeRule {
  FakeMatch match;
  int times = -1;  // -1: unlimited; otherwise used up after this many matches
  FakeReply reply;
  FakeFault fault;
  int chunk_chars = 4;              // characters (code points) per streamed text piece
  int64_t first_byte_delay_ms = 0;  // before the body (streams: after headers)
  int64_t chunk_delay_ms = 0;       // between stream events
  // A stream's events leave together, in one HTTP chunk (one write), as from
  // a provider whose whole answer is ready at once; the bytes are the same.
  // Needs chunk_delay_ms 0.
  bool one_write = false;
};

// One request as received; recorded before validation, so rejected requests
// appear too.
struct RecordedRequest {
  std::string api;  // "openai", "anthropic", or empty for an unknown path
  std::string path;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string operation;  // x-omniforge-operation, empty when absent
  bool stream = false;
  int64_t time_micros = 0;  // core::NowMicros() at arrival
  // core::NowMicros() when a streamed answer's last chunk was written, so
  // callers can tell the fake's own time from theirs; 0 otherwise.
  int64_t finished_micros = 0;
};

struct FakeOptions {
  // When set, requests must carry it (OpenAI `Authorization: Bearer`,
  // Anthropic `x-api-key`) or get 401 with the API's error body.
  std::string api_key;
  int port = 0;  // 0: an ephemeral port
  // Serving threads start on demand; each open connection holds one, so this
  // bounds concurrent connections (more wait for a free thread).
  int max_threads = 256;
  // Idle keep-alive connections are closed after this.
  int keep_alive_timeout_s = 5;
  // false: Requests() lists the requests without their bodies, so a long
  // benchmark keeps no copy of each.
  bool record_bodies = true;
};

class FakeLlmServer final {
 public:
  // Serves `rules` on 127.0.0.1. INVALID_ARGUMENT for a bad rule (regex,
  // finish_reason, chunk_chars, status), UNAVAILABLE when the port cannot be
  // bound. Requests no rule matches get "echo: <last user text>".
  static absl::StatusOr<std::unique_ptr<FakeLlmServer>> Start(std::vector<FakeRule> rules = {},
                                                              FakeOptions options = {});

  ~FakeLlmServer();
  FakeLlmServer(const FakeLlmServer&) = delete;
  FakeLlmServer& operator=(const FakeLlmServer&) = delete;

  int port() const;
  std::string openai_base_url() const;     // http://127.0.0.1:<port>/v1
  std::string anthropic_base_url() const;  // http://127.0.0.1:<port>

  // Replace or extend the script; later requests see the change, requests in
  // flight keep the rule they matched. INVALID_ARGUMENT as Start, nothing
  // changed then. Thread-safe.
  absl::Status SetRules(std::vector<FakeRule> rules);
  absl::Status AddRule(FakeRule rule);

  // Every request received so far, in arrival order. Thread-safe.
  std::vector<RecordedRequest> Requests() const;
  size_t RequestCount() const;
  // Blocks until at least `count` requests arrived or `timeout_ms` passed;
  // returns whether they did. Lets a test wait for a client running on
  // another thread without sleeping.
  bool WaitForRequests(size_t count, int64_t timeout_ms) const;

  // Ends hangs and delays, stops accepting and joins the serving threads.
  // Idempotent; the destructor calls it.
  void Stop();

 private:
  class Impl;
  explicit FakeLlmServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Parses a JSON script into rules. Format (every key optional, unknown keys
// rejected):
//   {"rules": [{
//      "match": {"api": "openai", "operation": "summarize", "model": "m",
//                "last_user_contains": "weather", "last_user_regex": "^hi",
//                "tool_offered": "get_weather", "last_is_tool_result": false},
//      "times": 1,
//      "reply": {"text": "Hello",
//                "tool_calls": [{"id": "call_1", "name": "get_weather",
//                                "arguments": {"city": "Paris"}}],
//                "json": {"title": "x"},
//                "usage": {"prompt": 10, "completion": 5, "cached": 2},
//                "finish_reason": "stop"},
//      "fault": {"kind": "status", "status": 429, "retry_after": "2",
//                "body": "...", "hang_ms": 0, "after_deltas": 1},
//      "chunk_chars": 4, "first_byte_delay_ms": 0, "chunk_delay_ms": 0,
//      "one_write": false}]}
// "arguments" and "json" given as a JSON string are used verbatim as JSON
// text (so they may be invalid JSON); any other value is serialised
// compactly; absent arguments are {}. fault.kind: none, status, hang,
// malformed_json, cut_stream, invalid_structured_output, stream_error.
// INVALID_ARGUMENT naming the offending key for malformed input; the values
// themselves (regex, ranges, finish_reason) are checked by Start/SetRules.
absl::StatusOr<std::vector<FakeRule>> ParseFakeScript(std::string_view json_text);

}  // namespace omniforge::llm::testing
