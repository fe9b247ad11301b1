#include "libs/llm/openai_wire.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/llm/errors.h"
#include "libs/llm/openai_chunk_reader.h"
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

// One message of the request, as JSON text appended to `out` (members in
// the order the provider documents; no JSON value is built: a request
// carries the whole history on every call).
void AppendMessage(std::string& out, const ChatMessage& message) {
  out += "{\"role\":";
  AppendJsonString(out, RoleName(message.role));
  switch (message.role) {
    case Role::kSystem:
    case Role::kUser:
      out += ",\"content\":";
      AppendJsonString(out, message.content);
      break;
    case Role::kAssistant:
      // OpenAI wants null, not "", for a turn that only called tools.
      out += ",\"content\":";
      if (message.content.empty() && !message.tool_calls.empty()) {
        out += "null";
      } else {
        AppendJsonString(out, message.content);
      }
      if (!message.tool_calls.empty()) {
        out += ",\"tool_calls\":[";
        for (const ToolCall& call : message.tool_calls) {
          if (out.back() != '[') out += ',';
          out += "{\"id\":";
          AppendJsonString(out, call.id);
          out += R"(,"type":"function","function":{"name":)";
          AppendJsonString(out, call.name);
          out += ",\"arguments\":";
          AppendJsonString(out, call.arguments);
          out += "}}";
        }
        out += ']';
      }
      break;
    case Role::kTool:
      out += ",\"tool_call_id\":";
      AppendJsonString(out, message.tool_call_id);
      out += ",\"content\":";
      AppendJsonString(out, message.content);
      break;
  }
  out += '}';
}

absl::StatusOr<Json> EncodeToolChoice(const ChatRequest& request) {
  const ToolChoice& choice = request.tool_choice;
  switch (choice.mode) {
    case ToolChoiceMode::kAuto:
      return Json("auto");
    case ToolChoiceMode::kNone:
      return Json("none");
    case ToolChoiceMode::kRequired:
      return Json("required");
    case ToolChoiceMode::kNamed:
      for (const ToolSpec& tool : request.tools) {
        if (tool.name == choice.name) {
          return Json{{"type", "function"}, {"function", {{"name", choice.name}}}};
        }
      }
      return LlmError(
          LlmErrorKind::kInvalidRequest,
          absl::StrCat("tool_choice names tool \"", choice.name, "\", which is not offered"));
  }
  return LlmError(LlmErrorKind::kInvalidRequest, "unknown tool_choice mode");
}

TokenUsage DecodeUsage(const Json& usage) {
  TokenUsage out;
  out.prompt_tokens = IntMember(usage, "prompt_tokens");
  out.completion_tokens = IntMember(usage, "completion_tokens");
  if (const Json* details = Member(usage, "prompt_tokens_details")) {
    out.cached_tokens = IntMember(*details, "cached_tokens");
  }
  return out;
}

absl::Status BadResponse(absl::string_view why) {
  return LlmError(LlmErrorKind::kBadResponse, absl::StrCat("openai: ", why));
}

// Arguments are JSON text on the wire; a few compatible servers send the
// object itself.
std::string ArgumentsText(const Json& function) {
  const Json* arguments = Member(function, "arguments");
  if (arguments == nullptr || arguments->is_null()) return "";
  if (arguments->is_string()) return arguments->get<std::string>();
  return DumpJson(*arguments);
}

}  // namespace

FinishReason OpenAiFinishReason(std::string_view reason) {
  if (reason == "stop") return FinishReason::kStop;
  if (reason == "length") return FinishReason::kLength;
  if (reason == "tool_calls" || reason == "function_call") return FinishReason::kToolCalls;
  if (reason == "content_filter") return FinishReason::kContentFilter;
  return FinishReason::kUnspecified;
}

