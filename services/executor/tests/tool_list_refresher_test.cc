// The catalog follows an MCP server's tool list while the executor runs:
// after notifications/tools/list_changed, and after a stdio server was
// restarted with another set of tools. Against fake_saas_mcp.mjs over
// stdio; skips only where node is absent.
#include "services/executor/src/tool_list_refresher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "libs/core/ids.h"
#include "libs/mcp/testing/node_servers.h"
#include "services/executor/src/domain_tools.h"
#include "services/executor/src/mcp_tools.h"
#include "services/executor/src/tool_runtime.h"

namespace omniforge::executor {
namespace {

using Json = nlohmann::json;

class ToolListRefresherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!mcp::testing::NodeAvailable()) GTEST_SKIP() << "node is not on PATH";
    extra_tools_ = std::filesystem::temp_directory_path() /
                   ("omniforge-extra-tools-" + core::NewUuid() + ".json");
    WriteExtraTools(Json::array());
    mcp::McpServerConfig server;
    server.name = "cal";
    server.transport = mcp::TransportKind::kStdio;
    server.stdio.server_name = "cal";
    server.stdio.command = "node";
    server.stdio.args = {
        std::string(OMNIFORGE_SOURCE_DIR) + "/services/executor/tests/fake_saas_mcp.mjs",
        "calendar", "--extra-tools", extra_tools_.string()};
    server.session.server_name = "cal";
    server.trust = mcp::ServerTrust::kReadHints;  // its read-only tools are READ
    server.session.restart_backoff = std::chrono::milliseconds(0);
    registry_ = std::make_unique<mcp::McpRegistry>(mcp::McpConfig{{server}});
    mcp::CallOptions within;
    within.deadline = std::chrono::system_clock::now() + std::chrono::seconds(30);
    ASSERT_TRUE(registry_->Refresh(within).ok());
    domains_ =
        std::make_unique<DomainTools>(*registry_, std::vector<DomainConfig>{{"calendar", {"cal"}}});
    ASSERT_TRUE(catalog_.AddProvider(*domains_).ok());
    RefresherOptions options;
    options.check_interval = std::chrono::milliseconds(20);
    refresher_ = std::make_unique<ToolListRefresher>(
        *registry_, catalog_, std::vector<ToolProvider*>{domains_.get()}, options);
  }

  void TearDown() override {
    refresher_.reset();
    if (!extra_tools_.empty()) std::filesystem::remove(extra_tools_);
  }

  void WriteExtraTools(const Json& names) { std::ofstream(extra_tools_) << names.dump(); }

  absl::StatusOr<InvokeOutcome> Invoke(const std::string& tool) {
    return runtime_.Invoke({"acme", "alice"}, {tool, "{}", ""},
                           std::chrono::system_clock::now() + std::chrono::seconds(10));
  }

  // Whether the catalog comes to hold `name` within a few seconds.
  bool EventuallyListed(const std::string& name) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < give_up) {
      if (catalog_.Find(name).has_value()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  std::filesystem::path extra_tools_;
  std::unique_ptr<mcp::McpRegistry> registry_;
  std::unique_ptr<DomainTools> domains_;
  ToolCatalog catalog_;
  ToolRuntime runtime_{catalog_, nullptr};
  std::unique_ptr<ToolListRefresher> refresher_;
};

TEST_F(ToolListRefresherTest, AChangedToolListReachesTheCatalog) {
  EXPECT_FALSE(catalog_.Find("calendar__find_free_slot").has_value());
  EXPECT_EQ(Invoke("calendar__find_free_slot").status().code(), absl::StatusCode::kNotFound);
  auto enabled = Invoke("calendar__enable_scheduling");
  ASSERT_TRUE(enabled.ok()) << enabled.status();
  ASSERT_TRUE(EventuallyListed("calendar__find_free_slot"));
  EXPECT_EQ(catalog_.Find("calendar__find_free_slot")->spec.risk, ToolRisk::kRead);
  auto slot =
      runtime_.Invoke({"acme", "alice"}, {"calendar__find_free_slot", R"({"minutes": 30})", ""},
                      std::chrono::system_clock::now() + std::chrono::seconds(10));
  ASSERT_TRUE(slot.ok()) << slot.status();
  EXPECT_EQ(Json::parse(slot->result_json)["data"]["minutes"], 30);
  // The tools that were there still are.
  EXPECT_TRUE(catalog_.Find("calendar__list_events").has_value());
}

TEST_F(ToolListRefresherTest, ARestartedServersNewToolsReachTheCatalog) {
  WriteExtraTools(Json::array({"weekly_digest"}));
  ASSERT_TRUE(Invoke("calendar__crash").ok());
  // Once the process is gone, the next call starts a new one, which reads
  // the new tool set.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (registry_->Servers()[0].restarts == 0 && std::chrono::steady_clock::now() < give_up) {
    (void)Invoke("calendar__list_events");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(registry_->Servers()[0].restarts, 1);
  ASSERT_TRUE(EventuallyListed("calendar__weekly_digest"));
  auto digest = Invoke("calendar__weekly_digest");
  ASSERT_TRUE(digest.ok()) << digest.status();
  EXPECT_EQ(Json::parse(digest->result_json)["data"], "weekly_digest ran");
}

}  // namespace
}  // namespace omniforge::executor
