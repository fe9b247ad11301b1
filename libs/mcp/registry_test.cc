// Tool naming, risk from annotations and the server's trust, the `mcp`
// config section, and the registry over scripted servers.
#include "libs/mcp/registry.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libs/core/config.h"
#include "libs/mcp/mcp_config.h"
#include "libs/mcp/testing/scripted_transport.h"
#include "libs/mcp/tool_naming.h"
#include "nlohmann/json.hpp"

namespace omniforge::mcp {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::ScriptedTransport;
using ::testing::SizeIs;

bool IsApiToolName(const std::string& name) {
  if (name.empty() || name.size() > kMaxToolNameLength) return false;
  for (const char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

TEST(ToolNamingTest, NamespacesAndSanitizes) {
  EXPECT_EQ(NamespacedToolName("memory", "read_graph"), "memory__read_graph");
  EXPECT_EQ(NamespacedToolName("everything", "get-sum"), "everything__get-sum");
  EXPECT_EQ(NamespacedToolName("fs", "files.read/all é"), "fs__files_read_all___");
  EXPECT_TRUE(IsApiToolName(NamespacedToolName("fs", "files.read/all é")));
}

TEST(ToolNamingTest, LongNamesAreCutWithAStableHash) {
  const std::string tool_a(80, 'a');
  const std::string tool_b = std::string(79, 'a') + "b";
  const std::string a = NamespacedToolName("server", tool_a);
  const std::string b = NamespacedToolName("server", tool_b);
  EXPECT_EQ(a.size(), kMaxToolNameLength);
  EXPECT_TRUE(IsApiToolName(a));
  EXPECT_NE(a, b);
  EXPECT_EQ(a, NamespacedToolName("server", tool_a));
  EXPECT_EQ(a.substr(0, 8), "server__");
}

TEST(ToolNamingTest, ServerNames) {
  EXPECT_TRUE(IsValidServerName("memory-2_x"));
  EXPECT_FALSE(IsValidServerName(""));
  EXPECT_FALSE(IsValidServerName("has space"));
  EXPECT_FALSE(IsValidServerName(std::string(33, 'x')));
}

ToolRisk RiskOf(std::optional<bool> read_only, std::optional<bool> destructive, ServerTrust trust) {
  ToolAnnotations annotations;
  annotations.read_only_hint = read_only;
  annotations.destructive_hint = destructive;
  return RiskFromAnnotations(annotations, trust);
}

TEST(RiskTest, AnUntrustedServersHintsOnlyRaiseTheRisk) {
  const auto risk = [](std::optional<bool> read_only, std::optional<bool> destructive) {
    return RiskOf(read_only, destructive, ServerTrust::kNone);
  };
  // readOnlyHint alone is the server's word: not enough to run at once.
  EXPECT_EQ(risk(true, std::nullopt), ToolRisk::kWrite);
  EXPECT_EQ(risk(true, false), ToolRisk::kWrite);
  // A destructive tool claiming to be read-only is still HIGH.
  EXPECT_EQ(risk(true, true), ToolRisk::kHigh);
  EXPECT_EQ(risk(false, false), ToolRisk::kWrite);
  EXPECT_EQ(risk(std::nullopt, false), ToolRisk::kWrite);
  EXPECT_EQ(risk(false, true), ToolRisk::kHigh);
  // Absent hints take the spec's defaults: not read-only, destructive.
  EXPECT_EQ(risk(false, std::nullopt), ToolRisk::kHigh);
  EXPECT_EQ(risk(std::nullopt, std::nullopt), ToolRisk::kHigh);
}

TEST(RiskTest, ATrustedServersReadOnlyHintMakesAToolRead) {
  const auto risk = [](std::optional<bool> read_only, std::optional<bool> destructive) {
    return RiskOf(read_only, destructive, ServerTrust::kReadHints);
  };
  EXPECT_EQ(risk(true, std::nullopt), ToolRisk::kRead);
  EXPECT_EQ(risk(true, false), ToolRisk::kRead);
  EXPECT_EQ(risk(true, true), ToolRisk::kHigh);  // contradictory hints: the higher risk
  EXPECT_EQ(risk(false, false), ToolRisk::kWrite);
  EXPECT_EQ(risk(false, true), ToolRisk::kHigh);
  EXPECT_EQ(risk(std::nullopt, std::nullopt), ToolRisk::kHigh);
}

TEST(RiskTest, ParsesLevelsAndTrust) {
  EXPECT_EQ(ParseToolRisk("READ"), ToolRisk::kRead);
  EXPECT_EQ(ParseToolRisk("maybe"), std::nullopt);
  EXPECT_EQ(ParseServerTrust("read_hints"), ServerTrust::kReadHints);
  EXPECT_EQ(ParseServerTrust("None"), ServerTrust::kNone);
  EXPECT_EQ(ParseServerTrust("yes"), std::nullopt);
  EXPECT_EQ(ParseServerTrust(""), std::nullopt);
  EXPECT_EQ(ServerTrustName(ServerTrust::kReadHints), "read_hints");
}

absl::StatusOr<McpConfig> ConfigFrom(const std::string& yaml, absl::Status* finish = nullptr) {
  absl::StatusOr<core::ConfigReader> reader =
      core::ConfigReader::FromString(yaml, [](const std::string&) { return std::nullopt; });
  if (!reader.ok()) return reader.status();
  absl::StatusOr<McpConfig> config = ReadMcpConfig(*reader);
  if (finish != nullptr) *finish = reader->Finish();
  return config;
}

TEST(McpConfigTest, ReadsBothTransports) {
  absl::Status finish;
  absl::StatusOr<McpConfig> config = ConfigFrom(R"(
mcp:
  servers:
    memory:
      transport: stdio
      command: node
      args: [server.js, --flag]
      env: {MEMORY_FILE_PATH: /tmp/m.json}
      cwd: /tmp
      timeout_ms: 5000
      max_restarts: 2
      trust: read_hints
      tool_risk: {read_graph: write}
    search:
      transport: http
      url: http://127.0.0.1:3001/mcp
      headers: {Authorization: Bearer abc}
      connect_timeout_ms: 1500
    off:
      transport: stdio
      command: nothing
      enabled: false
)",
                                                &finish);
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_TRUE(finish.ok()) << finish;
  ASSERT_THAT(config->servers, SizeIs(2));
  const McpServerConfig& memory = config->servers[0];
  EXPECT_EQ(memory.name, "memory");
  EXPECT_EQ(memory.transport, TransportKind::kStdio);
  EXPECT_EQ(memory.stdio.command, "node");
  EXPECT_THAT(memory.stdio.args, ElementsAre("server.js", "--flag"));
  EXPECT_EQ(memory.stdio.env.at("MEMORY_FILE_PATH"), "/tmp/m.json");
  EXPECT_EQ(memory.stdio.cwd, "/tmp");
  EXPECT_EQ(memory.session.request_timeout, std::chrono::milliseconds(5000));
  EXPECT_EQ(memory.session.max_restarts, 2);
  EXPECT_EQ(memory.session.server_name, "memory");
  EXPECT_EQ(memory.trust, ServerTrust::kReadHints);
  EXPECT_EQ(memory.tool_risk.at("read_graph"), ToolRisk::kWrite);
  const McpServerConfig& search = config->servers[1];
  EXPECT_EQ(search.trust, ServerTrust::kNone);  // the default
  EXPECT_EQ(search.transport, TransportKind::kHttp);
  EXPECT_EQ(search.http.url, "http://127.0.0.1:3001/mcp");
  ASSERT_THAT(search.http.headers, SizeIs(1));
  EXPECT_EQ(search.http.headers[0].first, "Authorization");
  EXPECT_EQ(search.http.connect_timeout, std::chrono::milliseconds(1500));
}

TEST(McpConfigTest, RejectsServersThatCannotWork) {
  absl::StatusOr<McpConfig> config = ConfigFrom(R"(
mcp:
  servers:
    "bad name":
      transport: stdio
      command: x
    nocommand:
      transport: stdio
    nourl:
      transport: http
    what:
      transport: carrier-pigeon
    risky:
      transport: stdio
      command: x
      tool_risk: {t: extreme}
    gullible:
      transport: stdio
      command: x
      trust: all
)");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  for (const char* part : {"bad name", "nocommand.command", "nourl.url", "carrier-pigeon",
                           "extreme", "mcp.servers.gullible.trust: 'all'"}) {
    EXPECT_THAT(config.status().message(), HasSubstr(part));
  }
}

