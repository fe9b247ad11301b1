// The `mcp` section of a service's configuration: the MCP servers whose
// tools the executor offers.
//
//   mcp:
//     servers:
//       memory:                      # the namespace of its tools: memory__read_graph
//         transport: stdio
//         command: npx               # npx packages need an exact version
//         args: [-y, "@modelcontextprotocol/server-memory@2026.8.31"]
//         per_tenant: true           # one process per tenant; {tenant} below
//         env: {MEMORY_FILE_PATH: "/var/lib/omniforge/memory/{tenant}/memory.json"}
//         write_paths: ["/var/lib/omniforge/memory/{tenant}"]   # its file sandbox
//         trust: read_hints          # its readOnlyHint tools are READ (default: none)
//       search:
//         transport: http
//         url: https://mcp.example.com/mcp
//         headers: {Authorization: "Bearer ..."}
//         identity_headers: {tenant: X-Omniforge-Tenant, user: X-Omniforge-User}
//         timeout_ms: 30000
//         tool_risk: {publish: high}
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/core/config.h"
#include "libs/mcp/http_transport.h"
#include "libs/mcp/session.h"
#include "libs/mcp/stdio_transport.h"
#include "libs/mcp/tenant_sessions.h"
#include "libs/mcp/tool_naming.h"

namespace omniforge::mcp {

enum class TransportKind { kStdio, kHttp };

// The HTTP headers that carry the caller's identity on each call (key
// `identity_headers`, names chosen by the operator); empty: not sent.
struct IdentityHeaders {
  std::string tenant;
  std::string user;
};

// What `{tenant}` in a per-tenant stdio server's args, env values and cwd
// becomes: the tenant id with every character other than a letter, digit
// or '-' written as '_' and two hex digits (so "acme.eu" is "acme_2eeu"),
// which is safe in a file name and never ".." or a path.
std::string TenantToken(std::string_view tenant);

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
  // One session per tenant (key `per_tenant`): for servers that keep state.
  // A shared server (the default) must be stateless: every tenant's calls
  // reach the same process or MCP session.
  bool per_tenant = false;
  TenantSessionLimits tenant_sessions;  // when per_tenant
  IdentityHeaders identity_headers;     // http only
};

// The config of `tenant`'s session of a per-tenant server: `{tenant}` in
// the stdio args, env values and cwd replaced by TenantToken(tenant); an
// HTTP server's identity tenant header added to its headers (so its
// initialize, stream and close carry it too). kCatalogTenant gets
// "_catalog" and no tenant header.
McpServerConfig TenantServerConfig(const McpServerConfig& config, const std::string& tenant);

struct McpConfig {
  std::vector<McpServerConfig> servers;  // enabled ones, in file order
};

// Reads `mcp.servers.*`. Returns INVALID_ARGUMENT for a server that cannot
// work (bad name, unknown transport, no command or url, bad risk level, a
// `trust` other than none or read_hints, an identity header that is not a
// header name), for `{tenant}` in a server that is not per_tenant, and for
// an npx-launched server whose npm package has no exact version
// (`name@1.2.3`: a package that changes under us is code we never vetted);
// unknown keys and out-of-range numbers are reported by reader.Finish().
absl::StatusOr<McpConfig> ReadMcpConfig(core::ConfigReader& reader);

}  // namespace omniforge::mcp