absl::StatusOr<std::string> EncodeOpenAiRequest(const ChatRequest& request, bool stream,
                                                OpenAiTokenLimitField token_limit_field,
                                                std::string_view model, int32_t max_tokens) {
  if (model.empty()) model = request.model;
  if (max_tokens <= 0) max_tokens = request.max_tokens;
  // The model and the messages as text; the other members follow from
  // `body`, then the tools (as text as well).
  std::string head = "{\"model\":";
  AppendJsonString(head, model);
  head += ",\"messages\":[";
  for (const ChatMessage& message : request.messages) {
    if (head.back() != '[') head += ',';
    AppendMessage(head, message);
  }
  head += ']';
  Json body = Json::object();
  // The tools go in as text (see ObjectText), after the other members.
  std::string tools;
  if (!request.tools.empty()) {
    tools = ",\"tools\":[";
    static wire_internal::ToolsTextMemo memo;
    absl::Status encoded = memo.AppendTo(tools, request.tools, [&request](std::string& out) {
      for (const ToolSpec& tool : request.tools) {
        if (!out.empty()) out += ',';
        out += R"({"type":"function","function":{"name":)";
        AppendJsonString(out, tool.name);
        if (!tool.description.empty()) {
          out += ",\"description\":";
          AppendJsonString(out, tool.description);
        }
        if (!tool.parameters_schema.empty()) {
          absl::StatusOr<std::string> schema = ObjectText(
              tool.parameters_schema, absl::StrCat("parameters of tool \"", tool.name, "\""));
          if (!schema.ok()) return schema.status();
          absl::StrAppend(&out, ",\"parameters\":", *schema);
        }
        out += "}}";
      }
      return absl::OkStatus();
    });
    if (!encoded.ok()) return encoded;
    absl::StatusOr<Json> choice = EncodeToolChoice(request);
    if (!choice.ok()) return choice.status();
    absl::StrAppend(&tools, "],\"tool_choice\":", DumpJson(*choice));
  } else if (request.tool_choice.mode == ToolChoiceMode::kRequired ||
             request.tool_choice.mode == ToolChoiceMode::kNamed) {
    return LlmError(LlmErrorKind::kInvalidRequest, "tool_choice requires a tool, none is offered");
  }
  if (request.response_format.has_value()) {
    const ResponseFormat& format = *request.response_format;
    absl::StatusOr<Json> schema = JsonObjectFromText(format.schema, "response schema");
    if (!schema.ok()) return schema.status();
    body["response_format"] = {
        {"type", "json_schema"},
        {"json_schema",
         {{"name", format.name}, {"schema", *std::move(schema)}, {"strict", format.strict}}}};
  }
  if (request.temperature.has_value()) body["temperature"] = *request.temperature;
  if (max_tokens > 0) {
    const char* field = token_limit_field == OpenAiTokenLimitField::kMaxCompletionTokens
                            ? "max_completion_tokens"
                            : "max_tokens";
    body[field] = max_tokens;
  }
  if (stream) {
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
  }
  const std::string members = DumpJson(body);  // "{...}"
  if (members.size() > 2) absl::StrAppend(&head, ",", members.substr(1, members.size() - 2));
  absl::StrAppend(&head, tools, "}");
  return head;
}

absl::StatusOr<ChatResponse> DecodeOpenAiResponse(std::string_view body) {
  std::optional<Json> parsed = ParseJson(body);
  if (!parsed.has_value() || !parsed->is_object()) return BadResponse("body is not a JSON object");
  const Json* choices = Member(*parsed, "choices");
  if (choices == nullptr || !choices->is_array() || choices->empty()) {
    return BadResponse("answer has no choices");
  }
  const Json* message = Member(choices->front(), "message");
  if (message == nullptr || !message->is_object()) return BadResponse("choice has no message");

  ChatResponse response;
  response.id = StringMember(*parsed, "id");
  response.model = StringMember(*parsed, "model");
  response.content = StringMember(*message, "content");
  if (const Json* calls = Member(*message, "tool_calls"); calls != nullptr && !calls->is_null()) {
    if (!calls->is_array()) return BadResponse("tool_calls is not an array");
    for (const Json& call : *calls) {
      const Json* function = Member(call, "function");
      if (function == nullptr) return BadResponse("tool call has no function");
      response.tool_calls.push_back(
          {StringMember(call, "id"), StringMember(*function, "name"), ArgumentsText(*function)});
    }
  }
  response.finish_reason = OpenAiFinishReason(StringMember(choices->front(), "finish_reason"));
  if (!StringMember(*message, "refusal").empty()) {
    response.content.clear();
    response.finish_reason = FinishReason::kContentFilter;
  }
  if (const Json* usage = Member(*parsed, "usage")) response.usage = DecodeUsage(*usage);
  return response;
}

