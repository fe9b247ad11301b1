#include "services/sandbox/src/mcp_server.h"

#include "absl/strings/str_cat.h"
#include "libs/mcp/json_rpc.h"

namespace omniforge::sandbox {
namespace {

using Json = nlohmann::json;

Json CallResultJson(const ToolResult& result) {
  return {{"content", Json::array({{{"type", "text"}, {"text", result.text}}})},
          {"structuredContent", result.structured},
          {"isError", result.is_error}};
}

}  // namespace

McpLineServer::McpLineServer(SandboxTools& tools, std::string name, std::string version,
                             std::string instructions)
    : tools_(tools),
      name_(std::move(name)),
      version_(std::move(version)),
      instructions_(std::move(instructions)) {}

std::vector<std::string> McpLineServer::HandleLine(std::string_view line) {
  if (line.size() > kMaxLineBytes) {
    return {mcp::EncodeError(nullptr, mcp::kInvalidRequest,
                             absl::StrCat("message larger than ", kMaxLineBytes, " bytes"))};
  }
  auto messages = mcp::ParseIncoming(line);
  if (!messages.ok()) {
    const bool json = Json::accept(line);
    return {mcp::EncodeError(nullptr, json ? mcp::kInvalidRequest : mcp::kParseError,
                             std::string(messages.status().message()))};
  }
  std::vector<std::string> answers;
  for (const mcp::IncomingMessage& message : *messages) {
    if (message.kind != mcp::IncomingMessage::Kind::kRequest) continue;
    try {
      answers.push_back(Answer(message.id, message.method, message.params));
    } catch (const std::exception& e) {
      // A value of an unexpected type somewhere in the params.
      answers.push_back(mcp::EncodeError(message.id, mcp::kInvalidParams,
                                         absl::StrCat("invalid params: ", e.what())));
    }
  }
  return answers;
}

void McpLineServer::Serve(std::istream& in, std::ostream& out) {
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    for (const std::string& answer : HandleLine(line)) out << answer << '\n';
    out.flush();
  }
}

Json McpLineServer::Initialize(const Json& params) const {
  std::string version = mcp::kSupportedProtocolVersions[0];
  if (params.is_object() && params.contains("protocolVersion") &&
      params["protocolVersion"].is_string() &&
      mcp::IsSupportedProtocolVersion(params["protocolVersion"].get<std::string>())) {
    version = params["protocolVersion"].get<std::string>();
  }
  return {{"protocolVersion", version},
          {"capabilities", {{"tools", {{"listChanged", false}}}}},
          {"serverInfo", {{"name", name_}, {"version", version_}}},
          {"instructions", instructions_}};
}

std::string McpLineServer::Answer(const Json& id, const std::string& method, const Json& params) {
  if (method == "initialize") return mcp::EncodeResult(id, Initialize(params));
  if (method == "ping") return mcp::EncodeResult(id, Json::object());
  if (method == "tools/list") return mcp::EncodeResult(id, {{"tools", tools_.ListTools()}});
  if (method == "tools/call") return CallTool(id, params);
  return mcp::EncodeError(id, mcp::kMethodNotFound, absl::StrCat("method not found: ", method));
}

std::string McpLineServer::CallTool(const Json& id, const Json& params) {
  if (!params.is_object() || !params.contains("name") || !params["name"].is_string()) {
    return mcp::EncodeError(id, mcp::kInvalidParams, "tools/call: params.name must be a string");
  }
  const Json arguments = params.value("arguments", Json::object());
  auto result = tools_.Call(params["name"].get<std::string>(), arguments);
  if (!result.ok()) {
    return mcp::EncodeError(id, mcp::kInvalidParams,
                            absl::StrCat("Unknown tool: ", params["name"].get<std::string>()));
  }
  return mcp::EncodeResult(id, CallResultJson(*result));
}

}  // namespace omniforge::sandbox
