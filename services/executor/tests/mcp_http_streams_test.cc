// What an MCP server on Streamable HTTP sends on its own reaches the
// executor: notifications and requests on the GET stream, and everything a
// dropped stream carried, replayed after the client reconnects with
// Last-Event-ID. Against tests/node/resumable_mcp_server.mjs (the official
// SDK's server transport with an event store); skips only where node is
// absent.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "libs/mcp/client.h"
#include "libs/mcp/http_transport.h"
#include "libs/mcp/registry.h"
#include "libs/mcp/session.h"
#include "libs/mcp/testing/node_servers.h"
#include "nlohmann/json.hpp"
#include "services/executor/src/mcp_tools.h"
#include "services/executor/src/tool_catalog.h"
#include "services/executor/src/tool_list_refresher.h"
#include "services/executor/src/tool_runtime.h"

namespace omniforge::executor {
namespace {

using Json = nlohmann::json;
using ::testing::ElementsAre;
using ::testing::StartsWith;

constexpr char kGetStream[] = "_GET_stream|";  // the peer's event ids on its GET stream

mcp::CallOptions Within(std::chrono::milliseconds timeout) {
  mcp::CallOptions options;
  options.deadline = std::chrono::system_clock::now() + timeout;
  return options;
}

// Whether `condition` holds within 10 s.
bool Eventually(const std::function<bool()>& condition) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!condition()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

mcp::HttpServerConfig HttpConfig(const std::string& name, const std::string& url) {
  mcp::HttpServerConfig config;
  config.server_name = name;
  config.url = url;
  config.reconnect_backoff = std::chrono::milliseconds(20);
  config.reconnect_backoff_max = std::chrono::milliseconds(200);
  return config;
}

void SkipWithoutPeer() {
  if (!mcp::testing::NodeAvailable()) GTEST_SKIP() << "node is not on PATH";
  ASSERT_TRUE(std::filesystem::exists(mcp::testing::NodeModules() / "@modelcontextprotocol" /
                                      "sdk" / "package.json"))
      << mcp::testing::MissingPackageMessage("sdk");
}

// One client on the peer, counting the tool-list announcements it hears.
class GetStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SkipWithoutPeer();
    if (IsSkipped() || HasFatalFailure()) return;
    server_ =
        std::make_unique<mcp::testing::NodeHttpServer>(mcp::testing::ResumableServerScript(), "");
    ASSERT_GT(server_->port(), 0) << "resumable_mcp_server.mjs did not start";
    mcp::SessionOptions options;
    options.server_name = "live";
    client_ = std::make_unique<mcp::McpClient>(
        std::make_unique<mcp::HttpTransport>(HttpConfig("live", server_->url())), options);
    client_->SetToolsChangedListener([this] { ++changes_; });
    ASSERT_TRUE(client_->Connect(Within(std::chrono::seconds(30))).ok());
    // What the server sends before the GET stream is open has no stream to
    // go on (and no event id the client could resume from).
    ASSERT_TRUE(Eventually([this] { return Stats()["get_streams_open"] == 1; }));
  }
  void TearDown() override {
    if (client_) client_->Shutdown();
  }

  std::string Call(const std::string& tool, const Json& arguments,
                   const mcp::ProgressCallback& on_progress = nullptr) {
    mcp::CallOptions options = Within(std::chrono::seconds(20));
    options.on_progress = on_progress;
    auto result = client_->CallTool(tool, arguments.dump(), options);
    EXPECT_TRUE(result.ok()) << tool << ": " << result.status();
    if (!result.ok() || result->content.empty()) return "";
    EXPECT_FALSE(result->is_error) << result->content[0].text;
    return result->content[0].text;
  }
  Json Stats() { return Json::parse(Call("stats", Json::object())); }

  std::unique_ptr<mcp::testing::NodeHttpServer> server_;
  std::unique_ptr<mcp::McpClient> client_;
  std::atomic<int> changes_{0};
};

