// The session and the tools client against a scripted server: handshake and
// version negotiation, pagination, progress routing, deadlines and
// cancellation, error mapping, server requests, restarts, expired sessions.
#include "libs/mcp/client.h"

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libs/core/call_cancellation.h"
#include "libs/mcp/json_rpc.h"
#include "libs/mcp/session.h"
#include "libs/mcp/testing/scripted_transport.h"
#include "nlohmann/json.hpp"

namespace omniforge::mcp {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing::ScriptedTransport;
using ::testing::SizeIs;

json Result(const json& request, json result) {
  return {{"jsonrpc", "2.0"}, {"id", request["id"]}, {"result", std::move(result)}};
}
json Error(const json& request, int code, const std::string& message) {
  return {
      {"jsonrpc", "2.0"}, {"id", request["id"]}, {"error", {{"code", code}, {"message", message}}}};
}
json TextResult(const std::string& text) {
  return {{"content", json::array({{{"type", "text"}, {"text", text}}})}};
}

CallOptions Within(std::chrono::milliseconds timeout) {
  CallOptions options;
  options.deadline = std::chrono::system_clock::now() + timeout;
  return options;
}

SessionOptions FastOptions() {
  SessionOptions options;
  options.server_name = "scripted";
  options.restart_backoff = std::chrono::milliseconds(1);
  options.restart_backoff_max = std::chrono::milliseconds(2);
  return options;
}

// A client over a scripted server; `transport` stays valid as long as it.
struct Harness {
  explicit Harness(ScriptedTransport::Script script, bool answers_within_send = false,
                   const SessionOptions& options = FastOptions()) {
    auto owned = std::make_unique<ScriptedTransport>(std::move(script), answers_within_send);
    transport = owned.get();
    client = std::make_unique<McpClient>(std::move(owned), options);
  }
  ScriptedTransport* transport;
  std::unique_ptr<McpClient> client;
};

TEST(McpSessionTest, InitializeHandshakeComesFirst) {
  Harness h(ScriptedTransport::Server([](const json& m, ScriptedTransport& t) {
    t.Deliver(Result(m, {{"tools", json::array()}}));
    return absl::OkStatus();
  }));
  ASSERT_TRUE(h.client->ListTools(Within(std::chrono::seconds(5))).ok());
  const std::vector<json> sent = h.transport->sent();
  ASSERT_THAT(sent, SizeIs(3));
  EXPECT_EQ(sent[0]["method"], "initialize");
  EXPECT_EQ(sent[0]["params"]["protocolVersion"], "2025-06-18");
  EXPECT_EQ(sent[0]["params"]["clientInfo"]["name"], "omniforge");
  EXPECT_TRUE(sent[0]["params"]["capabilities"].is_object());
  EXPECT_EQ(sent[1]["method"], "notifications/initialized");
  EXPECT_FALSE(sent[1].contains("id"));
  EXPECT_EQ(sent[2]["method"], "tools/list");
  EXPECT_EQ(h.transport->protocol_version(), "2025-06-18");
  ASSERT_TRUE(h.client->server_info().has_value());
  EXPECT_EQ(h.client->server_info()->name, "scripted");
  EXPECT_TRUE(h.client->server_info()->tools_list_changed);
}

TEST(McpSessionTest, AcceptsAnOlderSupportedVersion) {
  Harness h(ScriptedTransport::Server(
      [](const json&, ScriptedTransport&) { return absl::OkStatus(); }, "2025-03-26"));
  ASSERT_TRUE(h.client->Connect(Within(std::chrono::seconds(5))).ok());
  EXPECT_EQ(h.transport->protocol_version(), "2025-03-26");
}

TEST(McpSessionTest, RejectsAnUnsupportedVersion) {
  Harness h(ScriptedTransport::Server(
      [](const json&, ScriptedTransport&) { return absl::OkStatus(); }, "1999-01-01"));
  const absl::Status status = h.client->Connect(Within(std::chrono::seconds(5)));
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_THAT(status.message(), HasSubstr("1999-01-01"));
  EXPECT_FALSE(h.transport->WaitForSent("notifications/initialized", std::chrono::milliseconds(0)));
}

TEST(McpClientTest, ListToolsFollowsCursors) {
  Harness h(ScriptedTransport::Server([](const json& m, ScriptedTransport& t) {
    const std::string cursor = m["params"].value("cursor", "");
    if (cursor.empty()) {
      t.Deliver(Result(m, {{"tools", json::array({{{"name", "a"},
                                                   {"title", "A tool"},
                                                   {"description", "first"},
                                                   {"inputSchema", {{"type", "object"}}},
                                                   {"annotations", {{"readOnlyHint", true}}}}})},
                           {"nextCursor", "page-2"}}));
    } else if (cursor == "page-2") {
      t.Deliver(
          Result(m, {{"tools", json::array({{{"name", "b"},
                                             {"inputSchema", {{"type", "object"}}},
                                             {"outputSchema", {{"type", "object"}}},
                                             {"annotations", {{"destructiveHint", false}}}}})},
                     {"nextCursor", "page-3"}}));
    } else {
      t.Deliver(Result(m, {{"tools", json::array({{{"name", "c"}}})}}));
    }
    return absl::OkStatus();
  }));
  absl::StatusOr<std::vector<Tool>> tools = h.client->ListTools(Within(std::chrono::seconds(5)));
  ASSERT_TRUE(tools.ok()) << tools.status();
  ASSERT_THAT(*tools, SizeIs(3));
  EXPECT_EQ((*tools)[0].name, "a");
  EXPECT_EQ((*tools)[0].title, "A tool");
  EXPECT_EQ((*tools)[0].annotations.read_only_hint, true);
  EXPECT_EQ((*tools)[0].annotations.destructive_hint, std::nullopt);
  EXPECT_EQ((*tools)[1].annotations.destructive_hint, false);
  EXPECT_EQ((*tools)[1].output_schema_json, R"({"type":"object"})");
  EXPECT_TRUE((*tools)[0].output_schema_json.empty());
  EXPECT_EQ((*tools)[2].input_schema_json, R"({"type":"object"})");
}

TEST(McpClientTest, RepeatedCursorIsDataLoss) {
  Harness h(ScriptedTransport::Server([](const json& m, ScriptedTransport& t) {
    t.Deliver(Result(m, {{"tools", json::array()}, {"nextCursor", "again"}}));
    return absl::OkStatus();
  }));
  EXPECT_EQ(h.client->ListTools(Within(std::chrono::seconds(5))).status().code(),
            absl::StatusCode::kDataLoss);
}

TEST(McpClientTest, CallToolDecodesEveryKindOfContent) {
  Harness h(ScriptedTransport::Server([](const json& m, ScriptedTransport& t) {
    EXPECT_EQ(m["params"]["name"], "weather");
    EXPECT_EQ(m["params"]["arguments"]["city"], "Oslo");
    t.Deliver(Result(
        m, {{"content",
             json::array({{{"type", "text"}, {"text", "cold"}},
                          {{"type", "image"}, {"data", "aGVsbG8="}, {"mimeType", "image/png"}},
                          {{"type", "audio"}, {"data", "aGk="}, {"mimeType", "audio/wav"}},
                          {{"type", "resource_link"},
                           {"uri", "file:///a.txt"},
                           {"name", "a.txt"},
                           {"description", "notes"}},
                          {{"type", "resource"},
                           {"resource",
                            {{"uri", "mem://x"}, {"mimeType", "text/plain"}, {"text", "inline"}}}},
                          {{"type", "hologram"}}})},
            {"structuredContent", {{"celsius", -3}}}}));
    return absl::OkStatus();
  }));
  absl::StatusOr<CallToolResult> result =
      h.client->CallTool("weather", R"({"city":"Oslo"})", Within(std::chrono::seconds(5)));
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_THAT(result->content, SizeIs(6));
  EXPECT_EQ(result->content[0].text, "cold");
  EXPECT_EQ(result->content[1].type, ContentBlock::Type::kImage);
  EXPECT_EQ(result->content[1].data_bytes, 5u);
  EXPECT_EQ(result->content[2].type, ContentBlock::Type::kAudio);
  EXPECT_EQ(result->content[2].data_bytes, 2u);
  EXPECT_EQ(result->content[3].type, ContentBlock::Type::kResourceLink);
  EXPECT_EQ(result->content[3].uri, "file:///a.txt");
  EXPECT_EQ(result->content[4].type, ContentBlock::Type::kEmbeddedResource);
  EXPECT_EQ(result->content[4].text, "inline");
  EXPECT_EQ(result->content[5].type, ContentBlock::Type::kUnknown);
  EXPECT_EQ(result->structured_content_json, R"({"celsius":-3})");
  EXPECT_FALSE(result->is_error);
  const std::string rendered = RenderForModel(*result);
  EXPECT_THAT(rendered, HasSubstr("cold"));
  EXPECT_THAT(rendered, HasSubstr("[image image/png, 5 bytes]"));
  EXPECT_THAT(rendered, HasSubstr("[resource link a.txt <file:///a.txt>: notes]"));
  EXPECT_THAT(rendered, HasSubstr("[hologram content]"));
}

TEST(McpClientTest, IsErrorResultIsNotAnRpcFailure) {
  Harness h(ScriptedTransport::Server([](const json& m, ScriptedTransport& t) {
    json result = TextResult("API rate limit exceeded");
    result["isError"] = true;
    t.Deliver(Result(m, result));
    return absl::OkStatus();
  }));
  absl::StatusOr<CallToolResult> result =
      h.client->CallTool("x", "{}", Within(std::chrono::seconds(5)));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->is_error);
  EXPECT_EQ(RenderForModel(*result), "API rate limit exceeded");
}

