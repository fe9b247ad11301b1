// Domain sub-agents: email, calendar and contacts, each a group of tools of
// the MCP servers the config names for it (`domains.<domain>.servers`).
// Their tools are named `<domain>__<tool>` and answer the planner with one
// shape, whatever the third-party service returned:
//
//   {"domain": "email", "tool": "search_messages",
//    "status": "success" | "partial" | "error",
//    "data": <structuredContent, else the text content (parsed when JSON)>,
//    "confidence": 0..1, "limitations": ["..."]}
//
// A call to a domain that is not configured, or whose servers are down, is
// refused with the reason (WhyAbsent).
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/core/config.h"
#include "libs/mcp/mcp_config.h"
#include "libs/mcp/registry.h"
#include "services/executor/src/tool.h"

namespace omniforge::executor {

// The domains an executor can serve.
inline constexpr const char* kDomains[] = {"email", "calendar", "contacts"};

struct DomainConfig {
  std::string domain;                // one of kDomains
  std::vector<std::string> servers;  // names of mcp.servers entries
};

// Reads `domains.<domain>.servers`. INVALID_ARGUMENT naming the key for an
// unknown domain, an empty server list, or a server that `mcp` does not
// have (or has disabled), or that another domain already claims.
absl::StatusOr<std::vector<DomainConfig>> ReadDomainConfig(core::ConfigReader& reader,
                                                           const mcp::McpConfig& mcp);

// The planner's view of one MCP tool result of `domain` (the shape above).
// Partial: structuredContent says `partial: true` or `truncated: true`, or
// carries a non-empty `nextCursor` (more matched than was returned).
// Confidence: structuredContent's own `confidence` in [0, 1] when given;
// else 1 for structured data, 0.8 for text only, 0.5 for partial, 0 for an
// error. Limitations: structuredContent's `limitations` strings, plus what
// the shape lost (more results, binary content left out) and, for an error,
// the service's message.
nlohmann::json DomainResult(const std::string& domain, const std::string& tool,
                            const mcp::CallToolResult& result);

class DomainTools final : public ToolProvider {
 public:
  // `registry` must outlive this provider. Servers that serve a domain are
  // the registry's; McpTools leaves them out (DomainServers).
  DomainTools(mcp::McpRegistry& registry, std::vector<DomainConfig> domains);

  // The tools of each configured domain's servers (as the registry last
  // listed them), with the registry's risk. Names that are not valid tool
  // names, or taken twice within a domain, are left out and logged.
  absl::StatusOr<std::vector<ToolSpec>> ListTools() override;

  // A DomainResult; is_error when its status is "error". NOT_FOUND for a
  // tool ListTools did not return; the registry's UNAVAILABLE or
  // DEADLINE_EXCEEDED when the server cannot answer in time.
  absl::StatusOr<ToolResult> Invoke(const ToolCall& call) override;

  // For `<domain>__...` names of a domain without tools: that it is not
  // configured, or which of its servers failed and how.
  std::optional<std::string> WhyAbsent(std::string_view tool_name) const override;

  // The servers that belong to a domain.
  std::vector<std::string> DomainServers() const;

 private:
  struct Route {
    std::string domain;
    std::string registry_name;  // `<server>__<tool>` in the registry
    std::string tool;           // the server's own name
  };

  mcp::McpRegistry& registry_;
  std::vector<DomainConfig> domains_;
  mutable std::mutex mu_;
  std::map<std::string, Route> routes_;  // by domain tool name, as last listed
};

}  // namespace omniforge::executor
