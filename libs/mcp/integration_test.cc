// The MCP client against real servers from npm: server-everything over stdio
// and Streamable HTTP, server-memory over stdio through the registry built
// from YAML, shared and per tenant. Skips only where node is absent.
#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX kill, not <csignal>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libs/core/config.h"
#include "libs/mcp/client.h"
#include "libs/mcp/http_transport.h"
#include "libs/mcp/mcp_config.h"
#include "libs/mcp/registry.h"
#include "libs/mcp/session.h"
#include "libs/mcp/stdio_transport.h"
#include "libs/mcp/testing/node_servers.h"
#include "libs/mcp/tool_naming.h"
#include "nlohmann/json.hpp"

namespace omniforge::mcp {
namespace {

using nlohmann::json;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::SizeIs;

CallOptions Within(std::chrono::milliseconds timeout) {
  CallOptions options;
  options.deadline = std::chrono::system_clock::now() + timeout;
  return options;
}

std::string AllText(const CallToolResult& result) { return RenderForModel(result); }

enum class Kind { kStdio, kHttp };

class EverythingTest : public ::testing::TestWithParam<Kind> {
 protected:
  void SetUp() override {
    if (!testing::NodeAvailable())
      GTEST_SKIP() << "node is not on PATH: MCP integration tests need Node.js";
    ASSERT_TRUE(std::filesystem::exists(testing::ServerScript("server-everything")))
        << testing::MissingPackageMessage("server-everything");
    SessionOptions options;
    options.server_name = "everything";
    options.max_restarts = 3;
    if (GetParam() == Kind::kStdio) {
      StdioServerConfig config;
      config.server_name = "everything";
      config.command = "node";
      config.args = {testing::ServerScript("server-everything").string(), "stdio"};
      config.env = {{"OMNIFORGE_MCP_TEST_GIVEN", "given-value"}};
      auto transport = std::make_unique<StdioTransport>(config);
      stdio_ = transport.get();
      client_ = std::make_unique<McpClient>(std::move(transport), options);
    } else {
      http_server_ = std::make_unique<testing::EverythingHttpServer>();
      ASSERT_GT(http_server_->port(), 0) << "server-everything did not start over HTTP";
      HttpServerConfig config;
      config.server_name = "everything";
      config.url = http_server_->url();
      config.headers = {{"Authorization", "Bearer test-token"}};
      auto transport = std::make_unique<HttpTransport>(config);
      http_ = transport.get();
      client_ = std::make_unique<McpClient>(std::move(transport), options);
    }
    ASSERT_TRUE(client_->Connect(Within(std::chrono::seconds(30))).ok());
  }
  void TearDown() override {
    if (client_) client_->Shutdown();
  }

  std::unique_ptr<testing::EverythingHttpServer> http_server_;
  StdioTransport* stdio_ = nullptr;
  HttpTransport* http_ = nullptr;
  std::unique_ptr<McpClient> client_;
};

TEST_P(EverythingTest, InitializesAndListsTools) {
  const std::optional<ServerInfo> info = client_->server_info();
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->protocol_version, "2025-06-18");
  EXPECT_TRUE(info->has_tools);
  if (GetParam() == Kind::kHttp) {
    EXPECT_FALSE(http_->session_id().empty());
  }

  absl::StatusOr<std::vector<Tool>> tools = client_->ListTools(Within(std::chrono::seconds(10)));
  ASSERT_TRUE(tools.ok()) << tools.status();
  std::vector<std::string> names;
  for (const Tool& tool : *tools) names.push_back(tool.name);
  EXPECT_THAT(names, Contains("echo"));
  EXPECT_THAT(names, Contains("trigger-long-running-operation"));
  for (const Tool& tool : *tools) {
    EXPECT_EQ(json::parse(tool.input_schema_json).value("type", ""), "object") << tool.name;
    if (tool.name == "echo") {
      EXPECT_EQ(tool.title, "Echo Tool");
      EXPECT_EQ(tool.annotations.read_only_hint, true);
      EXPECT_EQ(RiskFromAnnotations(tool.annotations, ServerTrust::kReadHints), ToolRisk::kRead);
      EXPECT_EQ(RiskFromAnnotations(tool.annotations, ServerTrust::kNone), ToolRisk::kWrite);
    }
    if (tool.name == "get-structured-content") {
      EXPECT_EQ(json::parse(tool.output_schema_json)["properties"].count("temperature"), 1u);
    }
  }
}

TEST_P(EverythingTest, Echo) {
  absl::StatusOr<CallToolResult> result = client_->CallTool(
      "echo", R"({"message":"hello from omniforge"})", Within(std::chrono::seconds(10)));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->is_error);
  ASSERT_THAT(result->content, SizeIs(1));
  EXPECT_EQ(result->content[0].type, ContentBlock::Type::kText);
  EXPECT_EQ(result->content[0].text, "Echo: hello from omniforge");
}

