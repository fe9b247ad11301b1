#include "libs/mcp/mcp_config.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "libs/mcp/npm_pinning.h"

namespace omniforge::mcp {

namespace {

constexpr char kTenantPlaceholder[] = "{tenant}";

// Keys `sandbox`, `read_paths` and `write_paths` of a stdio server (absolute
// paths only: the sandbox is built before the server's cwd applies).
void ReadSandbox(core::ConfigReader& reader, const std::string& prefix, SandboxMode default_mode,
                 StdioServerConfig& stdio, std::vector<std::string>& errors) {
  const auto key = [&prefix](const char* leaf) { return absl::StrCat(prefix, leaf); };
  stdio.sandbox = default_mode;
  if (const std::string mode = reader.String(key("sandbox"), ""); !mode.empty()) {
    absl::StatusOr<SandboxMode> parsed = ParseSandboxMode(mode);
    if (parsed.ok()) {
      stdio.sandbox = *parsed;
    } else {
      errors.push_back(absl::StrCat(key("sandbox"), ": ", parsed.status().message()));
    }
  }
  stdio.read_paths = reader.StringList(key("read_paths"), {});
  stdio.write_paths = reader.StringList(key("write_paths"), {});
  for (const auto* list : {&stdio.read_paths, &stdio.write_paths}) {
    for (const std::string& path : *list) {
      if (path.empty() || path.front() != '/') {
        errors.push_back(absl::StrCat(key(list == &stdio.read_paths ? "read_paths" : "write_paths"),
                                      ": '", path, "' is not an absolute path"));
      }
    }
  }
}

// The settings of a stdio server under `prefix` (mcp.servers.NAME.).
StdioServerConfig ReadStdioServer(core::ConfigReader& reader, const std::string& name,
                                  const std::string& prefix, size_t max_message_bytes,
                                  SandboxMode default_sandbox, std::vector<std::string>& errors) {
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
  const int64_t uid = reader.Int(key("run_as.uid"), -1, 0, 0xFFFFFFFE);
  const int64_t gid = reader.Int(key("run_as.gid"), -1, 0, 0xFFFFFFFE);
  if (uid >= 0 && gid >= 0) {
    stdio.run_as = RunAs{static_cast<uid_t>(uid), static_cast<gid_t>(gid)};
  } else if (uid >= 0 || gid >= 0) {
    errors.push_back(key("run_as") + ": both uid and gid");
  }
  ReadSandbox(reader, prefix, default_sandbox, stdio, errors);
  if (stdio.command.empty()) errors.push_back(key("command") + ": required for stdio");
  if (absl::Status pinned = CheckNpmPackagesPinned(stdio.command, stdio.args); !pinned.ok()) {
    errors.push_back(absl::StrCat(key("args"), ": ", pinned.message()));
  }
  return stdio;
}

bool IsHeaderName(const std::string& name) {
  if (name.empty()) return false;
  for (const char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
  }
  return true;
}

// Key `identity_headers` of an HTTP server: {tenant: NAME, user: NAME}.
IdentityHeaders ReadIdentityHeaders(core::ConfigReader& reader, const std::string& prefix,
                                    std::vector<std::string>& errors) {
  IdentityHeaders identity;
  const auto key = [&prefix](const char* leaf) { return absl::StrCat(prefix, leaf); };
  for (const auto& [part, header] : reader.StringMap(key("identity_headers"))) {
    if (part != "tenant" && part != "user") {
      errors.push_back(absl::StrCat(key("identity_headers."), part, ": only tenant and user"));
    } else if (!IsHeaderName(header)) {
      errors.push_back(absl::StrCat(key("identity_headers."), part, ": '", header,
                                    "' is not a header name (letters, digits, '-', '_')"));
    } else {
      (part == "tenant" ? identity.tenant : identity.user) = header;
    }
  }
  return identity;
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

// The keys every transport shares: timeouts and restarts.
SessionOptions ReadSessionOptions(core::ConfigReader& reader, const std::string& name,
                                  const std::string& prefix) {
  const auto key = [&prefix](const char* leaf) { return absl::StrCat(prefix, leaf); };
  SessionOptions session;
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
  return session;
}

// Keys `trust` and `tool_risk`.
void ReadRisk(core::ConfigReader& reader, const std::string& prefix, McpServerConfig& server,
              std::vector<std::string>& errors) {
  const auto key = [&prefix](const char* leaf) { return absl::StrCat(prefix, leaf); };
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
}

bool MentionsTenant(const StdioServerConfig& stdio) {
  const auto has = [](const std::string& text) {
    return absl::StrContains(text, kTenantPlaceholder);
  };
  if (has(stdio.cwd)) return true;
  for (const std::string& arg : stdio.args) {
    if (has(arg)) return true;
  }
  for (const auto& [name, value] : stdio.env) {
    if (has(value)) return true;
  }
  for (const auto* list : {&stdio.read_paths, &stdio.write_paths}) {
    for (const std::string& path : *list) {
      if (has(path)) return true;
    }
  }
  return false;
}

// Keys `per_tenant`, `tenant_idle_timeout_s` and `max_tenant_sessions`.
void ReadTenancy(core::ConfigReader& reader, const std::string& prefix, McpServerConfig& server,
                 std::vector<std::string>& errors) {
  const auto key = [&prefix](const char* leaf) { return absl::StrCat(prefix, leaf); };
  server.per_tenant = reader.Bool(key("per_tenant"), false);
  if (server.per_tenant) {
    server.tenant_sessions.idle_timeout =
        std::chrono::seconds(reader.Int(key("tenant_idle_timeout_s"), 300, 1, int64_t{7} * 86'400));
    server.tenant_sessions.max_sessions =
        static_cast<size_t>(reader.Int(key("max_tenant_sessions"), 32, 1, 100'000));
  } else if (server.transport == TransportKind::kStdio && MentionsTenant(server.stdio)) {
    errors.push_back(absl::StrCat(prefix, "per_tenant: {tenant} is used, so set per_tenant: true"));
  }
}

}  // namespace

std::string TenantToken(std::string_view tenant) {
  std::string token;
  for (const char c : tenant) {
    if (absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-') {
      token.push_back(c);
    } else {
      absl::StrAppend(&token, absl::StrFormat("_%02x", static_cast<unsigned char>(c)));
    }
  }
  return token;
}

McpServerConfig TenantServerConfig(const McpServerConfig& config, const std::string& tenant) {
  McpServerConfig own = config;
  const bool catalog = tenant == kCatalogTenant;
  const std::string token = catalog ? std::string(kCatalogTenant) : TenantToken(tenant);
  const auto fill = [&token](std::string& text) {
    absl::StrReplaceAll({{kTenantPlaceholder, token}}, &text);
  };
  for (std::string& arg : own.stdio.args) fill(arg);
  for (auto& [name, value] : own.stdio.env) fill(value);
  fill(own.stdio.cwd);
  for (std::string& path : own.stdio.read_paths) fill(path);
  for (std::string& path : own.stdio.write_paths) fill(path);
  if (!catalog && !own.identity_headers.tenant.empty()) {
    own.http.headers.emplace_back(own.identity_headers.tenant, tenant);
  }
  return own;
}

absl::StatusOr<McpConfig> ReadMcpConfig(core::ConfigReader& reader) {
  McpConfig config;
  std::vector<std::string> errors;
  // Every stdio server's sandbox unless it says otherwise.
  SandboxMode default_sandbox = SandboxMode::kBestEffort;
  if (absl::StatusOr<SandboxMode> mode =
          ParseSandboxMode(reader.String("mcp.sandbox", "best_effort"));
      mode.ok()) {
    default_sandbox = *mode;
  } else {
    errors.push_back(absl::StrCat("mcp.sandbox: ", mode.status().message()));
  }
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
    server.session = ReadSessionOptions(reader, name, prefix);
    const auto max_message_bytes =
        static_cast<size_t>(reader.Int(key("max_message_bytes"), 16 << 20, 1024, int64_t{1} << 30));
    ReadRisk(reader, prefix, server, errors);
    if (transport == "stdio") {
      server.transport = TransportKind::kStdio;
      server.stdio =
          ReadStdioServer(reader, name, prefix, max_message_bytes, default_sandbox, errors);
    } else if (transport == "http") {
      server.transport = TransportKind::kHttp;
      server.http = ReadHttpServer(reader, name, prefix, max_message_bytes, errors);
      server.identity_headers = ReadIdentityHeaders(reader, prefix, errors);
    } else {
      errors.push_back(absl::StrCat(key("transport"), ": '", transport, "' is not stdio or http"));
    }
    ReadTenancy(reader, prefix, server, errors);
    if (enabled) config.servers.push_back(std::move(server));
  }
  if (!errors.empty()) return absl::InvalidArgumentError(absl::StrJoin(errors, "; "));
  return config;
}

}  // namespace omniforge::mcp
