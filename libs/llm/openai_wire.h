// The OpenAI chat-completions wire format (also spoken by Ollama, vLLM and
// most other "OpenAI-compatible" servers): request encoding, response
// decoding and the incremental decoder for its SSE stream. Pure functions,
// no I/O; http_provider.cc does the HTTP.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libs/llm/chat.h"
#include "libs/llm/openai_chunk_reader.h"

namespace omniforge::llm {

// The request field that carries ChatRequest::max_tokens. OpenAI replaced
// max_tokens by max_completion_tokens, and its reasoning models (o-series,
// gpt-5) reject max_tokens; many compatible servers know only max_tokens.
enum class OpenAiTokenLimitField { kMaxTokens, kMaxCompletionTokens };

// The JSON body for POST <base_url>/chat/completions. Streaming adds
// stream_options.include_usage so the stream ends with the token counts.
// max_tokens is sent, as `token_limit_field`, when positive. `model` and
// `max_tokens`, when given (not empty, positive), are sent in place of the
// request's own. kInvalidRequest when a tool's parameters or the response
// schema is not a JSON object, when tool_choice requires a tool but none is
// offered, or when a named tool_choice names no offered tool.
absl::StatusOr<std::string> EncodeOpenAiRequest(
    const ChatRequest& request, bool stream,
    OpenAiTokenLimitField token_limit_field = OpenAiTokenLimitField::kMaxTokens,
    std::string_view model = {}, int32_t max_tokens = 0);

// Decodes a chat.completion body (the first choice). kBadResponse when the
// body is not one.
absl::StatusOr<ChatResponse> DecodeOpenAiResponse(std::string_view body);

// "stop", "length", "tool_calls" (and the legacy "function_call"),
// "content_filter"; anything else kUnspecified.
FinishReason OpenAiFinishReason(std::string_view reason);

// Consumes the `data` of each SSE event of a streamed chat completion and
// assembles the answer. Tool calls are keyed by their `index` (so parallel
// calls may interleave); each gets the next tool_index in order of
// appearance; id and name come from its first delta, arguments are the
// concatenated fragments. A refusal ends as kContentFilter without content.
// Not thread-safe: one decoder per stream.
class OpenAiStreamDecoder final {
 public:
  // Appends the deltas `data` carries to `deltas`. "[DONE]" completes the
  // stream; data after it is ignored. kBadResponse for data that is not a
  // chunk object; kServerError for an `error` object sent mid-stream.
  absl::Status Consume(std::string_view data, std::vector<StreamDelta>* deltas);

  // True once "[DONE]" arrived: only then is the answer complete.
  bool done() const { return done_; }

  // The usage reported so far (zero until the usage chunk arrived).
  const TokenUsage& usage() const { return response_.usage; }

  // The answer assembled so far. Call once, at the end.
  ChatResponse TakeResponse();

 private:
  // Applies a chunk read by ReadOpenAiChunk (the common case), as Consume
  // would the same chunk from a document.
  void ConsumeRead(wire_internal::OpenAiChunk& chunk, std::vector<StreamDelta>* deltas);
  // Records one entry of a delta's tool_calls and emits its StreamDelta.
  void AddToolCallDelta(std::optional<int64_t> wire_index, std::string id, std::string name,
                        std::string fragment, std::vector<StreamDelta>* deltas);
  // The tool_index a tool-call delta (with the given wire `index`, if any,
  // and `id`) continues; -1 when it starts a call.
  int ResolveToolIndex(std::optional<int64_t> wire_index, const std::string& id) const;

  wire_internal::OpenAiChunk read_;  // reused for every chunk, keeping its capacity
  ChatResponse response_;
  std::map<int64_t, int> tool_index_by_wire_index_;
  bool refused_ = false;
  bool done_ = false;
};

}  // namespace omniforge::llm
