// The tools of the configured Model Context Protocol servers (libs/mcp's
// McpRegistry) as a ToolProvider: names `<server>__<tool>`, risk from the
// server's annotations or the config's tool_risk, the server's input schema
// as the parameters. A result becomes JSON for the model:
// {"text": <the content rendered as text>, "structured_content": {...}}.
#pragma once

#include "libs/mcp/registry.h"
#include "services/executor/src/tool.h"

namespace omniforge::executor {

class McpTools final : public ToolProvider {
 public:
  // `registry` must outlive this provider; Refresh it before ListTools.
  explicit McpTools(mcp::McpRegistry& registry) : registry_(registry) {}

  // The registry's current catalog. Tools whose input schema is not a JSON
  // object schema of type "object" are left out (and logged): no call to
  // them could be validated.
  absl::StatusOr<std::vector<ToolSpec>> ListTools() override;

  // Calls the server within call.deadline. A tool that ran and failed is a
  // result with is_error; the server unreachable is UNAVAILABLE, too slow
  // DEADLINE_EXCEEDED.
  absl::StatusOr<ToolResult> Invoke(const ToolCall& call) override;

 private:
  mcp::McpRegistry& registry_;
};

}  // namespace omniforge::executor
