// The Anthropic Messages wire format, as api.anthropic.com speaks it:
// validation errors with its messages, message bodies, named SSE events.
#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "libs/llm/testing/fake_wire.h"

namespace omniforge::llm::testing::internal {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

HttpAnswer ErrorAnswer(int status, const std::string& type, const std::string& message) {
  ordered_json error;
  error["type"] = type;
  error["message"] = message;
  ordered_json body;
  body["type"] = "error";
  body["error"] = std::move(error);
  return HttpAnswer{status, Dump(body), {}};
}

HttpAnswer InvalidRequest(const std::string& message) {
  return ErrorAnswer(400, "invalid_request_error", message);
}

std::string StopReason(const std::string& finish_reason) {
  if (finish_reason == "length") return "max_tokens";
  if (finish_reason == "tool_calls") return "tool_use";
  if (finish_reason == "content_filter") return "refusal";
  return "end_turn";
}

// One content block of the answer.
struct Block {
  bool tool_use = false;
  std::string text;  // text, or the tool input as JSON text
  std::string id;
  std::string name;
};

// The forced tool of a structured answer carries the answer as its input,
// which must be a JSON object; anything else cannot be a tool_use, so it
// comes back as text (what a repair path must handle).
std::vector<Block> Blocks(const Answer& answer) {
  std::vector<Block> blocks;
  if (answer.structured) {
    const json parsed = json::parse(*answer.structured, nullptr, false);
    if (parsed.is_object()) {
      blocks.push_back(
          {true, *answer.structured, answer.structured_call_id, answer.structured_name});
    } else {
      blocks.push_back({false, *answer.structured, "", ""});
    }
    return blocks;
  }
  if (!answer.text.empty()) blocks.push_back({false, answer.text, "", ""});
  for (const FakeToolCall& call : answer.tool_calls) {
    blocks.push_back({true, call.arguments_json, call.id, call.name});
  }
  return blocks;
}

std::string StopReasonFor(const Answer& answer, const std::vector<Block>& blocks) {
  // A forced tool call ends with tool_use like any other.
  if (answer.structured && answer.finish_reason == "stop" && !blocks.empty() &&
      blocks.front().tool_use) {
    return "tool_use";
  }
  return StopReason(answer.finish_reason);
}

ordered_json UsageJson(const FakeUsage& usage, int64_t output_tokens) {
  ordered_json out;
  out["input_tokens"] = usage.prompt_tokens - usage.cached_tokens;
  out["cache_creation_input_tokens"] = 0;
  out["cache_read_input_tokens"] = usage.cached_tokens;
  out["output_tokens"] = output_tokens;
  return out;
}

std::string Event(const std::string& type, const ordered_json& data) {
  return absl::StrCat("event: ", type, "\ndata: ", Dump(data), "\n\n");
}

class AnthropicWireFormat final : public WireFormat {
 public:
  std::string_view api() const override { return "anthropic"; }