TEST_P(EverythingTest, ProgressReachesTheCallback) {
  std::vector<Progress> reports;
  CallOptions options = Within(std::chrono::seconds(20));
  options.on_progress = [&reports](const Progress& progress) { reports.push_back(progress); };
  absl::StatusOr<CallToolResult> result =
      client_->CallTool("trigger-long-running-operation", R"({"duration":0.5,"steps":5})", options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(AllText(*result), HasSubstr("Long running operation completed"));
  ASSERT_THAT(reports, SizeIs(5));
  for (size_t i = 0; i < reports.size(); ++i) {
    EXPECT_EQ(reports[i].progress, static_cast<double>(i + 1));
    EXPECT_EQ(reports[i].total, 5.0);
  }
}

TEST_P(EverythingTest, SlowToolPastItsDeadline) {
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<CallToolResult> result =
      client_->CallTool("trigger-long-running-operation", R"({"duration":10,"steps":2})",
                        Within(std::chrono::milliseconds(400)));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded) << result.status();
  EXPECT_LT(elapsed, std::chrono::seconds(3));
  // The connection stays usable.
  absl::StatusOr<CallToolResult> echo =
      client_->CallTool("echo", R"({"message":"still here"})", Within(std::chrono::seconds(10)));
  ASSERT_TRUE(echo.ok()) << echo.status();
  EXPECT_EQ(echo->content[0].text, "Echo: still here");
}

TEST_P(EverythingTest, ToolFailureIsAnErrorResult) {
  // The server reports arguments it rejects and unknown tools as results
  // with isError, which the model can read and correct.
  absl::StatusOr<CallToolResult> result = client_->CallTool(
      "get-structured-content", R"({"location":"Atlantis"})", Within(std::chrono::seconds(10)));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->is_error);
  EXPECT_THAT(AllText(*result), HasSubstr("Input validation error"));
  absl::StatusOr<CallToolResult> unknown =
      client_->CallTool("no-such-tool", "{}", Within(std::chrono::seconds(10)));
  ASSERT_TRUE(unknown.ok()) << unknown.status();
  EXPECT_TRUE(unknown->is_error);
  EXPECT_THAT(AllText(*unknown), HasSubstr("no-such-tool not found"));
}

TEST_P(EverythingTest, StructuredContent) {
  absl::StatusOr<CallToolResult> result = client_->CallTool(
      "get-structured-content", R"({"location":"Chicago"})", Within(std::chrono::seconds(10)));
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->structured_content_json.has_value());
  const json structured = json::parse(*result->structured_content_json);
  EXPECT_EQ(structured["temperature"], 36);
  EXPECT_EQ(structured["conditions"], "Light rain / drizzle");
}

TEST_P(EverythingTest, ImagesAndResourceLinksAreMetadata) {
  absl::StatusOr<CallToolResult> image =
      client_->CallTool("get-tiny-image", "{}", Within(std::chrono::seconds(10)));
  ASSERT_TRUE(image.ok()) << image.status();
  bool saw_image = false;
  for (const ContentBlock& block : image->content) {
    if (block.type != ContentBlock::Type::kImage) continue;
    saw_image = true;
    EXPECT_EQ(block.mime_type, "image/png");
    EXPECT_GT(block.data_bytes, 0u);
  }
  EXPECT_TRUE(saw_image);

  absl::StatusOr<CallToolResult> links =
      client_->CallTool("get-resource-links", R"({"count":2})", Within(std::chrono::seconds(10)));
  ASSERT_TRUE(links.ok()) << links.status();
  int link_count = 0;
  for (const ContentBlock& block : links->content) {
    if (block.type != ContentBlock::Type::kResourceLink) continue;
    ++link_count;
    EXPECT_FALSE(block.uri.empty());
  }
  EXPECT_EQ(link_count, 2);
}