TEST(McpClientTest, JsonRpcErrorsMapToStatusCodes) {
  const std::vector<std::pair<int, absl::StatusCode>> cases = {
      {kInvalidParams, absl::StatusCode::kInvalidArgument},
      {kMethodNotFound, absl::StatusCode::kUnimplemented},
      {kInternalError, absl::StatusCode::kInternal},
      {kResourceNotFound, absl::StatusCode::kNotFound},
      {-32000, absl::StatusCode::kUnknown}};
  for (const auto& [code, expected] : cases) {
    Harness h(ScriptedTransport::Server([code = code](const json& m, ScriptedTransport& t) {
      t.Deliver(Error(m, code, "Unknown tool: nope"));
      return absl::OkStatus();
    }));
    const absl::Status status =
        h.client->CallTool("nope", "{}", Within(std::chrono::seconds(5))).status();
    EXPECT_EQ(status.code(), expected) << code << ": " << status;
    EXPECT_THAT(status.message(), HasSubstr("Unknown tool: nope"));
    EXPECT_THAT(status.message(), HasSubstr("scripted"));
  }
}

TEST(McpClientTest, BadArgumentsAreRejectedBeforeSending) {
  Harness h(
      ScriptedTransport::Server([](const json&, ScriptedTransport&) { return absl::OkStatus(); }));
  for (const char* arguments : {"[1,2]", "not json", "\"text\""}) {
    EXPECT_EQ(h.client->CallTool("x", arguments, Within(std::chrono::seconds(1))).status().code(),
              absl::StatusCode::kInvalidArgument)
        << arguments;
  }
  EXPECT_TRUE(h.transport->sent().empty());
}