  std::variant<RequestView, HttpAnswer> Inspect(const std::map<std::string, std::string>& headers,
                                                const json& body,
                                                const std::string& api_key) const override {
    if (!api_key.empty()) {
      const auto it = headers.find("x-api-key");
      if (it == headers.end()) {
        return ErrorAnswer(401, "authentication_error", "x-api-key header is required");
      }
      if (it->second != api_key) {
        return ErrorAnswer(401, "authentication_error", "invalid x-api-key");
      }
    }
    if (!headers.contains("anthropic-version")) {
      return InvalidRequest("anthropic-version: header is required");
    }
    if (!body.is_object()) {
      return InvalidRequest(
          "There was an error parsing the body of your request. Check that you are sending "
          "valid JSON.");
    }
    RequestView view;
    const auto model = body.find("model");
    if (model == body.end()) return InvalidRequest("model: Field required");
    if (!model->is_string()) return InvalidRequest("model: Input should be a valid string");
    view.model = model->get<std::string>();
    const auto max_tokens = body.find("max_tokens");
    if (max_tokens == body.end()) return InvalidRequest("max_tokens: Field required");
    if (!max_tokens->is_number_integer()) {
      return InvalidRequest("max_tokens: Input should be a valid integer");
    }
    const auto messages = body.find("messages");
    if (messages == body.end()) return InvalidRequest("messages: Field required");
    if (!messages->is_array()) return InvalidRequest("messages: Input should be a valid list");
    if (messages->empty()) return InvalidRequest("messages: at least one message is required");
    if (auto error = InspectMessages(*messages, view)) return *std::move(error);

    if (const auto system = body.find("system"); system != body.end() && system->is_string()) {
      view.prompt_chars += system->get<std::string>().size();
    }
    const auto stream = body.find("stream");
    view.stream = stream != body.end() && stream->is_boolean() && stream->get<bool>();

    std::map<std::string, json> schemas;
    if (const auto tools = body.find("tools"); tools != body.end() && !tools->is_null()) {
      if (!tools->is_array()) return InvalidRequest("tools: Input should be a valid list");
      for (size_t i = 0; i < tools->size(); ++i) {
        const json& tool = (*tools)[i];
        const std::string name = tool.is_object() ? StringOr(tool, "name") : "";
        if (name.empty()) return InvalidRequest(absl::StrCat("tools.", i, ".name: Field required"));
        if (!tool.contains("input_schema")) {
          return InvalidRequest(absl::StrCat("tools.", i, ".input_schema: Field required"));
        }
        view.tool_names.push_back(name);
        schemas[name] = tool["input_schema"];
      }
    }
    if (const auto choice = body.find("tool_choice");
        choice != body.end() && choice->is_object() && StringOr(*choice, "type") == "tool") {
      view.structured_name = StringOr(*choice, "name");
      const auto schema = schemas.find(view.structured_name);
      if (schema == schemas.end()) {
        return InvalidRequest(
            absl::StrCat("tool_choice.name: Tool '", view.structured_name, "' not found in tools"));
      }
      view.structured_schema = schema->second;
    }
    return view;
  }

  HttpAnswer Error(int status) const override {
    switch (status) {
      case 400:
        return InvalidRequest("Invalid request.");
      case 401:
        return ErrorAnswer(401, "authentication_error", "invalid x-api-key");
      case 403:
        return ErrorAnswer(403, "permission_error",
                           "Your API key does not have permission to use the specified resource.");
      case 404:
        return ErrorAnswer(404, "not_found_error", "The requested resource could not be found.");
      case 413:
        return ErrorAnswer(413, "request_too_large",
                           "Request exceeds the maximum allowed number of bytes.");
      case 429:
        return ErrorAnswer(429, "rate_limit_error",
                           "This request would exceed the rate limit for your organization. "
                           "Please try again later.");
      case 529:
        return ErrorAnswer(529, "overloaded_error", "Overloaded");
      default:
        if (status >= 500) return ErrorAnswer(status, "api_error", "Internal server error");
        return ErrorAnswer(status, "invalid_request_error", "Request failed.");
    }
  }

  std::string ResponseId(uint64_t seq) const override {
    return absl::StrFormat("msg_01FAKE%018d", seq);
  }
  std::string ToolCallId(uint64_t seq) const override {
    return absl::StrFormat("toolu_01FAKE%018d", seq);
  }

  std::string Body(const Answer& answer) const override {
    const std::vector<Block> blocks = Blocks(answer);
    ordered_json content = ordered_json::array();
    for (const Block& block : blocks) {
      ordered_json item;
      if (block.tool_use) {
        item["type"] = "tool_use";
        item["id"] = block.id;
        item["name"] = block.name;
        // A body cannot carry input that is not an object; see the header.
        const ordered_json input = ordered_json::parse(block.text, nullptr, false);
        item["input"] = input.is_object() ? input : ordered_json::object();
      } else {
        item["type"] = "text";
        item["text"] = block.text;
      }
      content.push_back(std::move(item));
    }
    ordered_json body;
    body["id"] = answer.id;
    body["type"] = "message";
    body["role"] = "assistant";
    body["model"] = answer.model;
    body["content"] = std::move(content);
    body["stop_reason"] = StopReasonFor(answer, blocks);
    body["stop_sequence"] = nullptr;
    body["usage"] = UsageJson(answer.usage, answer.usage.completion_tokens);
    return Dump(body);
  }

  std::vector<StreamEvent> Events(const Answer& answer, const RequestView&,
                                  int chunk_chars) const override {
    const std::vector<Block> blocks = Blocks(answer);
    std::vector<StreamEvent> events;
    AddMessageStart(answer, events);
    if (blocks.empty()) AddPing(events);
    for (size_t index = 0; index < blocks.size(); ++index) {
      AddBlock(blocks[index], index, chunk_chars, events);
    }
    AddMessageEnd(answer, blocks, events);
    return events;
  }

