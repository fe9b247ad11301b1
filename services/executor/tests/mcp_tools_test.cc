// MCP tools through the executor's runtime, against the real
// @modelcontextprotocol/server-everything over stdio (tests/node): the
// catalog names and risks, a call, arguments checked before the server sees
// them, and the caller's deadline; and against the fake third-party service
// (fake_saas_mcp.mjs), whose read-only hints are not believed unless the
// operator says so. Skips only where node is absent.
#include "services/executor/src/mcp_tools.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "libs/core/config.h"
#include "libs/mcp/mcp_config.h"
#include "libs/mcp/registry.h"
#include "libs/mcp/testing/node_servers.h"
#include "services/executor/src/tool_runtime.h"

namespace omniforge::executor {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

class McpToolsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!mcp::testing::NodeAvailable()) GTEST_SKIP() << "node is not on PATH";
    ASSERT_TRUE(std::filesystem::exists(mcp::testing::ServerScript("server-everything")))
        << mcp::testing::MissingPackageMessage("server-everything");
    mcp::McpServerConfig server;
    server.name = "everything";
    server.transport = mcp::TransportKind::kStdio;
    server.stdio.server_name = "everything";
    server.stdio.command = "node";
    server.stdio.args = {mcp::testing::ServerScript("server-everything").string(), "stdio"};
    server.trust = mcp::ServerTrust::kReadHints;  // the project's own test peer
    registry_ = std::make_unique<mcp::McpRegistry>(mcp::McpConfig{{server}});
    mcp::CallOptions within;
    within.deadline = std::chrono::system_clock::now() + std::chrono::seconds(30);
    ASSERT_TRUE(registry_->Refresh(within).ok());
    tools_ = std::make_unique<McpTools>(*registry_);
    ASSERT_TRUE(catalog_.AddProvider(*tools_).ok());
  }

  absl::StatusOr<InvokeOutcome> Invoke(
      const std::string& tool, const std::string& args,
      std::chrono::milliseconds within = std::chrono::seconds(10)) {
    return runtime_.Invoke({"acme", "alice"}, {tool, args, ""},
                           std::chrono::system_clock::now() + within);
  }

  std::unique_ptr<mcp::McpRegistry> registry_;
  std::unique_ptr<McpTools> tools_;
  ToolCatalog catalog_;
  ToolRuntime runtime_{catalog_, nullptr};
};

TEST_F(McpToolsTest, ServerToolsAreNamespacedWithTheirRisk) {
  auto echo = catalog_.Find("everything__echo");
  ASSERT_TRUE(echo.has_value());
  EXPECT_EQ(echo->spec.source, "everything");
  EXPECT_THAT(echo->spec.description, HasSubstr("Echo"));
  EXPECT_EQ(Json::parse(echo->spec.parameters_schema)["type"], "object");
  EXPECT_EQ(echo->spec.risk, ToolRisk::kRead);  // readOnlyHint, from a trusted server
  for (const auto& registered : registry_->Tools()) {
    auto entry = catalog_.Find(registered.name);
    ASSERT_TRUE(entry.has_value()) << registered.name;
    EXPECT_EQ(static_cast<int>(entry->spec.risk), static_cast<int>(registered.risk) + 1)
        << registered.name;
  }
}

TEST_F(McpToolsTest, CallsReachTheServerAndComeBackAsJson) {
  auto out = Invoke("everything__echo", R"({"message": "hello from the executor"})");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE(out->is_error);
  EXPECT_EQ(Json::parse(out->result_json)["text"], "Echo: hello from the executor");
}

TEST_F(McpToolsTest, StructuredContentIsKeptAsJson) {
  auto out = Invoke("everything__get-structured-content", R"({"location": "New York"})");
  ASSERT_TRUE(out.ok()) << out.status();
  const Json result = Json::parse(out->result_json);
  EXPECT_TRUE(result["structured_content"].is_object()) << out->result_json;
  EXPECT_FALSE(result["text"].get<std::string>().empty());
}

TEST_F(McpToolsTest, BadArgumentsNeverReachTheServer) {
  auto out = Invoke("everything__echo", R"({"message": 5})");
  EXPECT_TRUE(absl::IsInvalidArgument(out.status()));
  EXPECT_THAT(out.status().message(), HasSubstr("$.message: expected string"));
  out = Invoke("everything__echo", "{}");
  EXPECT_THAT(out.status().message(), HasSubstr("missing required property \"message\""));
}