TEST(McpClientTest, ProgressIsRoutedToItsOwnCall) {
  // Answers asynchronously, like a stdio reader thread: progress for every
  // call (and one stray token), then each result.
  std::vector<std::thread> threads;
  std::mutex threads_mu;
  Harness h(ScriptedTransport::Server([&](const json& m, ScriptedTransport& t) {
    std::lock_guard lock(threads_mu);
    threads.emplace_back([m, &t] {
      const json token = m["params"]["_meta"]["progressToken"];
      const std::string tag = m["params"]["arguments"]["tag"];
      t.Deliver({{"jsonrpc", "2.0"},
                 {"method", "notifications/progress"},
                 {"params", {{"progressToken", 999999}, {"progress", 1}}}});
      for (int step = 1; step <= 3; ++step) {
        t.Deliver(
            {{"jsonrpc", "2.0"},
             {"method", "notifications/progress"},
             {"params",
              {{"progressToken", token}, {"progress", step}, {"total", 3}, {"message", tag}}}});
      }
      t.Deliver(Result(m, TextResult(tag)));
    });
    return absl::OkStatus();
  }));
  const auto call = [&h](const std::string& tag, std::vector<Progress>* reports) {
    CallOptions options = Within(std::chrono::seconds(5));
    options.on_progress = [reports](const Progress& p) { reports->push_back(p); };
    return h.client->CallTool("work", json{{"tag", tag}}.dump(), options);
  };
  std::vector<Progress> first, second;
  auto a = std::async(std::launch::async, call, "first", &first);
  auto b = std::async(std::launch::async, call, "second", &second);
  ASSERT_TRUE(a.get().ok());
  ASSERT_TRUE(b.get().ok());
  for (std::thread& thread : threads) thread.join();
  for (const auto* reports : {&first, &second}) {
    ASSERT_THAT(*reports, SizeIs(3));
    EXPECT_EQ((*reports)[2].progress, 3);
    EXPECT_EQ((*reports)[2].total, 3);
  }
  EXPECT_EQ(first[0].message, "first");
  EXPECT_EQ(second[0].message, "second");
}