TEST_P(EverythingTest, ConcurrentCalls) {
  constexpr int kCalls = 8;
  std::vector<std::future<absl::StatusOr<CallToolResult>>> calls;
  calls.reserve(kCalls);
  for (int i = 0; i < kCalls; ++i) {
    calls.push_back(std::async(std::launch::async, [this, i] {
      return client_->CallTool("echo", json{{"message", "call " + std::to_string(i)}}.dump(),
                               Within(std::chrono::seconds(20)));
    }));
  }
  for (int i = 0; i < 8; ++i) {
    absl::StatusOr<CallToolResult> result = calls[i].get();
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->content[0].text, "Echo: call " + std::to_string(i));
  }
}

// Measures an echo round trip (reported, not asserted: the machine is shared).
TEST_P(EverythingTest, EchoRoundTripLatency) {
  constexpr int kWarmup = 50;
  constexpr int kCalls = 500;
  std::vector<double> micros;
  for (int i = 0; i < kWarmup + kCalls; ++i) {
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<CallToolResult> result =
        client_->CallTool("echo", R"({"message":"ping"})", Within(std::chrono::seconds(10)));
    const auto elapsed = std::chrono::steady_clock::now() - start;
    ASSERT_TRUE(result.ok()) << result.status();
    if (i >= kWarmup) {
      micros.push_back(std::chrono::duration<double, std::micro>(elapsed).count());
    }
  }
  std::sort(micros.begin(), micros.end());
  const double p50 = micros[micros.size() / 2];
  const double p99 = micros[micros.size() * 99 / 100];
  RecordProperty("echo_p50_us", static_cast<int>(p50));
  RecordProperty("echo_p99_us", static_cast<int>(p99));
  std::printf("RESULT mcp_echo transport=%s calls=%d p50_us=%.0f p99_us=%.0f\n",
              GetParam() == Kind::kStdio ? "stdio" : "http", kCalls, p50, p99);
}

INSTANTIATE_TEST_SUITE_P(Transports, EverythingTest, ::testing::Values(Kind::kStdio, Kind::kHttp),
                         [](const auto& info) {
                           return info.param == Kind::kStdio ? std::string("Stdio")
                                                             : std::string("Http");
                         });

class EverythingStdioTest : public EverythingTest {};

TEST_P(EverythingStdioTest, KilledServerFailsItsCallsAndTheNextCallRestartsIt) {
  std::promise<void> started;
  bool signalled = false;
  CallOptions options = Within(std::chrono::seconds(30));
  options.on_progress = [&](const Progress&) {
    if (!signalled) started.set_value();
    signalled = true;
  };
  auto slow = std::async(std::launch::async, [&] {
    return client_->CallTool("trigger-long-running-operation", R"({"duration":20,"steps":40})",
                             options);
  });
  ASSERT_EQ(started.get_future().wait_for(std::chrono::seconds(15)), std::future_status::ready);
  const pid_t first_pid = stdio_->pid();
  ASSERT_GT(first_pid, 0);
  ASSERT_EQ(::kill(first_pid, SIGKILL), 0);

  absl::StatusOr<CallToolResult> failed = slow.get();
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable) << failed.status();
  EXPECT_THAT(failed.status().message(), HasSubstr("killed by signal 9"));

  absl::StatusOr<CallToolResult> echo =
      client_->CallTool("echo", R"({"message":"after restart"})", Within(std::chrono::seconds(30)));
  ASSERT_TRUE(echo.ok()) << echo.status();
  EXPECT_EQ(echo->content[0].text, "Echo: after restart");
  EXPECT_EQ(client_->restarts(), 1);
  EXPECT_NE(stdio_->pid(), first_pid);
}

