// CurlTransport against a throwaway cpp-httplib server on 127.0.0.1:0: a
// sanity check of the real socket path (streaming, keep-alive, error
// mapping). The full provider-against-fake-server tests live elsewhere.
#include "libs/llm/curl_transport.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "libs/core/clock.h"
#include "libs/llm/errors.h"

namespace omniforge::llm {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::Pair;

// Serves `routes` on an ephemeral loopback port until destroyed.
class TestServer final {
 public:
  explicit TestServer(const std::function<void(httplib::Server&)>& routes) {
    routes(server_);
    server_.set_tcp_nodelay(true);  // else Nagle delays the second write of an answer
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] {
      server_.listen_after_bind();
      stopped_ = true;
    });
  }

  ~TestServer() {
    // stop() is a no-op until the accept loop runs; it runs soon after bind.
    while (!server_.is_running() && !stopped_) std::this_thread::yield();
    server_.stop();
    thread_.join();
  }

  std::string Url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::atomic<bool> stopped_ = false;
  std::thread thread_;
};

struct Received {
  absl::Status status;
  HttpResponseHead head;
  int heads = 0;
  std::vector<std::string> pieces;

  std::string Body() const {
    std::string body;
    for (const std::string& piece : pieces) body += piece;
    return body;
  }
};

Received Post(CurlTransport& transport, const HttpRequest& request,
              const std::function<bool(std::string_view)>& on_body = nullptr) {
  Received received;
  received.status = transport.Post(
      request,
      [&](const HttpResponseHead& head) {
        received.head = head;
        ++received.heads;
      },
      [&](std::string_view piece) {
        EXPECT_EQ(received.heads, 1) << "body before head";
        received.pieces.emplace_back(piece);
        return on_body ? on_body(piece) : true;
      });
  return received;
}

const std::vector<std::string> kEvents = {"data: {\"n\":1}\n\n", "data: {\"n\":2}\n\n",
                                          "data: [DONE]\n\n"};

TEST(CurlTransportTest, StreamsChunkedSseAndReusesTheConnection) {
  std::mutex mu;
  std::vector<int> client_ports;
  std::vector<std::string> bodies;
  std::vector<std::string> operations;
  TestServer server([&](httplib::Server& s) {
    s.Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
      {
        std::lock_guard<std::mutex> lock(mu);
        client_ports.push_back(req.remote_port);
        bodies.push_back(req.body);
        operations.push_back(req.get_header_value("x-omniforge-operation"));
      }
      res.set_chunked_content_provider("text/event-stream", [](size_t, httplib::DataSink& sink) {
        for (const std::string& event : kEvents) {
          sink.write(event.data(), event.size());
        }
        sink.done();
        return true;
      });
    });
  });

  CurlTransport transport;
  HttpRequest request;
  request.url = server.Url("/v1/chat/completions");
  request.headers = {{"content-type", "application/json"},
                     {"x-omniforge-operation", "planner_stream"}};
  request.body = R"({"stream":true})";
  request.deadline_micros = core::NowMicros() + 10'000'000;
  for (int call = 0; call < 2; ++call) {
    Received received = Post(transport, request);
    ASSERT_TRUE(received.status.ok()) << received.status;
    EXPECT_EQ(received.head.status, 200);
    EXPECT_THAT(received.head.headers, Contains(Pair("content-type", "text/event-stream")));
    EXPECT_EQ(received.Body(), kEvents[0] + kEvents[1] + kEvents[2]);
  }
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(client_ports.size(), 2u);
  EXPECT_EQ(client_ports[0], client_ports[1]) << "the second call opened a new connection";
  EXPECT_THAT(bodies, ElementsAre(request.body, request.body));
  EXPECT_THAT(operations, ElementsAre("planner_stream", "planner_stream"));
}

TEST(CurlTransportTest, ErrorStatusIsDeliveredNotFailed) {
  TestServer server([](httplib::Server& s) {
    s.Post("/x", [](const httplib::Request&, httplib::Response& res) {
      res.status = 429;
      res.set_header("Retry-After", "2");
      res.set_content(R"({"error":{"message":"slow down"}})", "application/json");
    });
  });
  CurlTransport transport;
  Received received = Post(transport, {.url = server.Url("/x"), .body = "{}"});
  ASSERT_TRUE(received.status.ok()) << received.status;
  EXPECT_EQ(received.head.status, 429);
  EXPECT_THAT(received.head.headers, Contains(Pair("retry-after", "2")));
  EXPECT_EQ(received.Body(), R"({"error":{"message":"slow down"}})");
}

TEST(CurlTransportTest, EmptyBodyStillDeliversTheHead) {
  TestServer server([](httplib::Server& s) {
    s.Post("/x", [](const httplib::Request&, httplib::Response& res) { res.status = 503; });
  });
  CurlTransport transport;
  Received received = Post(transport, {.url = server.Url("/x")});
  ASSERT_TRUE(received.status.ok()) << received.status;
  EXPECT_EQ(received.heads, 1);
  EXPECT_EQ(received.head.status, 503);
}

TEST(CurlTransportTest, ReceiverAbortIsCancelled) {
  TestServer server([](httplib::Server& s) {
    s.Post("/x", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(std::string(1 << 20, 'x'), "text/plain");
    });
  });
  CurlTransport transport;
  Received received =
      Post(transport, {.url = server.Url("/x")}, [](std::string_view) { return false; });
  EXPECT_EQ(ErrorKindOf(received.status), LlmErrorKind::kCancelled);
  EXPECT_EQ(received.pieces.size(), 1u);
}

