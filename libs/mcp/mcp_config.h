// The `mcp` section of a service's configuration: the MCP servers whose
// tools the executor offers.
//
//   mcp:
//     servers:
//       memory:                      # the namespace of its tools: memory__read_graph
//         transport: stdio
//         command: npx
//         args: [-y, "@modelcontextprotocol/server-memory"]
//         env: {MEMORY_FILE_PATH: /var/lib/omniforge/memory.json}
//         trust: read_hints          # its readOnlyHint tools are READ (default: none)
//       search:
//         transport: http
//         url: https://mcp.example.com/mcp
//         headers: {Authorization: "Bearer ..."}
//         timeout_ms: 30000
//         tool_risk: {publish: high}
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/core/config.h"
#include "libs/mcp/http_transport.h"
#include "libs/mcp/session.h"
#include "libs/mcp/stdio_transport.h"
#include "libs/mcp/tool_naming.h"

namespace omniforge::mcp {

enum class TransportKind { kStdio, kHttp };

struct McpServerConfig {
  std::string name;
  TransportKind transport = TransportKind::kStdio;
  StdioServerConfig stdio;  // transport: stdio
  HttpServerConfig http;    // transport: http
  SessionOptions session;
  // Whether the server's readOnlyHint may make a tool READ (key `trust`).
  ServerTrust trust = ServerTrust::kNone;
  // The operator's risk by the server's own tool name (key `tool_risk`),
  // over whatever the annotations and `trust` say.
  std::map<std::string, ToolRisk> tool_risk;
};

struct McpConfig {
  std::vector<McpServerConfig> servers;  // enabled ones, in file order
};

// Reads `mcp.servers.*`. Returns INVALID_ARGUMENT for a server that cannot
// work (bad name, unknown transport, no command or url, bad risk level, a
// `trust` other than none or read_hints);
// unknown keys and out-of-range numbers are reported by reader.Finish().
absl::StatusOr<McpConfig> ReadMcpConfig(core::ConfigReader& reader);

}  // namespace omniforge::mcp
