#include "libs/mcp/mcp_config.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace omniforge::mcp {

namespace {

// The settings of a stdio server under `prefix` (mcp.servers.NAME.).
StdioServerConfig ReadStdioServer(core::ConfigReader& reader, const std::string& name,
                                  const std::string& prefix, size_t max_message_bytes,
                                  std::vector<std::string>& errors) {
  const auto key = [&prefix](const char* leaf) { return absl::StrCat(prefix, leaf); };
  StdioServerConfig stdio;
  stdio.server_name = name;
  stdio.command = reader.String(key("command"), "");
  stdio.args = reader.StringList(key("args"), {});
  stdio.env = reader.StringMap(key("env"));
  stdio.inherit_env = reader.StringList(key("inherit_env"), stdio.inherit_env);
  stdio.cwd = reader.String(key("cwd"), "");
  stdio.shutdown_grace =
      std::chrono::milliseconds(reader.Int(key("shutdown_grace_ms"), 2'000, 0, 600'000));
  stdio.max_message_bytes = max_message_bytes;
  if (stdio.command.empty()) errors.push_back(key("command") + ": required for stdio");
  return stdio;
}

// The settings of a Streamable HTTP server under `prefix` (mcp.servers.NAME.).
HttpServerConfig ReadHttpServer(core::ConfigReader& reader, const std::string& name,
                                const std::string& prefix, size_t max_message_bytes,
                                std::vector<std::string>& errors) {
  const auto key = [&prefix](const char* leaf) { return absl::StrCat(prefix, leaf); };
  HttpServerConfig http;
  http.server_name = name;
  http.url = reader.String(key("url"), "");
  for (auto& [header, value] : reader.StringMap(key("headers"))) {
    http.headers.emplace_back(header, std::move(value));
  }
  http.connect_timeout =
      std::chrono::milliseconds(reader.Int(key("connect_timeout_ms"), 10'000, 1, 600'000));
  http.max_message_bytes = max_message_bytes;
  if (!absl::StartsWith(http.url, "http://") && !absl::StartsWith(http.url, "https://")) {
    errors.push_back(key("url") + ": required for http, an http:// or https:// URL");
  }
  for (const auto& [header, value] : http.headers) {
    if (header.find_first_of(":\r\n") != std::string::npos ||
        value.find_first_of("\r\n") != std::string::npos) {
      errors.push_back(absl::StrCat(key("headers."), header, ": no ':' in a name, no line breaks"));
    }
  }
  return http;
}

}  // namespace

absl::StatusOr<McpConfig> ReadMcpConfig(core::ConfigReader& reader) {
  McpConfig config;
  std::vector<std::string> errors;
  for (const std::string& name : reader.Keys("mcp.servers")) {
    const std::string prefix = absl::StrCat("mcp.servers.", name, ".");
    const auto key = [&prefix](const char* leaf) { return absl::StrCat(prefix, leaf); };
    McpServerConfig server;
    server.name = name;
    if (!IsValidServerName(name)) {
      errors.push_back(absl::StrCat("mcp.servers.", name,
                                    ": a server name is 1-32 characters of [A-Za-z0-9_-]"));
    }
    const bool enabled = reader.Bool(key("enabled"), true);
    const std::string transport = reader.String(key("transport"), "");

    SessionOptions& session = server.session;
    session.server_name = name;
    session.request_timeout =
        std::chrono::milliseconds(reader.Int(key("timeout_ms"), 60'000, 1, 86'400'000));
    session.initialize_timeout =
        std::chrono::milliseconds(reader.Int(key("initialize_timeout_ms"), 30'000, 1, 600'000));
    session.max_restarts = static_cast<int>(reader.Int(key("max_restarts"), 5, 0, 1000));
    session.restart_backoff =
        std::chrono::milliseconds(reader.Int(key("restart_backoff_ms"), 250, 0, 600'000));
    session.restart_backoff_max =
        std::chrono::milliseconds(reader.Int(key("restart_backoff_max_ms"), 10'000, 0, 3'600'000));
    const auto max_message_bytes =
        static_cast<size_t>(reader.Int(key("max_message_bytes"), 16 << 20, 1024, int64_t{1} << 30));

    const std::string trust = reader.String(key("trust"), "none");
    if (auto parsed = ParseServerTrust(trust)) {
      server.trust = *parsed;
    } else {
      errors.push_back(absl::StrCat(key("trust"), ": '", trust, "' is not none or read_hints"));
    }
    for (const auto& [tool, level] : reader.StringMap(key("tool_risk"))) {
      if (auto risk = ParseToolRisk(level)) {
        server.tool_risk[tool] = *risk;
      } else {
        errors.push_back(
            absl::StrCat(key("tool_risk."), tool, ": '", level, "' is not read, write or high"));
      }
    }

    if (transport == "stdio") {
      server.transport = TransportKind::kStdio;
      server.stdio = ReadStdioServer(reader, name, prefix, max_message_bytes, errors);
    } else if (transport == "http") {
      server.transport = TransportKind::kHttp;
      server.http = ReadHttpServer(reader, name, prefix, max_message_bytes, errors);
    } else {
      errors.push_back(absl::StrCat(key("transport"), ": '", transport, "' is not stdio or http"));
    }
    if (enabled) config.servers.push_back(std::move(server));
  }
  if (!errors.empty()) return absl::InvalidArgumentError(absl::StrJoin(errors, "; "));
  return config;
}

}  // namespace omniforge::mcp