TEST(McpClientTest, NoProgressTokenWithoutACallback) {
  Harness h(ScriptedTransport::Server([](const json& m, ScriptedTransport& t) {
    EXPECT_FALSE(m["params"].contains("_meta"));
    t.Deliver(Result(m, TextResult("ok")));
    return absl::OkStatus();
  }));
  ASSERT_TRUE(h.client->CallTool("x", "{}", Within(std::chrono::seconds(5))).ok());
}

TEST(McpClientTest, DeadlineSendsCancellationAndTheSessionGoesOn) {
  std::atomic<int> calls{0};
  json late;
  Harness h(ScriptedTransport::Server([&](const json& m, ScriptedTransport& t) {
    if (calls++ == 0) {
      late = m;  // never answered in time
      return absl::OkStatus();
    }
    t.Deliver(Result(m, TextResult("second")));
    return absl::OkStatus();
  }));
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<CallToolResult> result =
      h.client->CallTool("slow", "{}", Within(std::chrono::milliseconds(100)));
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded) << result.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  std::optional<json> cancel = h.transport->WaitForSent("notifications/cancelled");
  ASSERT_TRUE(cancel.has_value());
  EXPECT_EQ((*cancel)["params"]["requestId"], late["id"]);
  EXPECT_FALSE((*cancel)["params"]["reason"].get<std::string>().empty());
  // The answer arriving after the cancellation is dropped.
  h.transport->Deliver(Result(late, TextResult("too late")));
  absl::StatusOr<CallToolResult> next =
      h.client->CallTool("fast", "{}", Within(std::chrono::seconds(5)));
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->content[0].text, "second");
  EXPECT_EQ(h.transport->opens(), 1);
}

// The call serves work that is cancelled (the executor's gRPC call whose
// client gave up): it ends at once, CANCELLED, and the server is told.
TEST(McpClientTest, ACancelOfTheCallersWorkEndsTheCallAndTellsTheServer) {
  std::atomic<int> calls{0};
  json unanswered;
  Harness h(ScriptedTransport::Server([&](const json& m, ScriptedTransport& t) {
    if (calls++ == 0) {
      unanswered = m;  // a long operation
      return absl::OkStatus();
    }
    t.Deliver(Result(m, TextResult("next")));
    return absl::OkStatus();
  }));
  core::CancelSignal work;
  absl::StatusOr<CallToolResult> result = absl::UnknownError("not run");
  const auto start = std::chrono::steady_clock::now();
  std::thread caller([&] {
    const core::ScopedCallCancellation scope(&work);
    result = h.client->CallTool("slow", "{}", Within(std::chrono::seconds(30)));
  });
  while (calls.load() == 0 && std::chrono::steady_clock::now() - start < std::chrono::seconds(5)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  work.Cancel();
  caller.join();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled) << result.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  std::optional<json> cancel = h.transport->WaitForSent("notifications/cancelled");
  ASSERT_TRUE(cancel.has_value());
  EXPECT_EQ((*cancel)["params"]["requestId"], unanswered["id"]);
  EXPECT_EQ((*cancel)["params"]["reason"], "cancelled by the caller");
  // A call made for work already cancelled is not sent; work that is not
  // cancelled goes on in the same session.
  {
    const core::ScopedCallCancellation scope(&work);
    EXPECT_EQ(h.client->CallTool("fast", "{}", Within(std::chrono::seconds(5))).status().code(),
              absl::StatusCode::kCancelled);
  }
  absl::StatusOr<CallToolResult> next =
      h.client->CallTool("fast", "{}", Within(std::chrono::seconds(5)));
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->content[0].text, "next");
}