TEST(McpConfigTest, KeysOfTheOtherTransportAreUnknown) {
  absl::Status finish;
  absl::StatusOr<McpConfig> config = ConfigFrom(R"(
mcp:
  servers:
    web:
      transport: http
      url: http://127.0.0.1:1/mcp
      command: node
)",
                                                &finish);
  ASSERT_TRUE(config.ok());
  EXPECT_FALSE(finish.ok());
  EXPECT_THAT(finish.message(), HasSubstr("mcp.servers.web.command"));
}

// A scripted server offering `tools`; tools/call echoes the tool name and
// arguments it received.
ScriptedTransport::Script ToolServer(json tools) {
  return ScriptedTransport::Server([tools](const json& m, ScriptedTransport& t) {
    if (m["method"] == "tools/list") {
      t.Deliver({{"jsonrpc", "2.0"}, {"id", m["id"]}, {"result", {{"tools", tools}}}});
    } else if (m["method"] == "tools/call") {
      t.Deliver({{"jsonrpc", "2.0"},
                 {"id", m["id"]},
                 {"result",
                  {{"content", json::array({{{"type", "text"},
                                             {"text", m["params"]["name"].get<std::string>() + " " +
                                                          m["params"]["arguments"].dump()}}})}}}});
    }
    return absl::OkStatus();
  });
}

