// The Anthropic Messages wire format: request encoding, response decoding and
// the incremental decoder for its SSE stream. Pure functions, no I/O;
// http_provider.cc does the HTTP.
//
// Structured output has no native form here: it is a forced tool named after
// ResponseFormat.name whose input_schema is the schema. The decoders turn that
// tool's input back into `content` (JSON text) with finish reason kStop, and
// a stream sends its input fragments as text deltas, so callers see the same
// answer as from OpenAI's response_format.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libs/llm/chat.h"

namespace omniforge::llm {

// The name of the forced tool that carries structured output for `request`;
// empty when the request has no response_format.
std::string AnthropicStructuredToolName(const ChatRequest& request);

// The JSON body for POST <base_url>/v1/messages. System messages become
// `system` (joined by blank lines); tool results become tool_result blocks
// of a user message; an assistant message with neither text (blank counts as
// none) nor tool calls is left out (the API rejects empty content);
// consecutive messages of one role merge into one message (the API wants
// roles to alternate); a response_format adds the forced tool
// and overrides tool_choice. kInvalidRequest when max_tokens is not positive
// (the API requires it), a schema or an earlier tool call's arguments are not
// a JSON object, tool_choice requires a tool but none is offered or names one
// not offered, or the structured-output tool's name clashes with a tool's.
// `model` and `max_tokens`, when given (not empty, positive), are sent in
// place of the request's own.
absl::StatusOr<std::string> EncodeAnthropicRequest(const ChatRequest& request, bool stream,
                                                   std::string_view model = {},
                                                   int32_t max_tokens = 0);

// Decodes a Messages answer. `structured_tool` is
// AnthropicStructuredToolName(request). kBadResponse when the body is not a
// message.
absl::StatusOr<ChatResponse> DecodeAnthropicResponse(std::string_view body,
                                                     std::string_view structured_tool);

// end_turn and stop_sequence kStop, max_tokens kLength, tool_use
// kToolCalls, refusal kContentFilter, pause_turn kPauseTurn; anything else
// kUnspecified.
FinishReason AnthropicFinishReason(std::string_view stop_reason);

// Token counts as Anthropic reports them.
struct AnthropicUsage {
  int64_t input_tokens = 0;  // uncached input only
  int64_t cache_read_input_tokens = 0;
  int64_t cache_creation_input_tokens = 0;
  int64_t output_tokens = 0;
};

// The provider-neutral counts: prompt_tokens is all input (uncached, cache
// reads and cache writes), cached_tokens the cache reads, cache_write_tokens
// the cache writes.
TokenUsage NormaliseAnthropicUsage(const AnthropicUsage& usage);

// Consumes the (event type, data) pairs of a streamed message and assembles
// the answer. tool_index counts the tool calls from 0 (not Anthropic's
// content block index). Usage is normalised (NormaliseAnthropicUsage). Not
// thread-safe: one decoder per stream.
class AnthropicStreamDecoder final {
 public:
  // `structured_tool` as for DecodeAnthropicResponse.
  explicit AnthropicStreamDecoder(std::string structured_tool);

  // Appends the deltas of one event to `deltas`. The type comes from the SSE
  // event name, or from the data's `type` when the event had none.
  // message_stop completes the stream; later events are ignored; unknown
  // events (and ping) are skipped. kBadResponse for data that is not a JSON
  // object or a delta for a block never started; an `error` event gives
  // kRateLimited for rate_limit_error, else kServerError.
  absl::Status Consume(std::string_view event_type, std::string_view data,
                       std::vector<StreamDelta>* deltas);

  // True once message_stop arrived: only then is the answer complete.
  bool done() const { return done_; }

  // The usage reported so far, normalised (message_start reports the input).
  TokenUsage usage() const { return NormaliseAnthropicUsage(usage_); }

  // The answer assembled so far. Call once, at the end.
  ChatResponse TakeResponse();

 private:
  enum class BlockKind { kIgnored, kText, kToolUse, kStructured };
  struct Block {
    BlockKind kind = BlockKind::kIgnored;
    int tool_index = -1;
    // The input content_block_start carried, used when no fragment follows
    // (the answer then matches DecodeAnthropicResponse's).
    std::string start_input;
    bool got_fragment = false;
  };

  void AddText(std::string text, std::vector<StreamDelta>* deltas);
  // A tool_use block begins: a tool call, or the structured-output tool.
  void StartToolUse(Block& block, std::string id, std::string name, std::string start_input,
                    std::vector<StreamDelta>* deltas);
  // Routes an input fragment of `block` to a tool-call or a text delta.
  void AddInput(Block& block, std::string fragment, std::vector<StreamDelta>* deltas);

  std::string structured_tool_;
  ChatResponse response_;
  std::map<int64_t, Block> blocks_;
  AnthropicUsage usage_;
  bool structured_used_ = false;
  bool done_ = false;
};

}  // namespace omniforge::llm
