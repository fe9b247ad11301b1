#include "libs/mcp/client.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "libs/core/call_deadline.h"
#include "libs/mcp/json_rpc.h"
#include "libs/mcp/session.h"

namespace omniforge::mcp {
namespace {

using nlohmann::json;

// A server sending more pages than this is looping.
constexpr int kMaxPages = 1000;

Clock::time_point SteadyDeadline(const CallOptions& options) {
  std::optional<std::chrono::system_clock::time_point> deadline = options.deadline;
  if (!deadline) deadline = core::CallDeadline();
  if (!deadline) return Clock::time_point::max();
  const auto left = *deadline - std::chrono::system_clock::now();
  if (left <= std::chrono::system_clock::duration::zero()) return Clock::now();
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(left);
}

std::optional<bool> OptionalBool(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_boolean()) return std::nullopt;
  return it->get<bool>();
}

std::string StringOr(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Decoded size of base64 text (whitespace-free, as MCP sends it).
size_t Base64Bytes(const std::string& text) {
  size_t padding = 0;
  if (!text.empty() && text.back() == '=') ++padding;
  if (text.size() > 1 && text[text.size() - 2] == '=') ++padding;
  return text.size() / 4 * 3 - std::min(padding, text.size() / 4 * 3);
}

absl::StatusOr<Tool> ToolFromJson(const json& value) {
  if (!value.is_object()) return absl::DataLossError("a tools/list entry is not an object");
  const auto name = value.find("name");
  if (name == value.end() || !name->is_string() || name->get<std::string>().empty()) {
    return absl::DataLossError(
        absl::StrCat("a tools/list entry has no name: ", Excerpt(value.dump())));
  }
  Tool tool;
  tool.name = name->get<std::string>();
  tool.title = StringOr(value, "title");
  tool.description = StringOr(value, "description");
  const auto input = value.find("inputSchema");
  if (input != value.end() && input->is_object()) {
    tool.input_schema_json = input->dump();
  } else if (input != value.end() && !input->is_null()) {
    return absl::DataLossError(
        absl::StrCat("tool '", tool.name, "' has an inputSchema that is not an object"));
  } else {
    tool.input_schema_json = R"({"type":"object"})";
  }
  if (const auto output = value.find("outputSchema");
      output != value.end() && output->is_object()) {
    tool.output_schema_json = output->dump();
  }
  if (const auto a = value.find("annotations"); a != value.end() && a->is_object()) {
    if (const auto title = a->find("title"); title != a->end() && title->is_string()) {
      tool.annotations.title = title->get<std::string>();
    }
    tool.annotations.read_only_hint = OptionalBool(*a, "readOnlyHint");
    tool.annotations.destructive_hint = OptionalBool(*a, "destructiveHint");
    tool.annotations.idempotent_hint = OptionalBool(*a, "idempotentHint");
    tool.annotations.open_world_hint = OptionalBool(*a, "openWorldHint");
  }
  return tool;
}

ContentBlock BlockFromJson(const json& value) {
  ContentBlock block;
  if (!value.is_object()) return block;
  block.type_name = StringOr(value, "type");
  const std::string& type = block.type_name;
  if (type == "text") {
    block.type = ContentBlock::Type::kText;
    block.text = StringOr(value, "text");
  } else if (type == "image" || type == "audio") {
    block.type = type == "image" ? ContentBlock::Type::kImage : ContentBlock::Type::kAudio;
    block.mime_type = StringOr(value, "mimeType");
    block.data_bytes = Base64Bytes(StringOr(value, "data"));
  } else if (type == "resource_link") {
    block.type = ContentBlock::Type::kResourceLink;
    block.uri = StringOr(value, "uri");
    block.name = StringOr(value, "name");
    block.description = StringOr(value, "description");
    block.mime_type = StringOr(value, "mimeType");
  } else if (type == "resource") {
    block.type = ContentBlock::Type::kEmbeddedResource;
    if (const auto r = value.find("resource"); r != value.end() && r->is_object()) {
      block.uri = StringOr(*r, "uri");
      block.mime_type = StringOr(*r, "mimeType");
      block.text = StringOr(*r, "text");
      block.data_bytes = Base64Bytes(StringOr(*r, "blob"));
    }
  }
  return block;
}

absl::StatusOr<CallToolResult> CallToolResultFromJson(const json& value) {
  if (!value.is_object()) return absl::DataLossError("the tools/call result is not an object");
  CallToolResult result;
  const auto content = value.find("content");
  if (content != value.end() && content->is_array()) {
    for (const json& block : *content) result.content.push_back(BlockFromJson(block));
  } else if (content != value.end() && !content->is_null()) {
    return absl::DataLossError("the tools/call result's content is not an array");
  }
  if (const auto structured = value.find("structuredContent");
      structured != value.end() && !structured->is_null()) {
    result.structured_content_json = structured->dump();
  }
  result.is_error = value.value("isError", false);
  // 2024-11-05 servers may answer with `toolResult` instead of content.
  if (content == value.end() && !result.structured_content_json) {
    if (const auto legacy = value.find("toolResult"); legacy != value.end()) {
      result.structured_content_json = legacy->dump();
    } else {
      return absl::DataLossError(
          absl::StrCat("the tools/call result has no content: ", Excerpt(value.dump())));
    }
  }
  return result;
}

}  // namespace

std::string RenderForModel(const CallToolResult& result) {
  std::vector<std::string> parts;
  bool had_text = false;
  for (const ContentBlock& block : result.content) {
    switch (block.type) {
      case ContentBlock::Type::kText:
        parts.push_back(block.text);
        had_text = true;
        break;
      case ContentBlock::Type::kImage:
      case ContentBlock::Type::kAudio:
        parts.push_back(absl::StrCat("[", block.type_name, " ", block.mime_type, ", ",
                                     block.data_bytes, " bytes]"));
        break;
      case ContentBlock::Type::kResourceLink:
        parts.push_back(absl::StrCat("[resource link ", block.name, " <", block.uri, ">",
                                     block.description.empty() ? "" : ": ", block.description,
                                     "]"));
        break;
      case ContentBlock::Type::kEmbeddedResource:
        if (!block.text.empty()) {
          parts.push_back(absl::StrCat("[resource <", block.uri, ">]\n", block.text));
        } else {
          parts.push_back(absl::StrCat("[resource <", block.uri, "> ", block.mime_type, ", ",
                                       block.data_bytes, " bytes]"));
        }
        break;
      case ContentBlock::Type::kUnknown:
        parts.push_back(
            absl::StrCat("[", block.type_name.empty() ? "unknown" : block.type_name, " content]"));
        break;
    }
  }
  if (!had_text && result.structured_content_json) parts.push_back(*result.structured_content_json);
  return absl::StrJoin(parts, "\n");
}

absl::StatusOr<Tool> ParseTool(std::string_view json_text) {
  const json value = json::parse(json_text, nullptr, false);
  if (value.is_discarded()) return absl::DataLossError("tool is not JSON");
  return ToolFromJson(value);
}

absl::StatusOr<CallToolResult> ParseCallToolResult(std::string_view json_text) {
  const json value = json::parse(json_text, nullptr, false);
  if (value.is_discarded()) return absl::DataLossError("result is not JSON");
  return CallToolResultFromJson(value);
}

McpClient::McpClient(std::unique_ptr<McpTransport> transport, const SessionOptions& options)
    : session_(std::make_unique<McpSession>(std::move(transport), options)) {}

McpClient::~McpClient() = default;

absl::Status McpClient::Connect(const CallOptions& options) {
  return session_->Connect(SteadyDeadline(options));
}

absl::StatusOr<std::vector<Tool>> McpClient::ListTools(const CallOptions& options) {
  RequestOptions request;
  request.deadline = SteadyDeadline(options);
  std::vector<Tool> tools;
  std::set<std::string> cursors;
  std::optional<std::string> cursor;
  for (int page = 0; page < kMaxPages; ++page) {
    json params = json::object();
    if (cursor) params["cursor"] = *cursor;
    absl::StatusOr<json> result = session_->Request("tools/list", params, request);
    if (!result.ok()) return result.status();
    const auto entries = result->find("tools");
    if (!result->is_object() || entries == result->end() || !entries->is_array()) {
      return absl::DataLossError(absl::StrCat("MCP server '", session_->options().server_name,
                                              "' sent a tools/list result without tools"));
    }
    for (const json& entry : *entries) {
      absl::StatusOr<Tool> tool = ToolFromJson(entry);
      if (!tool.ok()) {
        return absl::DataLossError(absl::StrCat("MCP server '", session_->options().server_name,
                                                "': ", tool.status().message()));
      }
      tools.push_back(std::move(*tool));
    }
    const auto next = result->find("nextCursor");
    if (next == result->end() || !next->is_string() || next->get<std::string>().empty()) {
      return tools;
    }
    cursor = next->get<std::string>();
    if (!cursors.insert(*cursor).second) {
      return absl::DataLossError(absl::StrCat("MCP server '", session_->options().server_name,
                                              "' repeated the tools/list cursor '",
                                              Excerpt(*cursor, 80), "'"));
    }
  }
  return absl::DataLossError(absl::StrCat("MCP server '", session_->options().server_name,
                                          "' sent more than ", kMaxPages, " pages of tools"));
}

absl::StatusOr<CallToolResult> McpClient::CallTool(std::string_view name,
                                                   std::string_view arguments_json,
                                                   const CallOptions& options) {
  json arguments = json::object();
  if (arguments_json.find_first_not_of(" \t\r\n") != std::string_view::npos) {
    arguments = json::parse(arguments_json, nullptr, false);
    if (arguments.is_discarded() || !arguments.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat("arguments for tool '", Sv(name), "' must be a JSON object"));
    }
  }
  RequestOptions request;
  request.deadline = SteadyDeadline(options);
  request.on_progress = options.on_progress;
  request.headers = options.headers;
  absl::StatusOr<json> result = session_->Request(
      "tools/call", {{"name", name}, {"arguments", std::move(arguments)}}, request);
  if (!result.ok()) return result.status();
  absl::StatusOr<CallToolResult> decoded = CallToolResultFromJson(*result);
  if (!decoded.ok()) {
    return absl::DataLossError(absl::StrCat("MCP server '", session_->options().server_name,
                                            "' tool '", Sv(name),
                                            "': ", decoded.status().message()));
  }
  return decoded;
}

absl::Status McpClient::Ping(const CallOptions& options) {
  RequestOptions request;
  request.deadline = SteadyDeadline(options);
  return session_->Request("ping", nullptr, request).status();
}

void McpClient::Shutdown() { session_->Shutdown(); }

std::optional<ServerInfo> McpClient::server_info() const { return session_->server_info(); }

void McpClient::SetToolsChangedListener(std::function<void()> listener) {
  session_->SetToolsChangedListener(std::move(listener));
}

int McpClient::restarts() const { return session_->restarts(); }

}  // namespace omniforge::mcp
