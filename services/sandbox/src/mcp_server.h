// The sandbox tools as an MCP server over stdio: newline-delimited JSON-RPC
// 2.0 (libs/mcp/json_rpc.h), answering initialize (with protocol version
// negotiation), ping, tools/list and tools/call; notifications are taken
// and ignored. Bad input gets a JSON-RPC error, never a crash.
#pragma once

#include <istream>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "nlohmann/json.hpp"
#include "services/sandbox/src/sandbox_tools.h"

namespace omniforge::sandbox {

// A longer line is answered with an error and not parsed.
inline constexpr size_t kMaxLineBytes = 1u << 20;

class McpLineServer final {
 public:
  // `tools` must outlive the server. `name` is the serverInfo name.
  McpLineServer(SandboxTools& tools, std::string name, std::string version,
                std::string instructions);

  // The answers to one received line (a message or a batch), one line each
  // without the newline; none for notifications and responses.
  std::vector<std::string> HandleLine(std::string_view line);

  // Answers every line of `in` on `out`, flushing each, until `in` ends.
  void Serve(std::istream& in, std::ostream& out);

 private:
  nlohmann::json Initialize(const nlohmann::json& params) const;
  // The answer to one request.
  std::string Answer(const nlohmann::json& id, const std::string& method,
                     const nlohmann::json& params);
  std::string CallTool(const nlohmann::json& id, const nlohmann::json& params);

  SandboxTools& tools_;
  std::string name_;
  std::string version_;
  std::string instructions_;
};

}  // namespace omniforge::sandbox