  static void Add(std::vector<StreamEvent>& events, const std::string& type,
                  const ordered_json& data, bool output) {
    events.push_back({Event(type, data), output});
  }
  static void AddPing(std::vector<StreamEvent>& events) {
    events.push_back({"event: ping\ndata: {\"type\": \"ping\"}\n\n", false});
  }

  // message_start: the message with no content yet.
  static void AddMessageStart(const Answer& answer, std::vector<StreamEvent>& events) {
    ordered_json message;
    message["id"] = answer.id;
    message["type"] = "message";
    message["role"] = "assistant";
    message["model"] = answer.model;
    message["content"] = ordered_json::array();
    message["stop_reason"] = nullptr;
    message["stop_sequence"] = nullptr;
    message["usage"] = UsageJson(answer.usage, 1);
    ordered_json start;
    start["type"] = "message_start";
    start["message"] = std::move(message);
    Add(events, "message_start", start, false);
  }

  // One content block: its start, its deltas (text in pieces, a tool's
  // input in fragments) and its stop; a ping after the first block's start.
  static void AddBlock(const Block& block, size_t index, int chunk_chars,
                       std::vector<StreamEvent>& events) {
    ordered_json content_block;
    if (block.tool_use) {
      content_block["type"] = "tool_use";
      content_block["id"] = block.id;
      content_block["name"] = block.name;
      content_block["input"] = ordered_json::object();
    } else {
      content_block["type"] = "text";
      content_block["text"] = "";
    }
    ordered_json block_start;
    block_start["type"] = "content_block_start";
    block_start["index"] = index;
    block_start["content_block"] = std::move(content_block);
    Add(events, "content_block_start", block_start, block.tool_use);
    if (index == 0) AddPing(events);

    auto add_delta = [&](ordered_json delta, bool output) {
      ordered_json data;
      data["type"] = "content_block_delta";
      data["index"] = index;
      data["delta"] = std::move(delta);
      Add(events, "content_block_delta", data, output);
    };
    if (block.tool_use) {
      // Anthropic opens every tool input with an empty fragment.
      std::vector<std::string> fragments = SplitArguments(block.text);
      fragments.insert(fragments.begin(), "");
      for (std::string& fragment : fragments) {
        ordered_json delta;
        delta["type"] = "input_json_delta";
        const bool output = !fragment.empty();
        delta["partial_json"] = std::move(fragment);
        add_delta(std::move(delta), output);
      }
    } else {
      for (std::string& piece : SplitText(block.text, chunk_chars)) {
        ordered_json delta;
        delta["type"] = "text_delta";
        delta["text"] = std::move(piece);
        add_delta(std::move(delta), true);
      }
    }
    ordered_json block_stop;
    block_stop["type"] = "content_block_stop";
    block_stop["index"] = index;
    Add(events, "content_block_stop", block_stop, false);
  }

  // message_delta with the stop reason and output tokens, then message_stop.
  static void AddMessageEnd(const Answer& answer, const std::vector<Block>& blocks,
                            std::vector<StreamEvent>& events) {
    ordered_json delta;
    delta["stop_reason"] = StopReasonFor(answer, blocks);
    delta["stop_sequence"] = nullptr;
    ordered_json usage;
    usage["output_tokens"] = answer.usage.completion_tokens;
    ordered_json message_delta;
    message_delta["type"] = "message_delta";
    message_delta["delta"] = std::move(delta);
    message_delta["usage"] = std::move(usage);
    Add(events, "message_delta", message_delta, false);
    ordered_json stop;
    stop["type"] = "message_stop";
    Add(events, "message_stop", stop, false);
  }

  std::string StreamErrorEvent() const override {
    return absl::StrCat("event: error\ndata: ", Error(529).body, "\n\n");
  }

