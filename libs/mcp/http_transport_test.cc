// The Streamable HTTP transport over real loopback sockets against a fake
// MCP endpoint: session ids, the protocol version header, JSON and SSE
// answers, an expired session, DELETE on shutdown, HTTP errors, the GET
// stream (405, reconnection with Last-Event-ID).
#include "libs/mcp/http_transport.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libs/mcp/client.h"
#include "libs/mcp/session.h"
#include "nlohmann/json.hpp"

namespace omniforge::mcp {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::SizeIs;

// What the fake answers to GET on the endpoint.
enum class GetMode {
  kNoRoute,       // httplib's 404 for a path without a GET handler
  kNotAllowed,    // 405: no GET stream offered
  kOneCutStream,  // the first GET: two events, then a third cut off; later ones 405
  kHeldOpen,      // a stream that stays open until the client goes
};

struct SeenGet {
  std::string session_id;
  std::string last_event_id;
  std::string accept;
};

struct SeenRequest {
  std::string method;  // JSON-RPC method, or "DELETE"
  std::string session_id;
  std::string protocol_version;
  std::string authorization;
  std::string accept;
};

class FakeMcpEndpoint {
 public:
  FakeMcpEndpoint() {
    server_.Post("/mcp", [this](const httplib::Request& req, httplib::Response& res) {
      const json message = json::parse(req.body);
      const std::string method = message.value("method", "");
      Record(req, method);
      if (forced_status_ != 0) {
        res.status = forced_status_;
        res.set_content(
            R"({"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"go away"}})",
            "application/json");
        return;
      }
      if (method == "initialize") {
        const std::string id = "session-" + std::to_string(++sessions_);
        {
          std::lock_guard lock(mu_);
          live_session_ = id;
        }
        res.set_header("Mcp-Session-Id", id);
        res.set_content(json{{"jsonrpc", "2.0"},
                             {"id", message["id"]},
                             {"result",
                              {{"protocolVersion", "2025-06-18"},
                               {"capabilities", {{"tools", json::object()}}},
                               {"serverInfo", {{"name", "fake"}, {"version", "1"}}}}}}
                            .dump(),
                        "application/json");
        return;
      }
      {
        std::lock_guard lock(mu_);
        if (req.get_header_value("Mcp-Session-Id") != live_session_) {
          res.status = 404;
          return;
        }
      }
      if (!message.contains("id")) {
        res.status = 202;
        return;
      }
      if (method == "tools/list") {
        res.set_content(json{{"jsonrpc", "2.0"},
                             {"id", message["id"]},
                             {"result", {{"tools", json::array({{{"name", "t"}}})}}}}
                            .dump(),
                        "application/json");
        return;
      }
      // tools/call answers with an SSE stream: progress, then the result.
      const json token =
          message["params"].value("_meta", json::object()).value("progressToken", json());
      std::string stream;
      for (int step = 1; step <= 2; ++step) {
        stream += "event: message\ndata: " +
                  json{{"jsonrpc", "2.0"},
                       {"method", "notifications/progress"},
                       {"params", {{"progressToken", token}, {"progress", step}, {"total", 2}}}}
                      .dump() +
                  "\n\n";
      }
      stream +=
          ": a comment line\n\ndata: " +
          json{{"jsonrpc", "2.0"},
               {"id", message["id"]},
               {"result", {{"content", json::array({{{"type", "text"}, {"text", "streamed"}}})}}}}
              .dump() +
          "\n\n";
      res.set_content(stream, "text/event-stream");
    });
    server_.Delete("/mcp", [this](const httplib::Request& req, httplib::Response& res) {
      Record(req, "DELETE");
      res.status = 200;
    });
    server_.Get("/mcp", [this](const httplib::Request& req, httplib::Response& res) {
      size_t count = 0;
      {
        std::lock_guard lock(mu_);
        gets_.push_back({req.get_header_value("Mcp-Session-Id"),
                         req.get_header_value("Last-Event-ID"), req.get_header_value("Accept")});
        count = gets_.size();
      }
      if (get_mode_ == GetMode::kNoRoute) {
        res.status = 404;
      } else if (get_mode_ == GetMode::kHeldOpen) {
        res.set_chunked_content_provider("text/event-stream", [](size_t, httplib::DataSink& sink) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
          return sink.write(": open\n\n", 8);
        });
      } else if (get_mode_ == GetMode::kNotAllowed || count > 1) {
        res.status = 405;
      } else {
        res.set_chunked_content_provider("text/event-stream", [](size_t, httplib::DataSink& sink) {
          const std::string changed =
              R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})";
          const std::string stream = "id: e1\nevent: message\ndata: " + changed +
                                     "\n\nid: e2\ndata: " + changed +
                                     "\n\nid: e3\ndata: " + changed + "\n";
          sink.write(stream.data(), stream.size());
          sink.done();
          return true;
        });
      }
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FakeMcpEndpoint() {
    // stop() is a no-op until the accept loop runs; httplib offers no signal for that.
    while (!server_.is_running()) std::this_thread::yield();
    server_.stop();
    thread_.join();
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/mcp"; }
  std::vector<SeenRequest> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }
  // The server forgets every session (it restarted).
  void ForgetSessions() {
    std::lock_guard lock(mu_);
    live_session_.clear();
  }
  void AnswerEverythingWith(int status) { forced_status_ = status; }
  void AnswerGetWith(GetMode mode) { get_mode_ = mode; }
  std::vector<SeenGet> gets() {
    std::lock_guard lock(mu_);
    return gets_;
  }
  // Waits up to 5 s for `n` GETs.
  bool AwaitGets(size_t n) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (gets().size() < n) {
      if (std::chrono::steady_clock::now() > give_up) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
  }

 private:
  void Record(const httplib::Request& req, const std::string& method) {
    std::lock_guard lock(mu_);
    seen_.push_back({method, req.get_header_value("Mcp-Session-Id"),
                     req.get_header_value("MCP-Protocol-Version"),
                     req.get_header_value("Authorization"), req.get_header_value("Accept")});
  }

  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<SeenRequest> seen_;
  std::vector<SeenGet> gets_;
  std::atomic<GetMode> get_mode_{GetMode::kNoRoute};
  std::string live_session_;
  std::atomic<int> sessions_{0};
  std::atomic<int> forced_status_{0};
};

