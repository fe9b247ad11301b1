// Provider-neutral chat types: what omniforge sends to a model and what it
// gets back. The wire encoders (OpenAI chat completions, Anthropic Messages)
// translate between these and each provider's JSON.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace omniforge::llm {

enum class Role { kSystem, kUser, kAssistant, kTool };

std::string_view RoleName(Role role);

// A tool call the model asked for. `arguments` is the JSON text exactly as
// the model produced it (it may be invalid JSON; callers validate).
struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;

  friend bool operator==(const ToolCall&, const ToolCall&) = default;
};

// One message of the conversation sent to the model.
//  - kSystem / kUser: `content`.
//  - kAssistant: `content` and/or `tool_calls` (an earlier model turn).
//  - kTool: the result of the call `tool_call_id`, as `content`.
struct ChatMessage {
  Role role = Role::kUser;
  std::string content;
  std::vector<ToolCall> tool_calls;
  std::string tool_call_id;

  friend bool operator==(const ChatMessage&, const ChatMessage&) = default;
};

// A tool offered to the model; `parameters_schema` is a JSON schema (object)
// as JSON text.
struct ToolSpec {
  std::string name;
  std::string description;
  std::string parameters_schema;
};

enum class ToolChoiceMode { kAuto, kNone, kRequired, kNamed };

struct ToolChoice {
  ToolChoiceMode mode = ToolChoiceMode::kAuto;
  std::string name;  // kNamed only
};

// Structured output: the answer must be JSON matching `schema` (JSON text).
struct ResponseFormat {
  std::string name = "response";
  std::string schema;
  bool strict = true;
};

struct ChatRequest {
  // Filled in by the client from the profile; providers send it as is.
  std::string model;
  std::vector<ChatMessage> messages;
  std::vector<ToolSpec> tools;
  ToolChoice tool_choice;
  std::optional<ResponseFormat> response_format;
  std::optional<double> temperature;
  // 0: the provider's configured default (Anthropic requires a value).
  int32_t max_tokens = 0;
};

enum class FinishReason {
  kUnspecified,
  kStop,           // natural end (OpenAI "stop", Anthropic "end_turn"/"stop_sequence")
  kLength,         // token limit ("length", "max_tokens")
  kToolCalls,      // the model wants tools run ("tool_calls", "tool_use")
  kContentFilter,  // withheld by the provider ("content_filter", "refusal")
  // Anthropic "pause_turn": the model paused a long turn (server tools) and
  // is not done; send the conversation back with this answer as the last
  // assistant turn to let it continue.
  kPauseTurn,
};

std::string_view FinishReasonName(FinishReason reason);

struct TokenUsage {
  int64_t prompt_tokens = 0;  // all input tokens, cached ones included
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;  // part of prompt_tokens served from the provider's cache
  // Part of prompt_tokens written to the provider's cache (Anthropic's
  // cache_creation_input_tokens; billed above the input price). 0 where the
  // provider does not report it (OpenAI caches without a write charge).
  int64_t cache_write_tokens = 0;

  friend bool operator==(const TokenUsage&, const TokenUsage&) = default;
};

// A complete answer, streamed or not.
struct ChatResponse {
  std::string id;     // the provider's response id
  std::string model;  // the model that answered, as the provider reports it
  std::string content;
  std::vector<ToolCall> tool_calls;
  FinishReason finish_reason = FinishReason::kUnspecified;
  TokenUsage usage;
  // Microseconds from sending the request to the first content or tool-call
  // byte of a streamed answer; -1 when not streamed or nothing was produced.
  int64_t time_to_first_token_us = -1;
  // What the call cost by the configured price table (set by LlmClient; 0
  // from a bare provider).
  double cost_usd = 0;
};

// One increment of a streamed answer. Exactly one of the two forms:
//  - text: `tool_index` is -1 and `text` holds the new characters;
//  - tool call: `tool_index` >= 0 names the call (in order of appearance);
//    its first delta carries `tool_call_id` and `tool_name`, later ones only
//    `arguments_fragment` (pieces of the JSON text, split anywhere).
struct StreamDelta {
  int tool_index = -1;
  std::string text;
  std::string tool_call_id;
  std::string tool_name;
  std::string arguments_fragment;
};

}  // namespace omniforge::llm
