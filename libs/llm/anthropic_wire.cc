#include "libs/llm/anthropic_wire.h"

#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "libs/llm/errors.h"
#include "libs/llm/tools_text.h"
#include "libs/llm/wire_json.h"

namespace omniforge::llm {
namespace {

using wire_internal::AppendJsonString;
using wire_internal::DumpJson;
using wire_internal::IntMember;
using wire_internal::Json;
using wire_internal::JsonObjectFromText;
using wire_internal::Member;
using wire_internal::ObjectText;
using wire_internal::ParseJson;
using wire_internal::StringMember;
using wire_internal::ToolsTextMemo;
using wire_internal::WithMembers;

absl::Status InvalidRequest(absl::string_view why) {
  return LlmError(LlmErrorKind::kInvalidRequest, absl::StrCat("anthropic: ", why));
}

absl::Status BadResponse(absl::string_view why) {
  return LlmError(LlmErrorKind::kBadResponse, absl::StrCat("anthropic: ", why));
}

absl::StatusOr<Json> ObjectFromText(std::string_view text, absl::string_view what) {
  absl::StatusOr<Json> object =
      JsonObjectFromText(text, std::string_view(what.data(), what.size()));
  if (!object.ok()) return InvalidRequest(object.status().message());
  return object;
}

bool IsBlank(std::string_view text) {
  return absl::StripAsciiWhitespace(absl::string_view(text.data(), text.size())).empty();
}

// The content of an assistant turn: its text, or blocks when it called tools.
absl::StatusOr<Json> AssistantContent(const ChatMessage& message) {
  if (message.tool_calls.empty()) return Json(message.content);
  Json blocks = Json::array();
  if (!message.content.empty()) blocks.push_back({{"type", "text"}, {"text", message.content}});
  for (const ToolCall& call : message.tool_calls) {
    // A call without arguments is a call with no parameters.
    absl::StatusOr<Json> input =
        call.arguments.empty()
            ? Json::object()
            : ObjectFromText(call.arguments,
                             absl::StrCat("arguments of tool call \"", call.id, "\""));
    if (!input.ok()) return input.status();
    blocks.push_back(
        {{"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", *std::move(input)}});
  }
  return blocks;
}

// `content` (text or blocks) as blocks; empty text, which the API rejects as
// a block, as none.
Json AsBlocks(Json content) {
  if (!content.is_string()) return content;
  Json blocks = Json::array();
  if (!content.get_ref<const std::string&>().empty()) {
    blocks.push_back({{"type", "text"}, {"text", std::move(content)}});
  }
  return blocks;
}

// Appends a turn to `out`, merged into the last one when that has the same
// role: the API wants user and assistant turns to alternate, so the results
// of one assistant turn's tool calls, and any user text after them, travel
// in one user turn.
void AppendTurn(const char* role, Json content, Json& out) {
  if (!out.empty() && out.back()["role"] == role) {
    Json& merged = out.back()["content"];
    merged = AsBlocks(std::move(merged));
    for (Json& block : AsBlocks(std::move(content))) merged.push_back(std::move(block));
    return;
  }
  out.push_back({{"role", role}, {"content", std::move(content)}});
}

// Appends every message but the system ones; returns the system text.
absl::StatusOr<std::string> EncodeMessages(const std::vector<ChatMessage>& messages, Json& out) {
  std::string system;
  for (const ChatMessage& message : messages) {
    switch (message.role) {
      case Role::kSystem:
        if (!system.empty()) system += "\n\n";
        system += message.content;
        break;
      case Role::kUser:
        AppendTurn("user", message.content, out);
        break;
      case Role::kAssistant: {
        // The API rejects an assistant turn without content; one with no
        // text and no tool calls says nothing, so it is left out (the turns
        // around it then merge if they share a role).
        if (message.tool_calls.empty() && IsBlank(message.content)) break;
        absl::StatusOr<Json> content = AssistantContent(message);
        if (!content.ok()) return content.status();
        AppendTurn("assistant", *std::move(content), out);
        break;
      }
      case Role::kTool: {
        Json result = {{"type", "tool_result"},
                       {"tool_use_id", message.tool_call_id},
                       {"content", message.content}};
        AppendTurn("user", Json::array({std::move(result)}), out);
        break;
      }
    }
  }
  return system;
}

absl::StatusOr<Json> EncodeToolChoice(const ChatRequest& request) {
  const ToolChoice& choice = request.tool_choice;
  switch (choice.mode) {
    case ToolChoiceMode::kAuto:
      return Json{{"type", "auto"}};
    case ToolChoiceMode::kNone:
      return Json{{"type", "none"}};
    case ToolChoiceMode::kRequired:
      return Json{{"type", "any"}};
    case ToolChoiceMode::kNamed:
      for (const ToolSpec& tool : request.tools) {
        if (tool.name == choice.name) return Json{{"type", "tool"}, {"name", choice.name}};
      }
      return InvalidRequest(
          absl::StrCat("tool_choice names tool \"", choice.name, "\", which is not offered"));
  }
  return InvalidRequest("unknown tool_choice mode");
}

// Takes the counts `usage` has; message_delta repeats them cumulatively, so
// a later value replaces an earlier one. A null count (message_delta sends
// the input counts as null when it does not repeat them) is no count.
void UpdateUsage(const Json& usage, AnthropicUsage& into) {
  auto update = [&usage](const char* key, int64_t& field) {
    const Json* value = Member(usage, key);
    if (value != nullptr && value->is_number_integer()) field = value->get<int64_t>();
  };
  update("input_tokens", into.input_tokens);
  update("cache_read_input_tokens", into.cache_read_input_tokens);
  update("cache_creation_input_tokens", into.cache_creation_input_tokens);
  update("output_tokens", into.output_tokens);
}

// The forced tool is how structured output travels; a turn that used only it
// ended normally rather than asking for tools to run.
FinishReason FinalReason(FinishReason reported, bool structured_used, bool has_tool_calls) {
  if (reported == FinishReason::kToolCalls && structured_used && !has_tool_calls) {
    return FinishReason::kStop;
  }
  return reported;
}

LlmErrorKind StreamErrorKind(std::string_view error_type) {
  return error_type == "rate_limit_error" ? LlmErrorKind::kRateLimited : LlmErrorKind::kServerError;
}

}  // namespace

TokenUsage NormaliseAnthropicUsage(const AnthropicUsage& usage) {
  return {.prompt_tokens = usage.input_tokens + usage.cache_read_input_tokens +
                           usage.cache_creation_input_tokens,
          .completion_tokens = usage.output_tokens,
          .cached_tokens = usage.cache_read_input_tokens,
          .cache_write_tokens = usage.cache_creation_input_tokens};
}

std::string AnthropicStructuredToolName(const ChatRequest& request) {
  return request.response_format.has_value() ? request.response_format->name : "";
}

FinishReason AnthropicFinishReason(std::string_view stop_reason) {
  if (stop_reason == "end_turn" || stop_reason == "stop_sequence") return FinishReason::kStop;
  if (stop_reason == "pause_turn") return FinishReason::kPauseTurn;
  if (stop_reason == "max_tokens") return FinishReason::kLength;
  if (stop_reason == "tool_use") return FinishReason::kToolCalls;
  if (stop_reason == "refusal") return FinishReason::kContentFilter;
  return FinishReason::kUnspecified;
}

absl::StatusOr<std::string> EncodeAnthropicRequest(const ChatRequest& request, bool stream,
                                                   std::string_view model, int32_t max_tokens) {
  if (max_tokens <= 0) max_tokens = request.max_tokens;
  if (max_tokens <= 0) return InvalidRequest("max_tokens must be positive");
  Json body = Json::object();
  body["model"] = model.empty() ? request.model : std::string(model);
  body["max_tokens"] = max_tokens;
  Json messages = Json::array();
  absl::StatusOr<std::string> system = EncodeMessages(request.messages, messages);
  if (!system.ok()) return system.status();
  if (!system->empty()) body["system"] = *std::move(system);
  body["messages"] = std::move(messages);

  // The tools go in as text (see ObjectText), after the other members.
  std::string tools;
  auto add_tool = [](std::string& out, const std::string& name, const std::string& description,
                     const std::string& schema) {
    out += "{\"name\":";
    AppendJsonString(out, name);
    if (!description.empty()) {
      out += ",\"description\":";
      AppendJsonString(out, description);
    }
    absl::StrAppend(&out, ",\"input_schema\":", schema, "}");
  };
  if (!request.tools.empty()) {
    tools = ",\"tools\":[";
    static ToolsTextMemo memo;
    absl::Status encoded = memo.AppendTo(tools, request.tools, [&](std::string& out) {
      for (const ToolSpec& tool : request.tools) {
        absl::StatusOr<std::string> schema =
            tool.parameters_schema.empty()
                ? std::string(R"({"type":"object"})")
                : ObjectText(tool.parameters_schema,
                             absl::StrCat("parameters of tool \"", tool.name, "\""));
        if (!schema.ok()) return schema.status();
        if (!out.empty()) out += ',';
        add_tool(out, tool.name, tool.description, *schema);
      }
      return absl::OkStatus();
    });
    if (!encoded.ok()) return InvalidRequest(encoded.message());
  }
  if (request.response_format.has_value()) {
    const ResponseFormat& format = *request.response_format;
    for (const ToolSpec& tool : request.tools) {
      if (tool.name == format.name) {
        return InvalidRequest(absl::StrCat("response format name \"", format.name,
                                           "\" clashes with a tool of that name"));
      }
    }
    absl::StatusOr<std::string> schema = ObjectText(format.schema, "response schema");
    if (!schema.ok()) return InvalidRequest(schema.status().message());
    tools += tools.empty() ? ",\"tools\":[" : ",";
    add_tool(tools, format.name, "Give the answer as this tool's input.", *schema);
    absl::StrAppend(&tools,
                    "],\"tool_choice\":", DumpJson(Json{{"type", "tool"}, {"name", format.name}}));
  } else if (!tools.empty()) {
    absl::StatusOr<Json> choice = EncodeToolChoice(request);
    if (!choice.ok()) return choice.status();
    absl::StrAppend(&tools, "],\"tool_choice\":", DumpJson(*choice));
  } else if (request.tool_choice.mode == ToolChoiceMode::kRequired ||
             request.tool_choice.mode == ToolChoiceMode::kNamed) {
    return InvalidRequest("tool_choice requires a tool, none is offered");
  }
  if (request.temperature.has_value()) body["temperature"] = *request.temperature;
  if (stream) body["stream"] = true;
  return WithMembers(DumpJson(body), tools);
}

absl::StatusOr<ChatResponse> DecodeAnthropicResponse(std::string_view body,
                                                     std::string_view structured_tool) {
  std::optional<Json> parsed = ParseJson(body);
  if (!parsed.has_value() || !parsed->is_object()) return BadResponse("body is not a JSON object");
  const Json* content = Member(*parsed, "content");
  if (content == nullptr || !content->is_array()) return BadResponse("message has no content");

  ChatResponse response;
  response.id = StringMember(*parsed, "id");
  response.model = StringMember(*parsed, "model");
  bool structured_used = false;
  for (const Json& block : *content) {
    std::string type = StringMember(block, "type");
    if (type == "text") {
      response.content += StringMember(block, "text");
    } else if (type == "tool_use") {
      std::string name = StringMember(block, "name");
      const Json* input = Member(block, "input");
      std::string arguments = input != nullptr ? DumpJson(*input) : "{}";
      if (!structured_tool.empty() && name == structured_tool) {
        response.content += arguments;
        structured_used = true;
      } else {
        response.tool_calls.push_back(
            {StringMember(block, "id"), std::move(name), std::move(arguments)});
      }
    }
  }
  response.finish_reason = FinalReason(AnthropicFinishReason(StringMember(*parsed, "stop_reason")),
                                       structured_used, !response.tool_calls.empty());
  if (const Json* usage = Member(*parsed, "usage")) {
    AnthropicUsage counts;
    UpdateUsage(*usage, counts);
    response.usage = NormaliseAnthropicUsage(counts);
  }
  return response;
}

AnthropicStreamDecoder::AnthropicStreamDecoder(std::string structured_tool)
    : structured_tool_(std::move(structured_tool)) {}

absl::Status AnthropicStreamDecoder::Consume(std::string_view event_type, std::string_view data,
                                             std::vector<StreamDelta>* deltas) {
  if (done_) return absl::OkStatus();
  std::optional<Json> event = ParseJson(data);
  if (!event.has_value() || !event->is_object()) {
    return BadResponse(absl::StrCat(
        "malformed ", absl::string_view(event_type.data(), event_type.size()), " event"));
  }
  std::string type = event_type.empty() || event_type == "message" ? StringMember(*event, "type")
                                                                   : std::string(event_type);

  if (type == "message_start") {
    const Json* message = Member(*event, "message");
    if (message == nullptr) return BadResponse("message_start without message");
    response_.id = StringMember(*message, "id");
    response_.model = StringMember(*message, "model");
    if (const Json* usage = Member(*message, "usage")) UpdateUsage(*usage, usage_);
  } else if (type == "content_block_start") {
    const Json* start = Member(*event, "content_block");
    if (start == nullptr) return BadResponse("content_block_start without content_block");
    Block& block = blocks_[IntMember(*event, "index")];
    std::string block_type = StringMember(*start, "type");
    if (block_type == "text") {
      block.kind = BlockKind::kText;
      AddText(StringMember(*start, "text"), deltas);
    } else if (block_type == "tool_use") {
      const Json* input = Member(*start, "input");
      StartToolUse(block, StringMember(*start, "id"), StringMember(*start, "name"),
                   input != nullptr ? DumpJson(*input) : "{}", deltas);
    }
  } else if (type == "content_block_delta") {
    auto it = blocks_.find(IntMember(*event, "index"));
    if (it == blocks_.end()) return BadResponse("content_block_delta for a block never started");
    const Json* delta = Member(*event, "delta");
    std::string delta_type = delta != nullptr ? StringMember(*delta, "type") : "";
    Block& block = it->second;
    if (delta_type == "text_delta" && block.kind == BlockKind::kText) {
      AddText(StringMember(*delta, "text"), deltas);
    } else if (delta_type == "input_json_delta") {
      AddInput(block, StringMember(*delta, "partial_json"), deltas);
    }
  } else if (type == "content_block_stop") {
    auto it = blocks_.find(IntMember(*event, "index"));
    if (it != blocks_.end() && !it->second.got_fragment) {
      AddInput(it->second, it->second.start_input, deltas);
    }
  } else if (type == "message_delta") {
    if (const Json* delta = Member(*event, "delta")) {
      if (std::string reason = StringMember(*delta, "stop_reason"); !reason.empty()) {
        response_.finish_reason = AnthropicFinishReason(reason);
      }
    }
    if (const Json* usage = Member(*event, "usage")) UpdateUsage(*usage, usage_);
  } else if (type == "message_stop") {
    done_ = true;
  } else if (type == "error") {
    const Json* error = Member(*event, "error");
    std::string error_type = error != nullptr ? StringMember(*error, "type") : "";
    std::string message = error != nullptr ? StringMember(*error, "message") : "";
    return LlmError(StreamErrorKind(error_type),
                    absl::StrCat("anthropic: stream error: ", error_type, ": ", message));
  }
  return absl::OkStatus();
}

void AnthropicStreamDecoder::AddText(std::string text, std::vector<StreamDelta>* deltas) {
  if (text.empty()) return;
  response_.content += text;
  deltas->push_back({.text = std::move(text)});
}

void AnthropicStreamDecoder::StartToolUse(Block& block, std::string id, std::string name,
                                          std::string start_input,
                                          std::vector<StreamDelta>* deltas) {
  block.start_input = std::move(start_input);
  if (!structured_tool_.empty() && name == structured_tool_) {
    block.kind = BlockKind::kStructured;
    structured_used_ = true;
    return;
  }
  block.kind = BlockKind::kToolUse;
  block.tool_index = static_cast<int>(response_.tool_calls.size());
  response_.tool_calls.push_back({id, name, ""});
  deltas->push_back({.tool_index = block.tool_index,
                     .tool_call_id = std::move(id),
                     .tool_name = std::move(name)});
}

void AnthropicStreamDecoder::AddInput(Block& block, std::string fragment,
                                      std::vector<StreamDelta>* deltas) {
  if (fragment.empty()) return;
  if (block.kind == BlockKind::kToolUse) {
    block.got_fragment = true;
    response_.tool_calls[block.tool_index].arguments += fragment;
    deltas->push_back({.tool_index = block.tool_index, .arguments_fragment = std::move(fragment)});
  } else if (block.kind == BlockKind::kStructured) {
    block.got_fragment = true;
    AddText(std::move(fragment), deltas);
  }
}

ChatResponse AnthropicStreamDecoder::TakeResponse() {
  response_.usage = NormaliseAnthropicUsage(usage_);
  response_.finish_reason =
      FinalReason(response_.finish_reason, structured_used_, !response_.tool_calls.empty());
  return std::move(response_);
}

}  // namespace omniforge::llm