 private:
  // Roles alternate starting with user; every tool_result answers a tool_use
  // of the message right before it, and every tool_use is answered by the
  // next message.
  static std::optional<HttpAnswer> InspectMessages(const json& messages, RequestView& view) {
    std::vector<std::string> unanswered;  // tool_use ids of the previous message
    size_t calls_index = 0;
    std::string previous_role;
    bool last_has_tool_result = false;
    for (size_t i = 0; i < messages.size(); ++i) {
      const json& message = messages[i];
      if (auto error = CheckRole(message, i, previous_role)) return error;
      const std::string role = StringOr(message, "role");
      previous_role = role;
      const auto content = message.find("content");
      if (content == message.end()) {
        return InvalidRequest(absl::StrCat("messages.", i, ".content: Field required"));
      }
      ContentSeen seen;
      if (auto error = InspectContent(*content, i, unanswered, view, seen)) return error;
      last_has_tool_result = seen.tool_result;
      if (!unanswered.empty()) {
        return InvalidRequest(absl::StrCat(
            "messages.", calls_index,
            ": `tool_use` ids were found without `tool_result` blocks "
            "immediately after: ",
            absl::StrJoin(unanswered, ", "),
            ". Each `tool_use` block must have a corresponding `tool_result` block in the next "
            "message."));
      }
      view.prompt_chars += seen.text.size();
      if (role == "user" && seen.has_text) view.last_user_text = seen.text;
      unanswered = std::move(seen.calls);
      calls_index = i;
    }
    view.last_is_tool_result = last_has_tool_result;
    return std::nullopt;
  }

  // Message `i` is an object whose role is user or assistant, the first
  // one the user's, alternating with `previous_role`.
  static std::optional<HttpAnswer> CheckRole(const json& message, size_t i,
                                             const std::string& previous_role) {
    if (!message.is_object()) {
      return InvalidRequest(absl::StrCat("messages.", i, ": Input should be a valid dictionary"));
    }
    const std::string role = StringOr(message, "role");
    if (role == "system") {
      return InvalidRequest(
          "messages: Unexpected role \"system\". The Messages API accepts a top-level `system` "
          "parameter, not \"system\" as an input message role.");
    }
    if (role != "user" && role != "assistant") {
      return InvalidRequest(
          absl::StrCat("messages.", i, ".role: Input should be 'user' or 'assistant'"));
    }
    if (i == 0 && role != "user") {
      return InvalidRequest("messages: first message must use the \"user\" role");
    }
    if (role == previous_role) {
      return InvalidRequest(absl::StrCat(
          "messages: roles must alternate between \"user\" and \"assistant\", but found "
          "multiple \"",
          role, "\" roles in a row"));
    }
    return std::nullopt;
  }

  // What one message's content holds.
  struct ContentSeen {
    std::string text;
    bool has_text = false;
    std::vector<std::string> calls;  // its tool_use ids
    bool tool_result = false;
  };

  // Message `i`'s content, a string or a list of blocks; each tool_result
  // answers one of the previous message's `unanswered` tool_use ids.
  static std::optional<HttpAnswer> InspectContent(const json& content, size_t i,
                                                  std::vector<std::string>& unanswered,
                                                  RequestView& view, ContentSeen& seen) {
    if (content.is_string()) {
      seen.text = content.get<std::string>();
      seen.has_text = true;
      return std::nullopt;
    }
    if (!content.is_array()) {
      return InvalidRequest(absl::StrCat("messages.", i, ".content: Input should be a valid list"));
    }
    for (size_t j = 0; j < content.size(); ++j) {
      const json& block = content[j];
      const std::string at = absl::StrCat("messages.", i, ".content.", j);
      const std::string type = block.is_object() ? StringOr(block, "type") : "";
      if (type == "text") {
        seen.text += StringOr(block, "text");
        seen.has_text = true;
      } else if (type == "tool_use") {
        const auto input = block.find("input");
        if (input == block.end() || !input->is_object()) {
          return InvalidRequest(at + ".tool_use.input: Input should be a valid dictionary");
        }
        seen.calls.push_back(StringOr(block, "id"));
        view.prompt_chars += StringOr(block, "name").size() + input->dump().size();
      } else if (type == "tool_result") {
        const std::string id = StringOr(block, "tool_use_id");
        if (std::find(unanswered.begin(), unanswered.end(), id) == unanswered.end()) {
          return InvalidRequest(absl::StrCat(
              at, ": unexpected `tool_use_id` found in `tool_result` blocks: ", id,
              ". Each `tool_result` block must have a corresponding `tool_use` block in the "
              "previous message."));
        }
        std::erase(unanswered, id);
        seen.tool_result = true;
        const auto result = block.find("content");
        if (result != block.end()) {
          view.prompt_chars +=
              result->is_string() ? result->get<std::string>().size() : result->dump().size();
        }
      }
    }
    return std::nullopt;
  }
};

}  // namespace

const WireFormat& AnthropicWire() {
  static const AnthropicWireFormat kWire;
  return kWire;
}

}  // namespace omniforge::llm::testing::internal
