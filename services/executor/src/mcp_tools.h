// The tools of the configured Model Context Protocol servers (libs/mcp's
// McpRegistry) as a ToolProvider: names `<server>__<tool>`, risk as the
// registry gives it (the config's tool_risk, else the server's annotations
// as far as its `trust` allows), the server's input schema
// as the parameters. A result becomes JSON for the model:
// {"text": <the content rendered as text>, "structured_content": {...}}.
#pragma once

#include <optional>
#include <set>
#include <string>

#include "libs/mcp/registry.h"
#include "services/executor/src/tool.h"

namespace omniforge::executor {

// The spec of one registry tool, named and sourced as in the registry;
// nullopt (logged) when its input schema is not a JSON object schema of type
// "object": no call to it could be validated.
std::optional<ToolSpec> McpToolSpec(const mcp::RegisteredTool& registered);

class McpTools final : public ToolProvider {
 public:
  // `registry` must outlive this provider; Refresh it before ListTools. The
  // tools of `excluded_servers` (those serving a domain) are not listed.
  explicit McpTools(mcp::McpRegistry& registry, std::set<std::string> excluded_servers = {})
      : registry_(registry), excluded_servers_(std::move(excluded_servers)) {}

  // The registry's current catalog, each tool as McpToolSpec makes it.
  absl::StatusOr<std::vector<ToolSpec>> ListTools() override;

  // Calls the server within call.deadline. A tool that ran and failed is a
  // result with is_error; the server unreachable is UNAVAILABLE, too slow
  // DEADLINE_EXCEEDED.
  absl::StatusOr<ToolResult> Invoke(const ToolCall& call) override;

 private:
  mcp::McpRegistry& registry_;
  const std::set<std::string> excluded_servers_;
};

}  // namespace omniforge::executor
