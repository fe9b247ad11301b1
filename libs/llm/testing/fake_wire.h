// Internal to omniforge_llm_fake: the two wire formats the fake provider
// speaks. Each one validates a request like the real API, describes it in the
// terms rules match on, and renders answers, SSE streams and errors in its
// API's exact shapes. The server (fake_provider.cc) decides what to answer.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "libs/llm/testing/fake_provider.h"

namespace omniforge::llm::testing::internal {

// What a valid request asks for.
struct RequestView {
  std::string model;
  bool stream = false;
  bool include_usage = false;  // OpenAI stream_options.include_usage
  std::string last_user_text;
  bool last_is_tool_result = false;
  std::vector<std::string> tool_names;
  // Set for a structured-output request: the schema the answer must match.
  std::optional<nlohmann::json> structured_schema;
  std::string structured_name;  // Anthropic: the forced tool
  size_t prompt_chars = 0;      // for usage estimates
};

// A complete (non-streamed) HTTP answer.
struct HttpAnswer {
  int status = 200;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

// The model's answer to one request, ids assigned.
struct Answer {
  std::string id;
  std::string model;
  int64_t created = 0;  // Unix seconds
  std::string text;
  std::vector<FakeToolCall> tool_calls;
  // A structured-output answer (JSON text) instead of `text`.
  std::optional<std::string> structured;
  // Anthropic: the forced tool_use that carries it.
  std::string structured_call_id;
  std::string structured_name;
  FakeUsage usage;
  std::string finish_reason;  // neutral: stop, length, tool_calls, content_filter
};

// One SSE event, bytes as sent. `output` marks events that carry model output
// (text, a tool call's id and name, argument fragments): stream faults are
// placed by counting them.
struct StreamEvent {
  std::string bytes;
  bool output = false;
};

class WireFormat {
 public:
  virtual ~WireFormat() = default;

  virtual std::string_view api() const = 0;

  // Checks credentials (when `api_key` is set), headers and the body
  // (`body` is discarded when it was not JSON) like the real API: the view of
  // a valid request, else the error answer.
  virtual std::variant<RequestView, HttpAnswer> Inspect(
      const std::map<std::string, std::string>& headers, const nlohmann::json& body,
      const std::string& api_key) const = 0;

  // The API's error answer for `status`.
  virtual HttpAnswer Error(int status) const = 0;

  virtual std::string ResponseId(uint64_t seq) const = 0;
  virtual std::string ToolCallId(uint64_t seq) const = 0;

  virtual std::string Body(const Answer& answer) const = 0;
  virtual std::vector<StreamEvent> Events(const Answer& answer, const RequestView& request,
                                          int chunk_chars) const = 0;
  // The event a provider sends when it fails in the middle of a stream.
  virtual std::string StreamErrorEvent() const = 0;
};

const WireFormat& OpenAiWire();
const WireFormat& AnthropicWire();

// Pieces of `text` of `chars` code points each (the last may be shorter).
std::vector<std::string> SplitText(std::string_view text, int chars);
// Argument fragments as a model streams them: 2, 5, 3, 2, 5, 3... code points,
// so fragments end inside keys, strings and escapes.
std::vector<std::string> SplitArguments(std::string_view json_text);
// Compact JSON; invalid UTF-8 is replaced rather than thrown on.
std::string Dump(const nlohmann::ordered_json& value);
// The string member `key` of `object`; empty when absent or not a string.
std::string StringOr(const nlohmann::json& object, const char* key);
// "an object", "a string"...: how the real APIs name a JSON type in errors.
std::string JsonTypeName(const nlohmann::json& value);

}  // namespace omniforge::llm::testing::internal
