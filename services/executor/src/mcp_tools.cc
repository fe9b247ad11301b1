#include "services/executor/src/mcp_tools.h"

#include "absl/strings/str_cat.h"
#include "libs/core/logging.h"

namespace omniforge::executor {
namespace {

ToolRisk FromMcp(mcp::ToolRisk risk) {
  switch (risk) {
    case mcp::ToolRisk::kRead:
      return ToolRisk::kRead;
    case mcp::ToolRisk::kWrite:
      return ToolRisk::kWrite;
    case mcp::ToolRisk::kHigh:
      return ToolRisk::kHigh;
  }
  return ToolRisk::kHigh;
}

}  // namespace

std::optional<ToolSpec> McpToolSpec(const mcp::RegisteredTool& registered) {
  const auto schema = nlohmann::json::parse(registered.tool.input_schema_json, nullptr, false);
  if (!schema.is_object() || schema.value("type", "") != "object") {
    core::LogWarn("mcp tool left out: its input schema is not an object schema",
                  {{"server", registered.server}, {"tool", registered.tool.name}});
    return std::nullopt;
  }
  std::string description = registered.tool.description;
  const std::string& title = registered.tool.title;
  if (!title.empty() && !description.starts_with(title)) {
    description = description.empty() ? title : title + ": " + description;
  }
  if (description.empty()) {
    description = absl::StrCat("Tool '", registered.tool.name, "' of the MCP server '",
                               registered.server, "'.");
  }
  return ToolSpec{registered.name, std::move(description), registered.tool.input_schema_json,
                  FromMcp(registered.risk), registered.server};
}

absl::StatusOr<std::vector<ToolSpec>> McpTools::ListTools() {
  std::vector<ToolSpec> specs;
  for (const mcp::RegisteredTool& registered : registry_.Tools()) {
    if (excluded_servers_.contains(registered.server)) continue;
    if (auto spec = McpToolSpec(registered)) specs.push_back(*std::move(spec));
  }
  return specs;
}

absl::StatusOr<ToolResult> McpTools::Invoke(const ToolCall& call) {
  mcp::CallOptions options;
  options.deadline = call.deadline;
  // A per_tenant server answers from this tenant's session; identity
  // headers carry the tenant and user to an HTTP server.
  options.caller = call.who;
  auto result = registry_.CallTool(
      call.tool_name, call.arguments.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
      options);
  if (!result.ok()) return result.status();
  nlohmann::json out = {{"text", mcp::RenderForModel(*result)}};
  if (result->structured_content_json.has_value()) {
    auto structured = nlohmann::json::parse(*result->structured_content_json, nullptr, false);
    if (!structured.is_discarded()) out["structured_content"] = std::move(structured);
  }
  return ToolResult{out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                    result->is_error};
}

}  // namespace omniforge::executor