TEST(McpClientTest, ServerTimeoutCapsTheCallersDeadline) {
  SessionOptions options = FastOptions();
  options.request_timeout = std::chrono::milliseconds(50);
  Harness h(
      ScriptedTransport::Server([](const json&, ScriptedTransport&) { return absl::OkStatus(); }),
      false, options);
  EXPECT_EQ(h.client->CallTool("slow", "{}", Within(std::chrono::seconds(30))).status().code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST(McpSessionTest, AnswersPingAndRefusesUnsupportedServerRequests) {
  Harness h(ScriptedTransport::Server([](const json& m, ScriptedTransport& t) {
    t.Deliver({{"jsonrpc", "2.0"}, {"id", "srv-1"}, {"method", "ping"}});
    t.Deliver({{"jsonrpc", "2.0"},
               {"id", 7},
               {"method", "sampling/createMessage"},
               {"params", json::object()}});
    t.Deliver(Result(m, TextResult("ok")));
    return absl::OkStatus();
  }));
  ASSERT_TRUE(h.client->CallTool("x", "{}", Within(std::chrono::seconds(5))).ok());
  // The answers go out from the session's own thread.
  const std::optional<json> pong = h.transport->WaitForMessage(
      [](const json& m) { return m.contains("result") && m["id"] == "srv-1"; });
  const std::optional<json> refusal = h.transport->WaitForMessage(
      [](const json& m) { return m.contains("error") && m["id"] == 7; });
  ASSERT_TRUE(pong.has_value());
  EXPECT_EQ((*pong)["result"], json::object());
  ASSERT_TRUE(refusal.has_value());
  EXPECT_EQ((*refusal)["error"]["code"], kMethodNotFound);
}

TEST(McpSessionTest, DroppedConnectionFailsPendingCallsAndTheNextCallReconnects) {
  std::atomic<bool> drop{true};
  Harness h(ScriptedTransport::Server([&](const json& m, ScriptedTransport& t) {
    if (drop.exchange(false)) {
      std::thread([&t] { t.Drop("the server process was killed by signal 9"); }).detach();
      return absl::OkStatus();
    }
    t.Deliver(Result(m, TextResult("back")));
    return absl::OkStatus();
  }));
  absl::StatusOr<CallToolResult> failed =
      h.client->CallTool("x", "{}", Within(std::chrono::seconds(5)));
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(failed.status().message(), HasSubstr("killed by signal 9"));
  absl::StatusOr<CallToolResult> next =
      h.client->CallTool("x", "{}", Within(std::chrono::seconds(5)));
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(h.transport->opens(), 2);
  EXPECT_EQ(h.transport->initializes(), 2);
  EXPECT_EQ(h.client->restarts(), 1);
}

TEST(McpSessionTest, GivesUpAfterMaxRestartsInARow) {
  SessionOptions options = FastOptions();
  options.max_restarts = 2;
  options.restart_backoff_max = std::chrono::minutes(10);
  Harness h(ScriptedTransport::Server([](const json&, ScriptedTransport& t) {
              std::thread([&t] { t.Drop("crashed"); }).detach();
              return absl::OkStatus();
            }),
            false, options);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(h.client->CallTool("x", "{}", Within(std::chrono::seconds(5))).status().code(),
              absl::StatusCode::kUnavailable);
  }
  const absl::Status given_up =
      h.client->CallTool("x", "{}", Within(std::chrono::seconds(5))).status();
  EXPECT_EQ(given_up.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(given_up.message(), HasSubstr("gave up after 2 restarts"));
  EXPECT_EQ(h.transport->opens(), 3);
}

TEST(McpSessionTest, TriesAgainAfterTheCoolDown) {
  SessionOptions options = FastOptions();
  options.max_restarts = 1;
  options.restart_backoff_max = std::chrono::milliseconds(50);
  std::atomic<int> crashes{2};
  Harness h(ScriptedTransport::Server([&](const json& m, ScriptedTransport& t) {
              if (crashes-- > 0) {
                std::thread([&t] { t.Drop("crashed"); }).detach();
                return absl::OkStatus();
              }
              t.Deliver(Result(m, TextResult("healthy again")));
              return absl::OkStatus();
            }),
            false, options);
  EXPECT_EQ(h.client->CallTool("x", "{}", Within(std::chrono::seconds(5))).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(h.client->CallTool("x", "{}", Within(std::chrono::seconds(5))).status().code(),
            absl::StatusCode::kUnavailable);
  // Given up now; a call that can wait out the cool-down gets one more restart.
  absl::StatusOr<CallToolResult> result =
      h.client->CallTool("x", "{}", Within(std::chrono::seconds(5)));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->content[0].text, "healthy again");
  EXPECT_EQ(h.transport->opens(), 3);
}

TEST(McpSessionTest, ServerThatCannotStartIsUnavailable) {
  Harness h(
      ScriptedTransport::Server([](const json&, ScriptedTransport&) { return absl::OkStatus(); }));
  h.transport->FailOpens(absl::UnavailableError("'mcp-nothing' is not on PATH"));
  const absl::Status status = h.client->Connect(Within(std::chrono::seconds(1)));
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("not on PATH"));
}

TEST(McpSessionTest, ExpiredHttpSessionIsReinitializedOnce) {
  std::atomic<int> calls{0};
  Harness h(ScriptedTransport::Server([&](const json& m, ScriptedTransport& t) -> absl::Status {
              if (calls++ == 0) return SessionExpiredError("404");
              t.Deliver(Result(m, TextResult("fresh session")));
              return absl::OkStatus();
            }),
            /*answers_within_send=*/true);
  absl::StatusOr<CallToolResult> result =
      h.client->CallTool("x", "{}", Within(std::chrono::seconds(5)));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->content[0].text, "fresh session");
  EXPECT_EQ(h.transport->initializes(), 2);
  EXPECT_EQ(h.client->restarts(), 0);
}