TEST_P(EverythingStdioTest, ServerSeesOnlyItsConfiguredEnvironment) {
  ::setenv("OMNIFORGE_MCP_TEST_SECRET", "must-not-leak", 1);
  // A restart spawns a process with the environment as it is now.
  ::kill(stdio_->pid(), SIGKILL);
  // The first calls may meet the dying process, and a loaded machine may be
  // slow to start the next one: calls are retried for up to 90 s, and every
  // failure is shown if none succeeds.
  const auto give_up_at = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  absl::StatusOr<CallToolResult> env = absl::UnknownError("not called");
  std::vector<std::string> failures;
  while (std::chrono::steady_clock::now() < give_up_at) {
    env = client_->CallTool("get-env", "{}", Within(std::chrono::seconds(30)));
    if (env.ok()) break;
    failures.push_back(env.status().ToString());
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ::unsetenv("OMNIFORGE_MCP_TEST_SECRET");
  ASSERT_TRUE(env.ok()) << absl::StrJoin(failures, "\n");
  const std::string text = AllText(*env);
  EXPECT_THAT(text, HasSubstr("given-value"));
  EXPECT_THAT(text, HasSubstr("PATH"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("must-not-leak")));
}

INSTANTIATE_TEST_SUITE_P(Stdio, EverythingStdioTest, ::testing::Values(Kind::kStdio),
                         [](const auto&) { return std::string("Stdio"); });

class EverythingHttpTest : public EverythingTest {};

TEST_P(EverythingHttpTest, UnreachableServerIsUnavailable) {
  http_server_->Kill();
  absl::StatusOr<CallToolResult> result = absl::UnknownError("not called");
  // The kill is asynchronous: the first call may still reach the dying process.
  for (int attempt = 0; attempt < 50; ++attempt) {
    result = client_->CallTool("echo", R"({"message":"anyone?"})", Within(std::chrono::seconds(5)));
    if (!result.ok()) break;
  }
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable) << result.status();
}

INSTANTIATE_TEST_SUITE_P(Http, EverythingHttpTest, ::testing::Values(Kind::kHttp),
                         [](const auto&) { return std::string("Http"); });