TEST_F(GetStreamTest, NotificationsOnTheGetStreamReachTheClient) {
  EXPECT_EQ(Call("announce_tools_changed", {{"count", 3}}), "announced");
  ASSERT_TRUE(Eventually([this] { return changes_ == 3; })) << changes_;
  const Json stats = Stats();
  ASSERT_EQ(stats["gets"].size(), 1u);
  EXPECT_EQ(stats["gets"][0]["last_event_id"], "");
}

TEST_F(GetStreamTest, ARequestOnTheGetStreamIsAnswered) {
  // The server's ping goes out on the GET stream and the tool returns only
  // once the answer came back.
  EXPECT_EQ(Call("ping_client", Json::object()), "the client answered ping");
}

TEST_F(GetStreamTest, ADroppedGetStreamIsResumedWithNothingLostOrRepeated) {
  Call("announce_tools_changed", {{"count", 2}});
  ASSERT_TRUE(Eventually([this] { return changes_ == 2; }));
  // The connection is cut, five announcements are made while the client
  // has no stream, and its first reconnections are refused (503).
  EXPECT_EQ(Json::parse(Call("drop_get_stream", {{"then_announce", 5}, {"hold_ms", 300}}))["cut"],
            1);
  ASSERT_TRUE(Eventually([this] { return changes_ >= 7; })) << changes_;
  // Nothing arrives twice: the replay started after the last event seen.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(changes_, 7);
  const Json stats = Stats();
  EXPECT_EQ(stats["replayed"], 5);
  EXPECT_EQ(stats["get_streams_open"], 1);
  const Json& gets = stats["gets"];
  ASSERT_GE(gets.size(), 3u) << gets.dump();
  EXPECT_EQ(gets[0]["last_event_id"], "");
  // Every reconnection, the refused ones and the one that succeeded, asked
  // for what followed the second announcement.
  const std::string resume_from = gets[1]["last_event_id"];
  EXPECT_THAT(resume_from, StartsWith(kGetStream));
  bool refused = false;
  for (size_t i = 1; i < gets.size(); ++i) {
    EXPECT_EQ(gets[i]["last_event_id"], resume_from) << gets.dump();
    refused = refused || gets[i]["status"] == 503;
  }
  EXPECT_TRUE(refused) << "the reconnection came after the hold: " << gets.dump();
  EXPECT_EQ(gets.back()["status"], 200);
}

TEST_F(GetStreamTest, ADroppedAnswerStreamIsResumedUntilTheAnswer) {
  std::mutex mu;
  std::vector<double> progress;
  const std::string answer =
      Call("drop_answer_stream", {{"hold_ms", 200}}, [&](const mcp::Progress& p) {
        std::lock_guard lock(mu);
        progress.push_back(p.progress);
      });
  EXPECT_EQ(answer, "answered after the stream was cut");
  {
    std::lock_guard lock(mu);
    EXPECT_THAT(progress, ElementsAre(1, 2, 3));
  }
  const Json stats = Stats();
  // Progress 2 and 3 and the answer were sent after the cut: replayed.
  EXPECT_EQ(stats["replayed"], 3);
  bool resumed = false;
  for (const Json& get : stats["gets"]) {
    const std::string id = get["last_event_id"];
    resumed = resumed || (!id.empty() && id.rfind(kGetStream, 0) != 0 && get["status"] == 200);
  }
  EXPECT_TRUE(resumed) << stats["gets"].dump();
}

TEST_F(GetStreamTest, AForgottenSessionIsNoticedAndANewOneListens) {
  EXPECT_EQ(Call("forget_session", Json::object()), "forgetting");
  // The GET stream's reconnection meets 404: the client hears of it as of
  // a changed tool list, and its next call starts a new session.
  ASSERT_TRUE(Eventually([this] { return changes_ == 1; }));
  EXPECT_EQ(Call("echo", {{"text", "again"}}), "again");
  ASSERT_TRUE(Eventually([this] { return Stats()["get_streams_open"] == 1; }));
  EXPECT_EQ(client_->restarts(), 0);
}