TEST(McpSessionTest, SessionExpiringTwiceIsUnavailable) {
  Harness h(ScriptedTransport::Server([](const json&, ScriptedTransport&) -> absl::Status {
              return SessionExpiredError("404");
            }),
            true);
  EXPECT_EQ(h.client->CallTool("x", "{}", Within(std::chrono::seconds(5))).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(h.transport->initializes(), 2);
}

TEST(McpSessionTest, StreamEndingWithoutAnAnswerIsUnavailable) {
  Harness h(
      ScriptedTransport::Server([](const json&, ScriptedTransport&) { return absl::OkStatus(); }),
      true);
  const absl::Status status =
      h.client->CallTool("x", "{}", Within(std::chrono::seconds(5))).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("without a result"));
}

TEST(McpSessionTest, ShutdownFailsPendingCalls) {
  Harness h(
      ScriptedTransport::Server([](const json&, ScriptedTransport&) { return absl::OkStatus(); }));
  ASSERT_TRUE(h.client->Connect(Within(std::chrono::seconds(5))).ok());
  auto pending = std::async(std::launch::async, [&h] {
    return h.client->CallTool("x", "{}", Within(std::chrono::seconds(30)));
  });
  ASSERT_TRUE(h.transport->WaitForSent("tools/call").has_value());
  h.client->Shutdown();
  EXPECT_EQ(pending.get().status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(h.client->CallTool("x", "{}", Within(std::chrono::seconds(1))).status().code(),
            absl::StatusCode::kUnavailable);
}

TEST(McpSessionTest, ToolListChangedReachesTheListener) {
  std::promise<void> changed;
  Harness h(ScriptedTransport::Server([](const json& m, ScriptedTransport& t) {
    t.Deliver({{"jsonrpc", "2.0"}, {"method", "notifications/tools/list_changed"}});
    t.Deliver(Result(m, TextResult("ok")));
    return absl::OkStatus();
  }));
  h.client->SetToolsChangedListener([&changed] { changed.set_value(); });
  ASSERT_TRUE(h.client->CallTool("x", "{}", Within(std::chrono::seconds(5))).ok());
  EXPECT_EQ(changed.get_future().wait_for(std::chrono::seconds(5)), std::future_status::ready);
}

TEST(JsonRpcTest, ParsesBatchesAndRejectsNonMessages) {
  absl::StatusOr<std::vector<IncomingMessage>> batch = ParseIncoming(
      R"([{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"notifications/progress","params":{}},42])");
  ASSERT_TRUE(batch.ok());
  ASSERT_THAT(*batch, SizeIs(2));
  EXPECT_EQ((*batch)[0].kind, IncomingMessage::Kind::kResult);
  EXPECT_EQ((*batch)[1].kind, IncomingMessage::Kind::kNotification);
  EXPECT_FALSE(ParseIncoming("{not json").ok());
  // A result nested past the limit is refused before it is parsed: the
  // executor serializes and stores results, walking them recursively.
  const std::string deep = R"({"jsonrpc":"2.0","id":1,"result":{"structuredContent":)" +
                           std::string(20000, '[') + std::string(20000, ']') + "}}";
  const absl::StatusOr<std::vector<IncomingMessage>> too_deep = ParseIncoming(deep);
  ASSERT_FALSE(too_deep.ok());
  EXPECT_THAT(std::string(too_deep.status().message()), HasSubstr("nested more than 64 levels"));
  EXPECT_FALSE(ParseIncoming(R"({"jsonrpc":"2.0"})").ok());
  absl::StatusOr<std::vector<IncomingMessage>> error = ParseIncoming(
      R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}})");
  ASSERT_TRUE(error.ok());
  EXPECT_EQ((*error)[0].kind, IncomingMessage::Kind::kError);
  EXPECT_EQ((*error)[0].error_code, kParseError);
}

}  // namespace
}  // namespace omniforge::mcp