// server-memory through the registry, configured from YAML.
TEST(MemoryServerTest, RegistryFromConfigNamespacesToolsMapsRiskAndCalls) {
  if (!testing::NodeAvailable())
    GTEST_SKIP() << "node is not on PATH: MCP integration tests need Node.js";
  ASSERT_TRUE(std::filesystem::exists(testing::ServerScript("server-memory")))
      << testing::MissingPackageMessage("server-memory");
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("omniforge-mcp-memory-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string yaml =
      "mcp:\n  servers:\n    memory:\n      transport: stdio\n"
      "      command: node\n      args: ['" +
      testing::ServerScript("server-memory").string() + "']\n      env: {MEMORY_FILE_PATH: '" +
      (dir / "memory.jsonl").string() + "'}\n      write_paths: ['" + dir.string() +
      "']\n      timeout_ms: 20000\n      trust: read_hints\n";
  absl::StatusOr<core::ConfigReader> reader =
      core::ConfigReader::FromString(yaml, [](const std::string&) { return std::nullopt; });
  ASSERT_TRUE(reader.ok()) << reader.status();
  absl::StatusOr<McpConfig> config = ReadMcpConfig(*reader);
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_TRUE(reader->Finish().ok()) << reader->Finish();

  McpRegistry registry(std::move(*config));
  ASSERT_TRUE(registry.Refresh(Within(std::chrono::seconds(30))).ok());
  const auto risk_of = [&registry](const std::string& name) {
    std::optional<RegisteredTool> tool = registry.FindTool(name);
    EXPECT_TRUE(tool.has_value()) << name;
    return tool ? tool->risk : ToolRisk::kHigh;
  };
  EXPECT_EQ(risk_of("memory__read_graph"), ToolRisk::kRead);
  EXPECT_EQ(risk_of("memory__create_entities"), ToolRisk::kWrite);
  EXPECT_EQ(risk_of("memory__delete_entities"), ToolRisk::kHigh);

  absl::StatusOr<CallToolResult> created = registry.CallTool(
      "memory__create_entities",
      R"({"entities":[{"name":"Notion weekly update","entityType":"task","observations":["every Monday"]}]})",
      Within(std::chrono::seconds(10)));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_FALSE(created->is_error) << AllText(*created);

  absl::StatusOr<CallToolResult> graph =
      registry.CallTool("memory__read_graph", "{}", Within(std::chrono::seconds(10)));
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_THAT(AllText(*graph), HasSubstr("Notion weekly update"));
  EXPECT_THAT(AllText(*graph), HasSubstr("every Monday"));

  const std::vector<ServerStatus> servers = registry.Servers();
  ASSERT_THAT(servers, SizeIs(1));
  EXPECT_TRUE(servers[0].listed);
  EXPECT_GE(servers[0].tools, 9u);
  registry.Shutdown();
  std::filesystem::remove_all(dir);
}

CallOptions As(const std::string& tenant, const std::string& user) {
  CallOptions options = Within(std::chrono::seconds(10));
  options.caller = core::Identity{tenant, user};
  return options;
}

// server-memory with its file under `dir`, per tenant or shared; through
// the registry, configured from YAML.
std::unique_ptr<McpRegistry> MemoryRegistry(const std::filesystem::path& dir, bool per_tenant) {
  // Per tenant: a directory each, the only place its process may write.
  const std::string own = per_tenant ? (dir / "{tenant}").string() : dir.string();
  const std::string yaml =
      "mcp:\n  servers:\n    memory:\n      transport: stdio\n      command: node\n"
      "      args: ['" +
      testing::ServerScript("server-memory").string() + "']\n      env: {MEMORY_FILE_PATH: '" +
      own + "/memory.jsonl'}\n      write_paths: ['" + own +
      "']\n      timeout_ms: 20000\n      per_tenant: " + (per_tenant ? "true" : "false") + "\n";
  absl::StatusOr<core::ConfigReader> reader =
      core::ConfigReader::FromString(yaml, [](const std::string&) { return std::nullopt; });
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return nullptr;
  absl::StatusOr<McpConfig> config = ReadMcpConfig(*reader);
  EXPECT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(reader->Finish().ok()) << reader->Finish();
  if (!config.ok()) return nullptr;
  return std::make_unique<McpRegistry>(std::move(*config));
}

// What each of two tenants reads after acme stored an entity: {acme's graph, globex's}.
std::pair<std::string, std::string> AcmeWritesBothRead(McpRegistry& registry) {
  EXPECT_TRUE(registry.Refresh(Within(std::chrono::seconds(30))).ok());
  absl::StatusOr<CallToolResult> created = registry.CallTool(
      "memory__create_entities",
      R"({"entities":[{"name":"Acme merger","entityType":"secret","observations":["closes Friday"]}]})",
      As("acme", "alice"));
  EXPECT_TRUE(created.ok()) << created.status();
  absl::StatusOr<CallToolResult> acme =
      registry.CallTool("memory__read_graph", "{}", As("acme", "arthur"));
  absl::StatusOr<CallToolResult> globex =
      registry.CallTool("memory__read_graph", "{}", As("globex", "bob"));
  EXPECT_TRUE(acme.ok()) << acme.status();
  EXPECT_TRUE(globex.ok()) << globex.status();
  return {acme.ok() ? AllText(*acme) : "", globex.ok() ? AllText(*globex) : ""};
}

// The issue per_tenant fixes, shown on the real server: shared, one
// tenant's memory is another's.
TEST(MemoryServerTest, SharedServerShowsOneTenantsMemoryToAnother) {
  if (!testing::NodeAvailable())
    GTEST_SKIP() << "node is not on PATH: MCP integration tests need Node.js";
  ASSERT_TRUE(std::filesystem::exists(testing::ServerScript("server-memory")))
      << testing::MissingPackageMessage("server-memory");
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("omniforge-mcp-shared-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::unique_ptr<McpRegistry> registry = MemoryRegistry(dir, /*per_tenant=*/false);
  ASSERT_NE(registry, nullptr);
  const auto [acme, globex] = AcmeWritesBothRead(*registry);
  EXPECT_THAT(acme, HasSubstr("Acme merger"));
  EXPECT_THAT(globex, HasSubstr("Acme merger"));
  registry->Shutdown();
  std::filesystem::remove_all(dir);
}

TEST(MemoryServerTest, PerTenantServerKeepsEachTenantsMemoryApart) {
  if (!testing::NodeAvailable())
    GTEST_SKIP() << "node is not on PATH: MCP integration tests need Node.js";
  ASSERT_TRUE(std::filesystem::exists(testing::ServerScript("server-memory")))
      << testing::MissingPackageMessage("server-memory");
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("omniforge-mcp-tenants-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::unique_ptr<McpRegistry> registry = MemoryRegistry(dir, /*per_tenant=*/true);
  ASSERT_NE(registry, nullptr);
  const auto [acme, globex] = AcmeWritesBothRead(*registry);
  EXPECT_THAT(acme, HasSubstr("Acme merger"));
  EXPECT_THAT(acme, HasSubstr("closes Friday"));
  EXPECT_THAT(globex, Not(HasSubstr("Acme")));
  EXPECT_THAT(registry->TenantsOf("memory"), ::testing::ElementsAre("_catalog", "acme", "globex"));
  registry->Shutdown();
  // Each tenant's process kept its own file.
  EXPECT_TRUE(std::filesystem::exists(dir / "acme" / "memory.jsonl"));
  EXPECT_FALSE(std::filesystem::exists(dir / "memory.jsonl"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace omniforge::mcp