// The executor's catalog, fed by the peer as one configured MCP server.
class HttpCatalogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SkipWithoutPeer();
    if (IsSkipped() || HasFatalFailure()) return;
    server_ =
        std::make_unique<mcp::testing::NodeHttpServer>(mcp::testing::ResumableServerScript(), "");
    ASSERT_GT(server_->port(), 0) << "resumable_mcp_server.mjs did not start";
    mcp::McpServerConfig server;
    server.name = "live";
    server.transport = mcp::TransportKind::kHttp;
    server.http = HttpConfig("live", server_->url());
    server.session.server_name = "live";
    server.trust = mcp::ServerTrust::kReadHints;  // the project's own test peer
    registry_ = std::make_unique<mcp::McpRegistry>(mcp::McpConfig{{server}});
    ASSERT_TRUE(registry_->Refresh(Within(std::chrono::seconds(30))).ok());
    tools_ = std::make_unique<McpTools>(*registry_);
    ASSERT_TRUE(catalog_.AddProvider(*tools_).ok());
    RefresherOptions options;
    options.check_interval = std::chrono::milliseconds(20);
    refresher_ = std::make_unique<ToolListRefresher>(
        *registry_, catalog_, std::vector<ToolProvider*>{tools_.get()}, options);
    ASSERT_TRUE(Eventually([this] {
      auto stats = Invoke("live__stats", "{}");
      return stats.ok() &&
             Json::parse(
                 Json::parse(stats->result_json)["text"].get<std::string>())["get_streams_open"] ==
                 1;
    }));
  }
  void TearDown() override { refresher_.reset(); }

  absl::StatusOr<InvokeOutcome> Invoke(const std::string& tool, const std::string& arguments) {
    return runtime_.Invoke({"acme", "alice"}, {tool, arguments, ""},
                           std::chrono::system_clock::now() + std::chrono::seconds(10));
  }
  bool EventuallyListed(const std::string& name) {
    return Eventually([&] { return catalog_.Find(name).has_value(); });
  }

  std::unique_ptr<mcp::testing::NodeHttpServer> server_;
  std::unique_ptr<mcp::McpRegistry> registry_;
  std::unique_ptr<McpTools> tools_;
  ToolCatalog catalog_;
  ToolRuntime runtime_{catalog_, nullptr};
  std::unique_ptr<ToolListRefresher> refresher_;
};

TEST_F(HttpCatalogTest, AToolAnnouncedOnTheGetStreamReachesTheCatalog) {
  EXPECT_FALSE(catalog_.Find("live__weekly_digest").has_value());
  ASSERT_TRUE(Invoke("live__add_tool", R"({"name": "weekly_digest"})").ok());
  ASSERT_TRUE(EventuallyListed("live__weekly_digest"));
  EXPECT_EQ(catalog_.Find("live__weekly_digest")->spec.risk, ToolRisk::kRead);
  auto digest = Invoke("live__weekly_digest", "{}");
  ASSERT_TRUE(digest.ok()) << digest.status();
  EXPECT_EQ(Json::parse(digest->result_json)["text"], "weekly_digest ran");
}

TEST_F(HttpCatalogTest, AToolAnnouncedWhileTheGetStreamWasDownReachesTheCatalog) {
  // An event on the stream gives the client an id to resume from (a
  // 2025-06-18 server sends none before its first event).
  ASSERT_TRUE(Invoke("live__add_tool", R"({"name": "weekly_digest"})").ok());
  ASSERT_TRUE(EventuallyListed("live__weekly_digest"));
  // The next announcement is made while the client has no stream: the
  // catalog learns of the tool from the replay alone.
  ASSERT_TRUE(Invoke("live__drop_get_stream",
                     R"({"then_add": "late_report", "then_announce": 1, "hold_ms": 200})")
                  .ok());
  ASSERT_TRUE(EventuallyListed("live__late_report"));
  auto report = Invoke("live__late_report", "{}");
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(Json::parse(report->result_json)["text"], "late_report ran");
}

}  // namespace
}  // namespace omniforge::executor
