// The client under test for the official MCP conformance suite
// (@modelcontextprotocol/conformance): the harness runs this binary with the
// scenario's server URL as the last argument and the scenario's name in
// MCP_CONFORMANCE_SCENARIO. It initializes, lists the tools and calls each
// (add_numbers with two numbers, others without arguments), printing what
// happened; the harness judges the exchange. Exits 1 when a step failed.
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "libs/mcp/client.h"
#include "libs/mcp/http_transport.h"
#include "libs/mcp/session.h"

namespace {

omniforge::mcp::CallOptions Within(std::chrono::seconds timeout) {
  omniforge::mcp::CallOptions options;
  options.deadline = std::chrono::system_clock::now() + timeout;
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace omniforge::mcp;
  if (argc < 2) {
    std::cerr << "usage: mcp-conformance-client <server-url>\n";
    return 2;
  }
  const char* scenario_env = std::getenv("MCP_CONFORMANCE_SCENARIO");
  const std::string scenario = scenario_env != nullptr ? scenario_env : "";
  HttpServerConfig config;
  config.server_name = "conformance";
  config.url = argv[argc - 1];
  SessionOptions options;
  options.server_name = "conformance";
  options.client_name = "omniforge-mcp-conformance-client";
  options.max_restarts = 0;
  McpClient client(std::make_unique<HttpTransport>(config), options);

  int failures = 0;
  if (absl::Status connected = client.Connect(Within(std::chrono::seconds(10))); !connected.ok()) {
    std::cout << "initialize: " << connected << "\n";
    return 1;
  }
  std::cout << "initialize: protocol " << client.server_info()->protocol_version << "\n";
  absl::StatusOr<std::vector<Tool>> tools = client.ListTools(Within(std::chrono::seconds(10)));
  if (!tools.ok()) {
    std::cout << "tools/list: " << tools.status() << "\n";
    return 1;
  }
  std::cout << "tools/list: " << tools->size() << " tools\n";
  for (const Tool& tool : *tools) {
    const std::string arguments = tool.name == "add_numbers" ? R"({"a":5,"b":3})" : "{}";
    CallOptions call = Within(std::chrono::seconds(10));
    call.on_progress = [&tool](const Progress& progress) {
      std::cout << "progress " << tool.name << ": " << progress.progress << "\n";
    };
    absl::StatusOr<CallToolResult> result = client.CallTool(tool.name, arguments, call);
    if (!result.ok()) {
      ++failures;
      std::cout << "tools/call " << tool.name << ": " << result.status() << "\n";
      continue;
    }
    std::cout << "tools/call " << tool.name << (result->is_error ? " (isError)" : "") << ": "
              << RenderForModel(*result) << "\n";
  }
  client.Shutdown();
  std::cout << "scenario " << scenario << ": " << (failures == 0 ? "done" : "failed") << "\n";
  return failures == 0 ? 0 : 1;
}