absl::Status OpenAiStreamDecoder::Consume(std::string_view data, std::vector<StreamDelta>* deltas) {
  if (done_) return absl::OkStatus();
  if (data == "[DONE]") {
    done_ = true;
    return absl::OkStatus();
  }
  if (wire_internal::ReadOpenAiChunk(data, read_)) {
    ConsumeRead(read_, deltas);
    return absl::OkStatus();
  }
  // Unusual chunks (errors included) from a document, which tells them apart.
  std::optional<Json> chunk = ParseJson(data);
  if (!chunk.has_value() || !chunk->is_object()) return BadResponse("malformed stream chunk");
  if (const Json* error = Member(*chunk, "error"); error != nullptr && !error->is_null()) {
    std::string message =
        error->is_string() ? error->get<std::string>() : StringMember(*error, "message");
    return LlmError(LlmErrorKind::kServerError, absl::StrCat("openai: stream error: ", message));
  }
  if (response_.id.empty()) response_.id = StringMember(*chunk, "id");
  if (response_.model.empty()) response_.model = StringMember(*chunk, "model");
  if (const Json* usage = Member(*chunk, "usage"); usage != nullptr && usage->is_object()) {
    response_.usage = DecodeUsage(*usage);
  }
  const Json* choices = Member(*chunk, "choices");
  if (choices == nullptr || choices->is_null()) return absl::OkStatus();
  if (!choices->is_array()) return BadResponse("malformed stream chunk: choices");
  for (const Json& choice : *choices) {
    if (!choice.is_object()) return BadResponse("malformed stream chunk: choice");
    if (IntMember(choice, "index") != 0) continue;  // n > 1 is never requested
    if (std::string reason = StringMember(choice, "finish_reason"); !reason.empty()) {
      response_.finish_reason = OpenAiFinishReason(reason);
    }
    const Json* delta = Member(choice, "delta");
    if (delta == nullptr || delta->is_null()) continue;
    if (!delta->is_object()) return BadResponse("malformed stream chunk: delta");
    if (!StringMember(*delta, "refusal").empty()) refused_ = true;
    if (std::string text = StringMember(*delta, "content"); !text.empty()) {
      response_.content += text;
      deltas->push_back({.text = std::move(text)});
    }
    const Json* calls = Member(*delta, "tool_calls");
    if (calls == nullptr || calls->is_null()) continue;
    if (!calls->is_array()) return BadResponse("malformed stream chunk: tool_calls");
    for (const Json& call : *calls) {
      if (!call.is_object()) return BadResponse("malformed stream chunk: tool call");
      const Json* function = Member(call, "function");
      std::string id = StringMember(call, "id");
      std::string name = function != nullptr ? StringMember(*function, "name") : "";
      std::string fragment = function != nullptr ? ArgumentsText(*function) : "";
      std::optional<int64_t> wire_index;
      if (const Json* index = Member(call, "index");
          index != nullptr && index->is_number_integer()) {
        wire_index = index->get<int64_t>();
      }
      AddToolCallDelta(wire_index, std::move(id), std::move(name), std::move(fragment), deltas);
    }
  }
  return absl::OkStatus();
}

void OpenAiStreamDecoder::ConsumeRead(wire_internal::OpenAiChunk& chunk,
                                      std::vector<StreamDelta>* deltas) {
  if (response_.id.empty()) response_.id = std::move(chunk.id);
  if (response_.model.empty()) response_.model = std::move(chunk.model);
  if (chunk.usage.has_value()) response_.usage = *chunk.usage;
  for (wire_internal::OpenAiChunkChoice& choice : chunk.choices) {
    if (choice.index != 0) continue;  // n > 1 is never requested
    if (!choice.finish_reason.empty()) {
      response_.finish_reason = OpenAiFinishReason(choice.finish_reason);
    }
    if (choice.refusal) refused_ = true;
    if (!choice.content.empty()) {
      response_.content += choice.content;
      deltas->push_back({.text = std::move(choice.content)});
    }
    for (wire_internal::OpenAiChunkToolCall& call : choice.tool_calls) {
      AddToolCallDelta(call.index, std::move(call.id), std::move(call.name),
                       std::move(call.arguments), deltas);
    }
  }
}

void OpenAiStreamDecoder::AddToolCallDelta(std::optional<int64_t> wire_index, std::string id,
                                           std::string name, std::string fragment,
                                           std::vector<StreamDelta>* deltas) {
  int tool_index = ResolveToolIndex(wire_index, id);
  if (tool_index < 0) {
    tool_index = static_cast<int>(response_.tool_calls.size());
    if (wire_index.has_value()) tool_index_by_wire_index_[*wire_index] = tool_index;
    response_.tool_calls.push_back({id, name, fragment});
    deltas->push_back({.tool_index = tool_index,
                       .tool_call_id = std::move(id),
                       .tool_name = std::move(name),
                       .arguments_fragment = std::move(fragment)});
    return;
  }
  ToolCall& existing = response_.tool_calls[tool_index];
  if (existing.id.empty()) existing.id = std::move(id);
  if (existing.name.empty()) existing.name = std::move(name);
  if (fragment.empty()) return;
  existing.arguments += fragment;
  deltas->push_back({.tool_index = tool_index, .arguments_fragment = std::move(fragment)});
}

int OpenAiStreamDecoder::ResolveToolIndex(std::optional<int64_t> wire_index,
                                          const std::string& id) const {
  if (wire_index.has_value()) {
    auto it = tool_index_by_wire_index_.find(*wire_index);
    return it == tool_index_by_wire_index_.end() ? -1 : it->second;
  }
  // Without an index (a few compatible servers omit it) a new id starts a
  // call and a delta without id continues the latest one.
  if (id.empty()) return static_cast<int>(response_.tool_calls.size()) - 1;
  for (size_t i = 0; i < response_.tool_calls.size(); ++i) {
    if (response_.tool_calls[i].id == id) return static_cast<int>(i);
  }
  return -1;
}

ChatResponse OpenAiStreamDecoder::TakeResponse() {
  if (refused_) {
    response_.content.clear();
    response_.finish_reason = FinishReason::kContentFilter;
  }
  return std::move(response_);
}

}  // namespace omniforge::llm