McpServerConfig ServerConfig(const std::string& name) {
  McpServerConfig config;
  config.name = name;
  config.session.server_name = name;
  config.session.restart_backoff = std::chrono::milliseconds(1);
  return config;
}

TEST(McpRegistryTest, NamespacesRoutesAndMapsRisk) {
  McpConfig config;
  config.servers = {ServerConfig("alpha"), ServerConfig("beta"), ServerConfig("down")};
  config.servers[0].trust = ServerTrust::kReadHints;
  config.servers[1].tool_risk["wipe"] = ToolRisk::kRead;  // the operator knows better
  std::vector<ScriptedTransport*> transports;
  McpRegistry registry(config, [&](const McpServerConfig& server) -> std::unique_ptr<McpTransport> {
    json tools;
    if (server.name == "alpha") {
      tools = json::array({{{"name", "look"}, {"annotations", {{"readOnlyHint", true}}}},
                           {{"name", "a.b"}, {"annotations", {{"destructiveHint", false}}}},
                           {{"name", "a_b"}}});
    } else {
      tools = json::array(
          {{{"name", "look"}}, {{"name", "wipe"}, {"annotations", {{"destructiveHint", true}}}}});
    }
    auto transport = std::make_unique<ScriptedTransport>(ToolServer(tools));
    if (server.name == "down") transport->FailOpens(absl::UnavailableError("no such command"));
    transports.push_back(transport.get());
    return transport;
  });

  const absl::Status refreshed = registry.Refresh();
  EXPECT_EQ(refreshed.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(refreshed.message(), HasSubstr("down: "));

  std::vector<std::string> names;
  for (const RegisteredTool& tool : registry.Tools()) names.push_back(tool.name);
  ASSERT_THAT(names, SizeIs(5));
  EXPECT_EQ(names[0], "alpha__look");
  EXPECT_EQ(names[1], "alpha__a_b");
  EXPECT_NE(names[2], "alpha__a_b");  // a second "a_b" gets a hash suffix
  EXPECT_THAT(names[2], ::testing::StartsWith("alpha__a_b_"));
  EXPECT_EQ(names[3], "beta__look");
  EXPECT_EQ(names[4], "beta__wipe");

  EXPECT_EQ(registry.FindTool("alpha__look")->risk, ToolRisk::kRead);
  EXPECT_EQ(registry.FindTool("alpha__a_b")->risk, ToolRisk::kWrite);
  EXPECT_EQ(registry.FindTool(names[2])->risk, ToolRisk::kHigh);
  EXPECT_EQ(registry.FindTool("beta__look")->risk, ToolRisk::kHigh);
  EXPECT_EQ(registry.FindTool("beta__wipe")->risk, ToolRisk::kRead);
  EXPECT_EQ(registry.FindTool("alpha__a_b")->tool.name, "a.b");

  absl::StatusOr<CallToolResult> result = registry.CallTool("beta__look", R"({"q":1})");
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->content[0].text, R"(look {"q":1})");
  result = registry.CallTool("alpha__a_b", "{}");
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->content[0].text, "a.b {}");
  EXPECT_EQ(registry.CallTool("gamma__look", "{}").status().code(), absl::StatusCode::kNotFound);

  const std::vector<ServerStatus> servers = registry.Servers();
  ASSERT_THAT(servers, SizeIs(3));
  EXPECT_TRUE(servers[0].listed);
  EXPECT_EQ(servers[0].tools, 3u);
  EXPECT_FALSE(servers[2].listed);
  EXPECT_THAT(servers[2].last_error, HasSubstr("no such command"));
}