TEST_F(McpToolsTest, ASlowToolStopsAtTheCallersDeadline) {
  ASSERT_TRUE(catalog_.Find("everything__trigger-long-running-operation").has_value());
  const auto start = std::chrono::steady_clock::now();
  auto out = Invoke("everything__trigger-long-running-operation", R"({"duration": 10, "steps": 5})",
                    std::chrono::milliseconds(500));
  EXPECT_TRUE(absl::IsDeadlineExceeded(out.status())) << out.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

// The fake email service as an operator would configure it: once as is,
// once with one tool marked read by `tool_risk`. Its tidy_mailbox says
// readOnlyHint yet deletes the mailbox.
TEST(UntrustedMcpServerTest, AToolThatOnlyClaimsToBeReadOnlyIsNotRead) {
  if (!mcp::testing::NodeAvailable()) GTEST_SKIP() << "node is not on PATH";
  const std::string script =
      std::string(OMNIFORGE_SOURCE_DIR) + "/services/executor/tests/fake_saas_mcp.mjs";
  const std::string yaml =
      "mcp:\n  servers:\n"
      "    mail: {transport: stdio, command: node, args: ['" +
      script + "', email]}\n" + "    picked: {transport: stdio, command: node, args: ['" + script +
      "', email], tool_risk: {search_messages: read}}\n";
  auto reader =
      core::ConfigReader::FromString(yaml, [](const std::string&) { return std::nullopt; });
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto config = mcp::ReadMcpConfig(*reader);
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_TRUE(reader->Finish().ok()) << reader->Finish();
  mcp::McpRegistry registry(*std::move(config));
  mcp::CallOptions within;
  within.deadline = std::chrono::system_clock::now() + std::chrono::seconds(30);
  ASSERT_TRUE(registry.Refresh(within).ok());
  McpTools tools(registry);

  auto listed = tools.ListTools();
  ASSERT_TRUE(listed.ok()) << listed.status();
  std::map<std::string, ToolRisk> risk;
  for (const ToolSpec& spec : *listed) risk[spec.name] = spec.risk;
  EXPECT_EQ(risk.at("mail__tidy_mailbox"), ToolRisk::kWrite);
  EXPECT_EQ(risk.at("mail__search_messages"), ToolRisk::kWrite);
  EXPECT_EQ(risk.at("picked__tidy_mailbox"), ToolRisk::kWrite);
  EXPECT_EQ(risk.at("picked__search_messages"), ToolRisk::kRead);  // the operator's word

  // What the orchestrator and a step's executor agent may run at once.
  ToolCatalog catalog;
  ASSERT_TRUE(catalog.AddProvider(tools).ok());
  std::vector<std::string> reads;
  for (const ToolSpec& spec : catalog.List(ToolRisk::kRead)) reads.push_back(spec.name);
  EXPECT_THAT(reads, ::testing::ElementsAre("picked__search_messages"));

  // And the hint was a lie: the "read-only" tool emptied the mailbox.
  ToolRuntime runtime{catalog, nullptr};
  const auto deadline = std::chrono::system_clock::now() + std::chrono::seconds(10);
  auto tidied = runtime.Invoke({"acme", "alice"}, {"mail__tidy_mailbox", "{}", ""}, deadline);
  ASSERT_TRUE(tidied.ok()) << tidied.status();
  EXPECT_THAT(tidied->result_json, HasSubstr("deleted 3 messages"));
}

// The caller's tenant reaches the registry: a per_tenant server-memory
// keeps what one tenant stored from another, through the runtime as the
// executor's RPCs call it.
TEST(PerTenantMcpToolsTest, EachTenantsCallsReachItsOwnServerProcess) {
  if (!mcp::testing::NodeAvailable()) GTEST_SKIP() << "node is not on PATH";
  ASSERT_TRUE(std::filesystem::exists(mcp::testing::ServerScript("server-memory")))
      << mcp::testing::MissingPackageMessage("server-memory");
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("omniforge-executor-memory-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  mcp::McpServerConfig server;
  server.name = "memory";
  server.session.server_name = "memory";
  server.transport = mcp::TransportKind::kStdio;
  server.stdio.server_name = "memory";
  server.stdio.command = "node";
  server.stdio.args = {mcp::testing::ServerScript("server-memory").string()};
  // Each tenant's process may write only its own directory (its sandbox).
  server.stdio.env = {{"MEMORY_FILE_PATH", (dir / "{tenant}" / "memory.jsonl").string()}};
  server.stdio.write_paths = {(dir / "{tenant}").string()};
  server.per_tenant = true;
  mcp::McpRegistry registry(mcp::McpConfig{{server}});
  mcp::CallOptions within;
  within.deadline = std::chrono::system_clock::now() + std::chrono::seconds(30);
  ASSERT_TRUE(registry.Refresh(within).ok());
  McpTools tools(registry);
  ToolCatalog catalog;
  ASSERT_TRUE(catalog.AddProvider(tools).ok());
  ToolRuntime runtime{catalog, nullptr};
  const auto deadline = std::chrono::system_clock::now() + std::chrono::seconds(10);

  auto stored = runtime.Invoke(
      {"acme", "alice"},
      {"memory__create_entities",
       R"({"entities":[{"name":"Acme roadmap","entityType":"plan","observations":["Q3"]}]})", ""},
      deadline);
  ASSERT_TRUE(stored.ok()) << stored.status();
  auto acme = runtime.Invoke({"acme", "arthur"}, {"memory__read_graph", "{}", ""}, deadline);
  auto globex = runtime.Invoke({"globex", "bob"}, {"memory__read_graph", "{}", ""}, deadline);
  ASSERT_TRUE(acme.ok()) << acme.status();
  ASSERT_TRUE(globex.ok()) << globex.status();
  EXPECT_THAT(acme->result_json, HasSubstr("Acme roadmap"));
  EXPECT_THAT(globex->result_json, ::testing::Not(HasSubstr("Acme")));
  registry.Shutdown();
  EXPECT_TRUE(std::filesystem::exists(dir / "acme" / "memory.jsonl"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace omniforge::executor
