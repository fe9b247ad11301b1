// The OpenAI chat-completions wire format, as api.openai.com speaks it:
// validation errors with its messages (typos included), chat.completion
// bodies, chat.completion.chunk streams.
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "libs/llm/testing/fake_wire.h"

namespace omniforge::llm::testing::internal {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr char kFingerprint[] = "fp_f4ke0pen41";

ordered_json NullOr(const std::optional<std::string>& value) {
  return value ? ordered_json(*value) : ordered_json(nullptr);
}

HttpAnswer ErrorAnswer(int status, std::string message, std::string type,
                       const std::optional<std::string>& param,
                       const std::optional<std::string>& code) {
  ordered_json error;
  error["message"] = std::move(message);
  error["type"] = std::move(type);
  error["param"] = NullOr(param);
  error["code"] = NullOr(code);
  ordered_json body;
  body["error"] = std::move(error);
  return HttpAnswer{status, Dump(body), {}};
}

HttpAnswer InvalidRequest(std::string message,
                          const std::optional<std::string>& param = std::nullopt,
                          const std::optional<std::string>& code = std::nullopt) {
  return ErrorAnswer(400, std::move(message), "invalid_request_error", param, code);
}

HttpAnswer MissingParameter(const std::string& param) {
  return InvalidRequest(absl::StrCat("Missing required parameter: '", param, "'."), param,
                        "missing_required_parameter");
}

HttpAnswer InvalidType(const std::string& param, const std::string& expected, const json& got) {
  return InvalidRequest(absl::StrCat("Invalid type for '", param, "': expected ", expected,
                                     ", but got ", JsonTypeName(got), " instead."),
                        param, "invalid_type");
}

// Like OpenAI: enough of the key to recognise it, never the whole key.
std::string MaskKey(const std::string& key) {
  if (key.size() <= 10) return std::string(key.size(), '*');
  return absl::StrCat(key.substr(0, 3), std::string(key.size() - 7, '*'),
                      key.substr(key.size() - 4));
}

// Message content is a string or an array of parts; only text parts count.
std::string ContentText(const json& message) {
  const auto it = message.find("content");
  if (it == message.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  std::string text;
  if (it->is_array()) {
    for (const json& part : *it) {
      if (part.is_object() && StringOr(part, "type") == "text") text += StringOr(part, "text");
    }
  }
  return text;
}

HttpAnswer UnansweredToolCalls(const std::vector<std::string>& ids, size_t assistant_index) {
  return InvalidRequest(
      absl::StrCat("An assistant message with 'tool_calls' must be followed by tool messages "
                   "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                   "response messages: ",
                   absl::StrJoin(ids, ", ")),
      absl::StrCat("messages.[", assistant_index, "].role"));
}

ordered_json UsageJson(const FakeUsage& usage) {
  ordered_json prompt_details;
  prompt_details["cached_tokens"] = usage.cached_tokens;
  prompt_details["audio_tokens"] = 0;
  ordered_json completion_details;
  completion_details["reasoning_tokens"] = 0;
  completion_details["audio_tokens"] = 0;
  completion_details["accepted_prediction_tokens"] = 0;
  completion_details["rejected_prediction_tokens"] = 0;
  ordered_json out;
  out["prompt_tokens"] = usage.prompt_tokens;
  out["completion_tokens"] = usage.completion_tokens;
  out["total_tokens"] = usage.prompt_tokens + usage.completion_tokens;
  out["prompt_tokens_details"] = std::move(prompt_details);
  out["completion_tokens_details"] = std::move(completion_details);
  return out;
}

std::string Content(const Answer& answer) {
  return answer.structured ? *answer.structured : answer.text;
}

ordered_json ToolCallHeader(size_t index, const FakeToolCall& call) {
  ordered_json function;
  function["name"] = call.name;
  function["arguments"] = "";
  ordered_json out;
  out["index"] = index;
  out["id"] = call.id;
  out["type"] = "function";
  out["function"] = std::move(function);
  return out;
}

ordered_json ArgumentsFragment(size_t index, const std::string& fragment) {
  ordered_json function;
  function["arguments"] = fragment;
  ordered_json out;
  out["index"] = index;
  out["function"] = std::move(function);
  return out;
}

class OpenAiWireFormat final : public WireFormat {
 public:
  std::string_view api() const override { return "openai"; }

  std::variant<RequestView, HttpAnswer> Inspect(const std::map<std::string, std::string>& headers,
                                                const json& body,
                                                const std::string& api_key) const override {
    if (auto error = CheckKey(headers, api_key)) return *std::move(error);
    if (!body.is_object()) {
      return InvalidRequest(
          "We could not parse the JSON body of your request. (HINT: This likely means you aren't "
          "using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was "
          "sent was not valid JSON. If you have trouble figuring out how to fix this, please "
          "open an issue at https://github.com/openai/openai-python/issues.)");
    }
    RequestView view;
    for (auto inspect :
         {InspectModelAndMessages, InspectStream, InspectTools, InspectResponseFormat}) {
      if (auto error = inspect(body, view)) return *std::move(error);
    }
    return view;
  }

  // The key in the Authorization header, as OpenAI words a missing or a
  // wrong one; nothing to check when the server takes any key.
  static std::optional<HttpAnswer> CheckKey(const std::map<std::string, std::string>& headers,
                                            const std::string& api_key) {
    if (!api_key.empty()) {
      const auto it = headers.find("authorization");
      if (it == headers.end()) {
        return ErrorAnswer(
            401,
            "You didn't provide an API key. You need to provide your API key in an Authorization "
            "header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password "
            "field (with blank username) if you're accessing the API from your browser and are "
            "prompted for a username and password. You can obtain an API key from "
            "https://platform.openai.com/account/api-keys.",
            "invalid_request_error", std::nullopt, std::nullopt);
      }
      if (it->second != absl::StrCat("Bearer ", api_key)) {
        std::string given = it->second;
        if (given.starts_with("Bearer ")) given.erase(0, 7);
        return ErrorAnswer(401,
                           absl::StrCat("Incorrect API key provided: ", MaskKey(given),
                                        ". You can find your API key at "
                                        "https://platform.openai.com/account/api-keys."),
                           "invalid_request_error", std::nullopt, "invalid_api_key");
      }
    }
    return std::nullopt;
  }

  static std::optional<HttpAnswer> InspectModelAndMessages(const json& body, RequestView& view) {
    const auto model = body.find("model");
    if (model == body.end() || model->is_null()) {
      return InvalidRequest("you must provide a model parameter");
    }
    if (!model->is_string()) return InvalidType("model", "a string", *model);
    view.model = model->get<std::string>();

    const auto messages = body.find("messages");
    if (messages == body.end()) return MissingParameter("messages");
    if (!messages->is_array()) return InvalidType("messages", "an array of objects", *messages);
    if (messages->empty()) {
      return InvalidRequest(
          "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an "
          "empty array instead.",
          "messages", "empty_array");
    }
    return InspectMessages(*messages, view);
  }

  static std::optional<HttpAnswer> InspectStream(const json& body, RequestView& view) {
    const auto stream = body.find("stream");
    view.stream = stream != body.end() && stream->is_boolean() && stream->get<bool>();
    const auto stream_options = body.find("stream_options");
    if (stream_options != body.end() && !stream_options->is_null()) {
      if (!view.stream) {
        return InvalidRequest(
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
            "stream_options");
      }
      view.include_usage = stream_options->is_object() &&
                           stream_options->value("include_usage", json(false)) == json(true);
    }
    return std::nullopt;
  }

  static std::optional<HttpAnswer> InspectTools(const json& body, RequestView& view) {
    if (const auto tools = body.find("tools"); tools != body.end() && !tools->is_null()) {
      if (!tools->is_array()) return InvalidType("tools", "an array of objects", *tools);
      for (size_t i = 0; i < tools->size(); ++i) {
        const json& tool = (*tools)[i];
        const std::string at = absl::StrCat("tools[", i, "]");
        if (!tool.is_object() || !tool.contains("function") || !tool["function"].is_object()) {
          return MissingParameter(at + ".function");
        }
        const std::string name = StringOr(tool["function"], "name");
        if (name.empty()) return MissingParameter(at + ".function.name");
        view.tool_names.push_back(name);
      }
    }
    return std::nullopt;
  }

  // A structured answer asked for: its schema's name and the schema.
  static std::optional<HttpAnswer> InspectResponseFormat(const json& body, RequestView& view) {
    if (const auto format = body.find("response_format");
        format != body.end() && format->is_object()) {
      const std::string type = StringOr(*format, "type");
      if (type == "json_schema") {
        const auto schema = format->find("json_schema");
        if (schema == format->end() || !schema->is_object()) {
          return MissingParameter("response_format.json_schema");
        }
        view.structured_name = StringOr(*schema, "name");
        if (view.structured_name.empty()) {
          return MissingParameter("response_format.json_schema.name");
        }
        view.structured_schema = schema->value("schema", json::object());
      } else if (type == "json_object") {
        view.structured_schema = json::object();
      }
    }
    return std::nullopt;
  }

  HttpAnswer Error(int status) const override {
    switch (status) {
      case 400:
        return InvalidRequest("Invalid request.");
      case 401:
        return ErrorAnswer(401, "Incorrect API key provided.", "invalid_request_error",
                           std::nullopt, "invalid_api_key");
      case 404:
        return ErrorAnswer(404, "The model does not exist or you do not have access to it.",
                           "invalid_request_error", std::nullopt, "model_not_found");
      case 429:
        return ErrorAnswer(429,
                           "Rate limit reached for requests per min (RPM). Please try again in "
                           "1s. Visit https://platform.openai.com/account/rate-limits to learn "
                           "more.",
                           "requests", std::nullopt, "rate_limit_exceeded");
      case 503:
        return ErrorAnswer(503, "The server is overloaded or not ready yet.", "server_error",
                           std::nullopt, std::nullopt);
      default:
        if (status >= 500) {
          return ErrorAnswer(status,
                             "The server had an error while processing your request. Sorry "
                             "about that!",
                             "server_error", std::nullopt, std::nullopt);
        }
        return ErrorAnswer(status, "Request failed.", "invalid_request_error", std::nullopt,
                           std::nullopt);
    }
  }

  std::string ResponseId(uint64_t seq) const override {
    return absl::StrFormat("chatcmpl-FAKE%025d", seq);
  }
  std::string ToolCallId(uint64_t seq) const override {
    return absl::StrFormat("call_FAKE%020d", seq);
  }

  std::string Body(const Answer& answer) const override {
    const std::string content = Content(answer);
    ordered_json message;
    message["role"] = "assistant";
    message["content"] = content.empty() && !answer.tool_calls.empty() ? ordered_json(nullptr)
                                                                       : ordered_json(content);
    if (!answer.tool_calls.empty()) {
      ordered_json calls = ordered_json::array();
      for (const FakeToolCall& call : answer.tool_calls) {
        ordered_json function;
        function["name"] = call.name;
        function["arguments"] = call.arguments_json;
        ordered_json item;
        item["id"] = call.id;
        item["type"] = "function";
        item["function"] = std::move(function);
        calls.push_back(std::move(item));
      }
      message["tool_calls"] = std::move(calls);
    }
    message["refusal"] = nullptr;
    message["annotations"] = ordered_json::array();

    ordered_json choice;
    choice["index"] = 0;
    choice["message"] = std::move(message);
    choice["logprobs"] = nullptr;
    choice["finish_reason"] = answer.finish_reason;

    ordered_json body;
    body["id"] = answer.id;
    body["object"] = "chat.completion";
    body["created"] = answer.created;
    body["model"] = answer.model;
    body["choices"] = ordered_json::array({std::move(choice)});
    body["usage"] = UsageJson(answer.usage);
    body["service_tier"] = "default";
    body["system_fingerprint"] = kFingerprint;
    return Dump(body);
  }

  std::vector<StreamEvent> Events(const Answer& answer, const RequestView& request,
                                  int chunk_chars) const override {
    std::vector<StreamEvent> events;
    auto chunk = [&](ordered_json choices) {
      ordered_json out;
      out["id"] = answer.id;
      out["object"] = "chat.completion.chunk";
      out["created"] = answer.created;
      out["model"] = answer.model;
      out["service_tier"] = "default";
      out["system_fingerprint"] = kFingerprint;
      out["choices"] = std::move(choices);
      if (request.include_usage) out["usage"] = nullptr;
      return out;
    };
    auto add = [&](ordered_json delta, bool output, const char* finish_reason = nullptr) {
      ordered_json choice;
      choice["index"] = 0;
      choice["delta"] = std::move(delta);
      choice["logprobs"] = nullptr;
      choice["finish_reason"] = finish_reason ? ordered_json(finish_reason) : ordered_json(nullptr);
      events.push_back(
          {absl::StrCat("data: ", Dump(chunk(ordered_json::array({std::move(choice)}))), "\n\n"),
           output});
    };
    auto add_arguments = [&](size_t index) {
      for (const std::string& fragment : SplitArguments(answer.tool_calls[index].arguments_json)) {
        ordered_json delta;
        delta["tool_calls"] = ordered_json::array({ArgumentsFragment(index, fragment)});
        add(std::move(delta), true);
      }
    };

    const std::string content = Content(answer);
    size_t next_call = 0;
    ordered_json first;
    first["role"] = "assistant";
    if (content.empty() && !answer.tool_calls.empty()) {
      // OpenAI opens a tool-calls-only answer with the first call's header.
      first["content"] = nullptr;
      first["tool_calls"] = ordered_json::array({ToolCallHeader(0, answer.tool_calls[0])});
      first["refusal"] = nullptr;
      add(std::move(first), true);
      add_arguments(0);
      next_call = 1;
    } else {
      first["content"] = "";
      first["refusal"] = nullptr;
      add(std::move(first), false);
      for (std::string& piece : SplitText(content, chunk_chars)) {
        ordered_json delta;
        delta["content"] = std::move(piece);
        add(std::move(delta), true);
      }
    }
    for (size_t i = next_call; i < answer.tool_calls.size(); ++i) {
      ordered_json delta;
      delta["tool_calls"] = ordered_json::array({ToolCallHeader(i, answer.tool_calls[i])});
      add(std::move(delta), true);
      add_arguments(i);
    }
    add(ordered_json::object(), false, answer.finish_reason.c_str());
    if (request.include_usage) {
      ordered_json usage_chunk = chunk(ordered_json::array());
      usage_chunk["usage"] = UsageJson(answer.usage);
      events.push_back({absl::StrCat("data: ", Dump(usage_chunk), "\n\n"), false});
    }
    events.push_back({"data: [DONE]\n\n", false});
    return events;
  }

  std::string StreamErrorEvent() const override {
    return absl::StrCat("data: ", Error(500).body, "\n\n");
  }

 private:
  // Roles and the tool-call protocol: every tool message answers a call of
  // the assistant message right before the run of tool messages, and every
  // call is answered before the conversation moves on.
  static std::optional<HttpAnswer> InspectMessages(const json& messages, RequestView& view) {
    static const std::set<std::string> kRoles = {"system",    "developer", "user",
                                                 "assistant", "tool",      "function"};
    std::vector<std::string> unanswered;
    std::set<std::string> answerable;
    size_t calls_index = 0;
    bool after_calls = false;  // inside an assistant tool_calls turn and its answers
    std::string last_role;
    for (size_t i = 0; i < messages.size(); ++i) {
      const json& message = messages[i];
      const std::string at = absl::StrCat("messages[", i, "]");
      if (!message.is_object()) return InvalidType(at, "an object", message);
      const auto role_it = message.find("role");
      if (role_it == message.end()) return MissingParameter(at + ".role");
      const std::string role = role_it->is_string() ? role_it->get<std::string>() : "";
      if (!kRoles.contains(role)) {
        return InvalidRequest(
            absl::StrCat("Invalid value: '", role_it->is_string() ? role : role_it->dump(),
                         "'. Supported values are: 'system', 'assistant', 'user', 'function', "
                         "'tool', and 'developer'."),
            at + ".role", "invalid_value");
      }
      last_role = role;
      view.prompt_chars += ContentText(message).size();
      if (role == "tool") {
        const std::string dotted = absl::StrCat("messages.[", i, "]");
        if (!after_calls) {
          return InvalidRequest(
              "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
              "message with 'tool_calls'.",
              dotted + ".role");
        }
        const std::string id = StringOr(message, "tool_call_id");
        if (id.empty()) return MissingParameter(dotted + ".tool_call_id");
        if (!answerable.contains(id)) {
          return InvalidRequest(absl::StrCat("Invalid parameter: 'tool_call_id' of '", id,
                                             "' not found in 'tool_calls' of previous message."),
                                dotted + ".tool_call_id");
        }
        std::erase(unanswered, id);
        continue;
      }
      if (!unanswered.empty()) return UnansweredToolCalls(unanswered, calls_index);
      after_calls = false;
      if (role == "user") view.last_user_text = ContentText(message);
      const auto calls = message.find("tool_calls");
      if (role != "assistant" || calls == message.end() || !calls->is_array() || calls->empty()) {
        continue;
      }
      answerable.clear();
      for (const json& call : *calls) {
        if (!call.is_object()) continue;
        const std::string id = StringOr(call, "id");
        unanswered.push_back(id);
        answerable.insert(id);
        if (const auto fn = call.find("function"); fn != call.end() && fn->is_object()) {
          view.prompt_chars += StringOr(*fn, "name").size() + StringOr(*fn, "arguments").size();
        }
      }
      calls_index = i;
      after_calls = true;
    }
    if (!unanswered.empty()) return UnansweredToolCalls(unanswered, calls_index);
    view.last_is_tool_result = last_role == "tool";
    return std::nullopt;
  }
};

}  // namespace

const WireFormat& OpenAiWire() {
  static const OpenAiWireFormat kWire;
  return kWire;
}

}  // namespace omniforge::llm::testing::internal