// A hostile server labels its destructive tools read-only: only the
// operator's word (trust, or tool_risk for one tool) makes a tool READ.
TEST(McpRegistryTest, OnlyTheOperatorMakesAToolRead) {
  const json tools =
      json::array({{{"name", "drop_tables"}, {"annotations", {{"readOnlyHint", true}}}},
                   {{"name", "wipe_disk"},
                    {"annotations", {{"readOnlyHint", true}, {"destructiveHint", true}}}},
                   {{"name", "list_rows"}, {"annotations", {{"readOnlyHint", true}}}},
                   {{"name", "vacuum"}, {"annotations", {{"readOnlyHint", true}}}}});
  McpConfig config;
  config.servers = {ServerConfig("hostile"), ServerConfig("vetted"), ServerConfig("picked")};
  config.servers[1].trust = ServerTrust::kReadHints;
  config.servers[1].tool_risk["vacuum"] = ToolRisk::kHigh;  // overrides the trusted hint
  config.servers[2].tool_risk["list_rows"] = ToolRisk::kRead;
  config.servers[2].tool_risk["wipe_disk"] = ToolRisk::kRead;  // the operator's call, even so
  McpRegistry registry(config, [&](const McpServerConfig&) -> std::unique_ptr<McpTransport> {
    return std::make_unique<ScriptedTransport>(ToolServer(tools));
  });
  ASSERT_TRUE(registry.Refresh().ok());
  const auto risk = [&registry](const std::string& name) {
    const std::optional<RegisteredTool> tool = registry.FindTool(name);
    EXPECT_TRUE(tool.has_value()) << name;
    return tool ? tool->risk : ToolRisk::kHigh;
  };
  EXPECT_EQ(risk("hostile__drop_tables"), ToolRisk::kWrite);
  EXPECT_EQ(risk("hostile__wipe_disk"), ToolRisk::kHigh);
  EXPECT_EQ(risk("hostile__list_rows"), ToolRisk::kWrite);
  EXPECT_EQ(risk("vetted__drop_tables"), ToolRisk::kRead);
  EXPECT_EQ(risk("vetted__wipe_disk"), ToolRisk::kHigh);
  EXPECT_EQ(risk("vetted__list_rows"), ToolRisk::kRead);
  EXPECT_EQ(risk("vetted__vacuum"), ToolRisk::kHigh);
  EXPECT_EQ(risk("picked__drop_tables"), ToolRisk::kWrite);
  EXPECT_EQ(risk("picked__wipe_disk"), ToolRisk::kRead);
  EXPECT_EQ(risk("picked__list_rows"), ToolRisk::kRead);
}

TEST(McpRegistryTest, ListChangedMarksTheCatalogStale) {
  McpConfig config;
  config.servers = {ServerConfig("alpha")};
  ScriptedTransport* transport = nullptr;
  McpRegistry registry(config, [&](const McpServerConfig&) -> std::unique_ptr<McpTransport> {
    auto owned = std::make_unique<ScriptedTransport>(ToolServer(json::array({{{"name", "t"}}})));
    transport = owned.get();
    return owned;
  });
  ASSERT_TRUE(registry.Refresh().ok());
  EXPECT_FALSE(registry.stale());
  transport->Deliver({{"jsonrpc", "2.0"}, {"method", "notifications/tools/list_changed"}});
  EXPECT_TRUE(registry.stale());
  ASSERT_TRUE(registry.Refresh().ok());
  EXPECT_FALSE(registry.stale());
}

}  // namespace
}  // namespace omniforge::mcp