CallOptions Within(std::chrono::milliseconds timeout) {
  CallOptions options;
  options.deadline = std::chrono::system_clock::now() + timeout;
  return options;
}

std::unique_ptr<McpClient> ClientFor(const std::string& url) {
  HttpServerConfig config;
  config.server_name = "fake";
  config.url = url;
  config.headers = {{"Authorization", "Bearer secret-token"}};
  config.connect_timeout = std::chrono::milliseconds(2000);
  config.reconnect_backoff = std::chrono::milliseconds(20);
  SessionOptions options;
  options.server_name = "fake";
  return std::make_unique<McpClient>(std::make_unique<HttpTransport>(config), options);
}

TEST(HttpTransportTest, SessionIdAndProtocolVersionFollowInitialize) {
  FakeMcpEndpoint endpoint;
  std::unique_ptr<McpClient> client = ClientFor(endpoint.url());
  absl::StatusOr<std::vector<Tool>> tools = client->ListTools(Within(std::chrono::seconds(5)));
  ASSERT_TRUE(tools.ok()) << tools.status();
  ASSERT_THAT(*tools, SizeIs(1));
  const std::vector<SeenRequest> seen = endpoint.seen();
  ASSERT_THAT(seen, SizeIs(3));
  EXPECT_EQ(seen[0].method, "initialize");
  EXPECT_EQ(seen[0].session_id, "");
  EXPECT_EQ(seen[0].protocol_version, "");
  for (const SeenRequest& request : seen) {
    EXPECT_EQ(request.authorization, "Bearer secret-token");
    EXPECT_THAT(request.accept, HasSubstr("application/json"));
    EXPECT_THAT(request.accept, HasSubstr("text/event-stream"));
  }
  for (size_t i = 1; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].session_id, "session-1") << seen[i].method;
    EXPECT_EQ(seen[i].protocol_version, "2025-06-18") << seen[i].method;
  }
  EXPECT_EQ(seen[1].method, "notifications/initialized");
}

TEST(HttpTransportTest, SseAnswerCarriesProgressAndTheResult) {
  FakeMcpEndpoint endpoint;
  std::unique_ptr<McpClient> client = ClientFor(endpoint.url());
  std::vector<Progress> reports;
  CallOptions options = Within(std::chrono::seconds(5));
  options.on_progress = [&reports](const Progress& p) { reports.push_back(p); };
  absl::StatusOr<CallToolResult> result = client->CallTool("t", "{}", options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->content[0].text, "streamed");
  ASSERT_THAT(reports, SizeIs(2));
  EXPECT_EQ(reports[1].progress, 2);
}

TEST(HttpTransportTest, ExpiredSessionIsReinitialized) {
  FakeMcpEndpoint endpoint;
  std::unique_ptr<McpClient> client = ClientFor(endpoint.url());
  ASSERT_TRUE(client->ListTools(Within(std::chrono::seconds(5))).ok());
  endpoint.ForgetSessions();
  absl::StatusOr<CallToolResult> result =
      client->CallTool("t", "{}", Within(std::chrono::seconds(5)));
  ASSERT_TRUE(result.ok()) << result.status();
  std::vector<std::string> sequence;
  for (const SeenRequest& request : endpoint.seen())
    sequence.push_back(request.method + "@" + request.session_id);
  EXPECT_THAT(sequence, ::testing::ElementsAre("initialize@", "notifications/initialized@session-1",
                                               "tools/list@session-1", "tools/call@session-1",
                                               "DELETE@session-1", "initialize@",
                                               "notifications/initialized@session-2",
                                               "tools/call@session-2"));
}