TEST(CurlTransportTest, CutChunkedBodyIsAConnectionError) {
  TestServer server([](httplib::Server& s) {
    s.Post("/x", [](const httplib::Request&, httplib::Response& res) {
      res.set_chunked_content_provider("text/event-stream", [](size_t, httplib::DataSink& sink) {
        sink.write(kEvents[0].data(), kEvents[0].size());
        return false;  // httplib closes the connection without the last chunk
      });
    });
  });
  CurlTransport transport;
  Received received = Post(transport, {.url = server.Url("/x")});
  EXPECT_EQ(ErrorKindOf(received.status), LlmErrorKind::kConnection) << received.status;
}

TEST(CurlTransportTest, DeadlineEndsAStalledExchange) {
  std::mutex mu;
  std::condition_variable cv;
  bool released = false;
  TestServer server([&](httplib::Server& s) {
    s.Post("/quick", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("ok", "text/plain");
    });
    s.Post("/x", [&](const httplib::Request&, httplib::Response& res) {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return released; });
      res.set_content("late", "text/plain");
    });
  });
  CurlTransport transport;
  // Stall on a kept-alive connection: no connect phase to blame.
  ASSERT_TRUE(Post(transport, {.url = server.Url("/quick")}).status.ok());
  const int64_t start = core::NowMicros();
  Received received =
      Post(transport, {.url = server.Url("/x"), .deadline_micros = start + 200'000});
  EXPECT_EQ(ErrorKindOf(received.status), LlmErrorKind::kTimeout) << received.status;
  EXPECT_GE(core::NowMicros() - start, 190'000);
  {
    std::lock_guard<std::mutex> lock(mu);
    released = true;
  }
  cv.notify_all();
}

TEST(CurlTransportTest, CancellationEndsAnExchangeStillWaitingForItsAnswer) {
  std::mutex mu;
  std::condition_variable cv;
  bool released = false;
  TestServer server([&](httplib::Server& s) {
    s.Post("/x", [&](const httplib::Request&, httplib::Response& res) {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return released; });
      res.set_content("late", "text/plain");
    });
  });
  CurlTransport transport;
  const int64_t start = core::NowMicros();
  // Cancelled 100 ms in, while the server has not answered at all.
  Received received =
      Post(transport, {.url = server.Url("/x"),
                       .deadline_micros = start + 30'000'000,
                       .cancelled = [start] { return core::NowMicros() - start > 100'000; }});
  EXPECT_EQ(ErrorKindOf(received.status), LlmErrorKind::kCancelled) << received.status;
  EXPECT_LT(core::NowMicros() - start, 5'000'000);
  EXPECT_EQ(received.heads, 0);
  {
    std::lock_guard<std::mutex> lock(mu);
    released = true;
  }
  cv.notify_all();
}

TEST(CurlTransportTest, PassedDeadlineFailsWithoutSending) {
  CurlTransport transport;
  Received received =
      Post(transport, {.url = "http://127.0.0.1:9/x", .deadline_micros = core::NowMicros() - 1});
  EXPECT_EQ(ErrorKindOf(received.status), LlmErrorKind::kTimeout);
  EXPECT_EQ(received.heads, 0);
}

TEST(CurlTransportTest, RefusedConnectionIsAConnectionError) {
  // A port that was just free: bind, read it back, close.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  socklen_t length = sizeof(address);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
  close(fd);

  CurlTransport transport;
  Received received =
      Post(transport, {.url = "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port)) + "/x",
                       .deadline_micros = core::NowMicros() + 5'000'000});
  EXPECT_EQ(ErrorKindOf(received.status), LlmErrorKind::kConnection) << received.status;
  EXPECT_EQ(received.heads, 0);
}

TEST(CurlTransportTest, ConnectTimeoutIsAConnectionError) {
  // A listener whose accept queue is full drops further SYNs: the connect
  // hangs, as to an unreachable host.
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(listener, 0), 0);
  socklen_t length = sizeof(address);
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length), 0);
  std::vector<int> fillers;
  for (int i = 0; i < 2; ++i) {
    int filler = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    // Non-blocking: connected or EINPROGRESS, either way in the backlog.
    (void)connect(filler, reinterpret_cast<sockaddr*>(&address), sizeof(address));
    fillers.push_back(filler);
  }

  CurlTransport transport;
  const int64_t start = core::NowMicros();
  Received received =
      Post(transport, {.url = "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port)) + "/x",
                       .deadline_micros = start + 10'000'000,
                       .connect_timeout_micros = 100'000});
  EXPECT_EQ(ErrorKindOf(received.status), LlmErrorKind::kConnection) << received.status;
  EXPECT_LT(core::NowMicros() - start, 5'000'000);
  for (int filler : fillers) close(filler);
  close(listener);
}

TEST(CurlTransportTest, HeaderWithLineBreakIsRejected) {
  CurlTransport transport;
  Received received = Post(transport, {.url = "http://127.0.0.1:9/x",
                                       .headers = {{"x-omniforge-operation", "a\r\nx-evil: 1"}}});
  EXPECT_EQ(ErrorKindOf(received.status), LlmErrorKind::kInvalidRequest);
}

}  // namespace
}  // namespace omniforge::llm