TEST(HttpTransportTest, ShutdownDeletesTheSession) {
  FakeMcpEndpoint endpoint;
  std::unique_ptr<McpClient> client = ClientFor(endpoint.url());
  ASSERT_TRUE(client->Connect(Within(std::chrono::seconds(5))).ok());
  client->Shutdown();
  const std::vector<SeenRequest> seen = endpoint.seen();
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().method, "DELETE");
  EXPECT_EQ(seen.back().session_id, "session-1");
  EXPECT_EQ(seen.back().protocol_version, "2025-06-18");
}

TEST(HttpTransportTest, HttpErrorsMapToStatusCodes) {
  for (const auto& [http, code] :
       std::vector<std::pair<int, absl::StatusCode>>{{401, absl::StatusCode::kUnauthenticated},
                                                     {403, absl::StatusCode::kPermissionDenied},
                                                     {503, absl::StatusCode::kUnavailable},
                                                     {500, absl::StatusCode::kInternal}}) {
    FakeMcpEndpoint endpoint;
    endpoint.AnswerEverythingWith(http);
    std::unique_ptr<McpClient> client = ClientFor(endpoint.url());
    const absl::Status status = client->Connect(Within(std::chrono::seconds(5)));
    EXPECT_EQ(status.code(), code) << http << ": " << status;
    EXPECT_THAT(status.message(), HasSubstr("go away"));
  }
}

TEST(HttpTransportTest, A405MeansNoGetStreamAndIsNotRetried) {
  FakeMcpEndpoint endpoint;
  endpoint.AnswerGetWith(GetMode::kNotAllowed);
  std::unique_ptr<McpClient> client = ClientFor(endpoint.url());
  ASSERT_TRUE(client->Connect(Within(std::chrono::seconds(5))).ok());
  ASSERT_TRUE(endpoint.AwaitGets(1));
  const SeenGet get = endpoint.gets()[0];
  EXPECT_EQ(get.session_id, "session-1");
  EXPECT_EQ(get.last_event_id, "");
  EXPECT_EQ(get.accept, "text/event-stream");
  // Calls go on over POST; the GET is not asked again (reconnects would
  // have come after 20 ms).
  ASSERT_TRUE(client->ListTools(Within(std::chrono::seconds(5))).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_THAT(endpoint.gets(), SizeIs(1));
}

TEST(HttpTransportTest, GetStreamNotificationsArriveAndAReconnectSendsTheLastEventId) {
  FakeMcpEndpoint endpoint;
  endpoint.AnswerGetWith(GetMode::kOneCutStream);
  std::unique_ptr<McpClient> client = ClientFor(endpoint.url());
  std::atomic<int> changes{0};
  client->SetToolsChangedListener([&changes] { ++changes; });
  ASSERT_TRUE(client->Connect(Within(std::chrono::seconds(5))).ok());
  ASSERT_TRUE(endpoint.AwaitGets(2));
  const std::vector<SeenGet> gets = endpoint.gets();
  EXPECT_EQ(gets[0].last_event_id, "");
  // e3's event was cut off before its end: it was not received, so the
  // server is asked for what follows e2.
  EXPECT_EQ(gets[1].last_event_id, "e2");
  EXPECT_EQ(gets[1].session_id, "session-1");
  EXPECT_EQ(changes.load(), 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_THAT(endpoint.gets(), SizeIs(2));  // the 405 ended the retries
}

TEST(HttpTransportTest, ShutdownEndsAnOpenGetStreamAtOnce) {
  FakeMcpEndpoint endpoint;
  endpoint.AnswerGetWith(GetMode::kHeldOpen);
  std::unique_ptr<McpClient> client = ClientFor(endpoint.url());
  ASSERT_TRUE(client->Connect(Within(std::chrono::seconds(5))).ok());
  ASSERT_TRUE(endpoint.AwaitGets(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the stream is open and idle
  const auto start = std::chrono::steady_clock::now();
  client->Shutdown();
  // Without waking the transfer it would wait out its 1 s poll.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
  const std::vector<SeenRequest> seen = endpoint.seen();
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().method, "DELETE");
}

TEST(HttpTransportTest, RefusedConnectionIsUnavailable) {
  // A port that was just free and is closed again.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
  ::close(fd);
  std::unique_ptr<McpClient> client =
      ClientFor("http://127.0.0.1:" + std::to_string(ntohs(address.sin_port)) + "/mcp");
  const absl::Status status = client->Connect(Within(std::chrono::seconds(5)));
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_THAT(status.message(), HasSubstr("cannot reach"));
}

}  // namespace
}  // namespace omniforge::mcp
