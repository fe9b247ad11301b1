#include "libs/llm/testing/fake_provider.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_join.h"

namespace omniforge::llm::testing {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kOpenAiPath[] = "/v1/chat/completions";
constexpr char kAnthropicPath[] = "/v1/messages";

// What a client saw of one exchange; `error` is not Success when the
// transfer broke off.
struct Exchange {
  httplib::Error error = httplib::Error::Unknown;
  int status = 0;
  std::string content_type;
  std::string retry_after;
  std::string body;
};

Exchange PostRaw(int port, const std::string& path, const std::string& body,
                 httplib::Headers headers = {}, int read_timeout_ms = 10'000) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(std::chrono::milliseconds(read_timeout_ms));
  httplib::Request request;
  request.method = "POST";
  request.path = path;
  request.headers = std::move(headers);
  request.set_header("Content-Type", "application/json");
  request.body = body;
  Exchange out;
  request.response_handler = [&out](const httplib::Response& response) {
    out.status = response.status;
    out.content_type = response.get_header_value("Content-Type");
    out.retry_after = response.get_header_value("retry-after");
    return true;
  };
  request.content_receiver = [&out](const char* data, size_t size, uint64_t, uint64_t) {
    out.body.append(data, size);
    return true;
  };
  out.error = client.send(request).error();
  return out;
}

// The HTTP chunks of a streamed answer to `body`, as framed on the wire:
// a raw HTTP/1.1 exchange on its own connection.
std::vector<std::string> StreamChunks(int port, const std::string& body) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return {};
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
    const std::string request =
        "POST /v1/chat/completions HTTP/1.1\r\nHost: fake\r\nConnection: close\r\n"
        "Content-Type: application/json\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body;
    if (send(fd, request.data(), request.size(), 0) == static_cast<ssize_t>(request.size())) {
      char buffer[4096];
      for (ssize_t n; (n = recv(fd, buffer, sizeof(buffer), 0)) > 0;) response.append(buffer, n);
    }
  }
  close(fd);
  std::vector<std::string> chunks;
  size_t at = response.find("\r\n\r\n");
  if (at == std::string::npos) return chunks;
  at += 4;
  for (;;) {
    const size_t line_end = response.find("\r\n", at);
    if (line_end == std::string::npos) break;
    const size_t size = std::stoul(response.substr(at, line_end - at), nullptr, 16);
    if (size == 0) break;
    chunks.push_back(response.substr(line_end + 2, size));
    at = line_end + 2 + size + 2;
  }
  return chunks;
}

httplib::Headers AnthropicHeaders() { return {{"anthropic-version", "2023-06-01"}}; }

json UserTurn(const std::string& text) {
  return json::array({{{"role", "user"}, {"content", text}}});
}

json OpenAiRequest(const std::string& text, bool stream = false, bool include_usage = false) {
  json body = {{"model", "gpt-test"}, {"messages", UserTurn(text)}};
  if (stream) body["stream"] = true;
  if (include_usage) body["stream_options"] = {{"include_usage", true}};
  return body;
}

json AnthropicRequest(const std::string& text, bool stream = false) {
  json body = {{"model", "claude-test"}, {"max_tokens", 100}, {"messages", UserTurn(text)}};
  if (stream) body["stream"] = true;
  return body;
}

struct SseEvent {
  std::string name;  // empty for OpenAI's unnamed events
  std::string data;
};

std::vector<SseEvent> ParseSse(const std::string& body) {
  std::vector<SseEvent> events;
  size_t start = 0;
  while (start < body.size()) {
    size_t end = body.find("\n\n", start);
    if (end == std::string::npos) end = body.size();
    SseEvent event;
    const std::string block = body.substr(start, end - start);
    size_t line_start = 0;
    while (line_start < block.size()) {
      size_t line_end = block.find('\n', line_start);
      if (line_end == std::string::npos) line_end = block.size();
      const std::string line = block.substr(line_start, line_end - line_start);
      if (line.starts_with("event: ")) event.name = line.substr(7);
      if (line.starts_with("data: ")) event.data = line.substr(6);
      line_start = line_end + 1;
    }
    events.push_back(std::move(event));
    start = end + 2;
  }
  return events;
}

std::vector<json> OpenAiChunks(const std::vector<SseEvent>& events) {
  std::vector<json> chunks;
  for (const SseEvent& event : events) {
    if (event.data != "[DONE]") chunks.push_back(json::parse(event.data));
  }
  return chunks;
}

// Arguments with nested objects, unicode and escaped quotes, as a model
// might write them.
constexpr char kWeatherArgs[] =
    R"({"city":"Zürich \"Altstadt\"","when":{"day":"2024-05-01","hours":[9,12]},"note":"日本"})";
constexpr char kTimeArgs[] = R"({"tz":"Europe/Zurich","fmt":{"h24":true}})";

FakeRule TwoToolCallsRule() {
  FakeRule rule;
  rule.reply.tool_calls = {{"call_weather", "get_weather", kWeatherArgs},
                           {"call_time", "get_time", kTimeArgs}};
  rule.reply.usage = FakeUsage{120, 30, 100};
  return rule;
}

std::unique_ptr<FakeLlmServer> StartFake(std::vector<FakeRule> rules = {},
                                         FakeOptions options = {}) {
  auto server = FakeLlmServer::Start(std::move(rules), std::move(options));
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

FakeRule TextRule(const std::string& text) {
  FakeRule rule;
  rule.reply.text = text;
  return rule;
}

// --- OpenAI shapes ------------------------------------------------------

TEST(FakeOpenAiTest, NonStreamedTextIsAFullChatCompletion) {
  FakeRule rule = TextRule("Hello there");
  rule.reply.usage = FakeUsage{12, 3, 2};
  auto fake = StartFake({rule});
  const Exchange ex = PostRaw(fake->port(), kOpenAiPath, OpenAiRequest("hi").dump());
  ASSERT_EQ(ex.status, 200);
  EXPECT_THAT(ex.content_type, StartsWith("application/json"));
  const json body = json::parse(ex.body);
  EXPECT_THAT(body["id"].get<std::string>(), StartsWith("chatcmpl-"));
  EXPECT_EQ(body["object"], "chat.completion");
  EXPECT_GT(body["created"].get<int64_t>(), 1'600'000'000);
  EXPECT_EQ(body["model"], "gpt-test");
  EXPECT_TRUE(body["system_fingerprint"].is_string());
  ASSERT_EQ(body["choices"].size(), 1u);
  const json& choice = body["choices"][0];
  EXPECT_EQ(choice["index"], 0);
  EXPECT_EQ(choice["message"]["role"], "assistant");
  EXPECT_EQ(choice["message"]["content"], "Hello there");
  EXPECT_TRUE(choice["message"]["refusal"].is_null());
  EXPECT_FALSE(choice["message"].contains("tool_calls"));
  EXPECT_TRUE(choice["logprobs"].is_null());
  EXPECT_EQ(choice["finish_reason"], "stop");
  const json& usage = body["usage"];
  EXPECT_EQ(usage["prompt_tokens"], 12);
  EXPECT_EQ(usage["completion_tokens"], 3);
  EXPECT_EQ(usage["total_tokens"], 15);
  EXPECT_EQ(usage["prompt_tokens_details"]["cached_tokens"], 2);
  EXPECT_EQ(usage["completion_tokens_details"]["reasoning_tokens"], 0);
}

TEST(FakeOpenAiTest, NonStreamedToolCallsHaveNullContent) {
  auto fake = StartFake({TwoToolCallsRule()});
  const Exchange ex = PostRaw(fake->port(), kOpenAiPath, OpenAiRequest("weather?").dump());
  ASSERT_EQ(ex.status, 200);
  const json message = json::parse(ex.body)["choices"][0]["message"];
  EXPECT_TRUE(message["content"].is_null());
  ASSERT_EQ(message["tool_calls"].size(), 2u);
  EXPECT_EQ(message["tool_calls"][0]["id"], "call_weather");
  EXPECT_EQ(message["tool_calls"][0]["type"], "function");
  EXPECT_EQ(message["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(message["tool_calls"][0]["function"]["arguments"], kWeatherArgs);
  EXPECT_EQ(message["tool_calls"][1]["function"]["arguments"], kTimeArgs);
  EXPECT_EQ(json::parse(ex.body)["choices"][0]["finish_reason"], "tool_calls");
}

TEST(FakeOpenAiTest, StreamedTextComesInPiecesThenFinishUsageAndDone) {
  FakeRule rule = TextRule("Hello, world!");
  rule.reply.usage = FakeUsage{7, 4, 0};
  auto fake = StartFake({rule});
  const Exchange ex = PostRaw(fake->port(), kOpenAiPath, OpenAiRequest("hi", true, true).dump());
  ASSERT_EQ(ex.error, httplib::Error::Success);
  ASSERT_EQ(ex.status, 200);
  EXPECT_EQ(ex.content_type, "text/event-stream");
  const std::vector<SseEvent> events = ParseSse(ex.body);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().data, "[DONE]");
  const std::vector<json> chunks = OpenAiChunks(events);
  ASSERT_EQ(chunks.size(), 1u + 4u + 1u + 1u);  // role, pieces, finish, usage
  for (const json& chunk : chunks) {
    EXPECT_EQ(chunk["object"], "chat.completion.chunk");
    EXPECT_EQ(chunk["id"], chunks[0]["id"]);
    EXPECT_EQ(chunk["model"], "gpt-test");
  }
  EXPECT_EQ(chunks[0]["choices"][0]["delta"],
            json({{"role", "assistant"}, {"content", ""}, {"refusal", nullptr}}));
  std::vector<std::string> pieces;
  for (size_t i = 1; i <= 4; ++i) {
    pieces.push_back(chunks[i]["choices"][0]["delta"]["content"]);
    EXPECT_TRUE(chunks[i]["choices"][0]["finish_reason"].is_null());
    EXPECT_TRUE(chunks[i]["usage"].is_null());
  }
  EXPECT_THAT(pieces, ElementsAre("Hell", "o, w", "orld", "!"));
  EXPECT_EQ(chunks[5]["choices"][0]["delta"], json::object());
  EXPECT_EQ(chunks[5]["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(chunks[5]["usage"].is_null());
  EXPECT_EQ(chunks[6]["choices"], json::array());
  EXPECT_EQ(chunks[6]["usage"]["prompt_tokens"], 7);
  EXPECT_EQ(chunks[6]["usage"]["completion_tokens"], 4);
  EXPECT_EQ(chunks[6]["usage"]["total_tokens"], 11);
}

TEST(FakeOpenAiTest, OneWriteSendsTheSameEventsAsOneChunk) {
  FakeRule pieces = TextRule("Hello, world! A longer answer, in many pieces.");
  pieces.reply.usage = FakeUsage{7, 4, 0};
  FakeRule together = pieces;
  together.one_write = true;
  std::vector<std::vector<json>> seen;
  std::vector<size_t> http_chunks;
  for (const FakeRule& rule : {pieces, together}) {
    auto fake = StartFake({rule});
    const std::vector<std::string> wire =
        StreamChunks(fake->port(), OpenAiRequest("hi", true, true).dump());
    const std::vector<SseEvent> events = ParseSse(absl::StrJoin(wire, ""));
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.back().data, "[DONE]");
    std::vector<json> chunks = OpenAiChunks(events);
    for (json& chunk : chunks) {  // the only fields that differ between two answers
      chunk.erase("id");
      chunk.erase("created");
    }
    seen.push_back(std::move(chunks));
    http_chunks.push_back(wire.size());
  }
  ASSERT_GE(seen[0].size(), 12u);
  EXPECT_EQ(seen[0], seen[1]);
  EXPECT_EQ(http_chunks[0], seen[0].size() + 1);  // one per event, [DONE] included
  EXPECT_EQ(http_chunks[1], 1u);
}

TEST(FakeOpenAiTest, StreamWithoutIncludeUsageHasNoUsageAtAll) {
  auto fake = StartFake({TextRule("Hello")});
  const Exchange ex = PostRaw(fake->port(), kOpenAiPath, OpenAiRequest("hi", true).dump());
  const std::vector<json> chunks = OpenAiChunks(ParseSse(ex.body));
  ASSERT_FALSE(chunks.empty());
  for (const json& chunk : chunks) {
    EXPECT_FALSE(chunk.contains("usage")) << chunk;
    EXPECT_EQ(chunk["choices"].size(), 1u);
  }
}

TEST(FakeOpenAiTest, StreamedToolCallsCarryIdOnceAndFragmentsThatReassemble) {
  auto fake = StartFake({TwoToolCallsRule()});
  const Exchange ex =
      PostRaw(fake->port(), kOpenAiPath, OpenAiRequest("weather?", true, true).dump());
  ASSERT_EQ(ex.error, httplib::Error::Success);
  const std::vector<json> chunks = OpenAiChunks(ParseSse(ex.body));
  ASSERT_GE(chunks.size(), 4u);
  // Tool-calls-only answers open with the role and the first call together.
  const json& first = chunks[0]["choices"][0]["delta"];
  EXPECT_EQ(first["role"], "assistant");
  EXPECT_TRUE(first["content"].is_null());
  EXPECT_EQ(first["tool_calls"][0]["index"], 0);

  std::vector<std::string> ids(2), names(2), arguments(2);
  std::vector<int> id_deltas(2, 0), fragments(2, 0);
  int last_index = 0;
  std::string finish;
  for (const json& chunk : chunks) {
    if (chunk["choices"].empty()) continue;
    const json& choice = chunk["choices"][0];
    if (choice["finish_reason"].is_string()) finish = choice["finish_reason"];
    if (!choice["delta"].contains("tool_calls")) continue;
    for (const json& call : choice["delta"]["tool_calls"]) {
      const int index = call["index"];
      ASSERT_GE(index, last_index) << "calls must stream in index order";
      last_index = index;
      if (call.contains("id")) {
        ++id_deltas[index];
        ids[index] = call["id"];
        names[index] = call["function"]["name"];
        EXPECT_EQ(call["type"], "function");
        EXPECT_EQ(call["function"]["arguments"], "");
      } else {
        EXPECT_FALSE(call["function"].contains("name"));
        const std::string fragment = call["function"]["arguments"];
        arguments[index] += fragment;
        ++fragments[index];
      }
    }
  }
  EXPECT_THAT(ids, ElementsAre("call_weather", "call_time"));
  EXPECT_THAT(names, ElementsAre("get_weather", "get_time"));
  EXPECT_THAT(id_deltas, ElementsAre(1, 1));
  EXPECT_EQ(arguments[0], kWeatherArgs);
  EXPECT_EQ(arguments[1], kTimeArgs);
  // Split mid-token: the first fragment is `{"`, not a whole key.
  EXPECT_GT(fragments[0], 10);
  EXPECT_EQ(finish, "tool_calls");
  EXPECT_EQ(chunks.back()["usage"]["prompt_tokens_details"]["cached_tokens"], 100);
}

TEST(FakeOpenAiTest, TextThenToolCallStreamsTheTextFirst) {
  FakeRule rule = TextRule("Let me check.");
  rule.reply.tool_calls = {{"", "get_weather", "{}"}};
  auto fake = StartFake({rule});
  const std::vector<json> chunks = OpenAiChunks(
      ParseSse(PostRaw(fake->port(), kOpenAiPath, OpenAiRequest("x", true).dump()).body));
  ASSERT_GE(chunks.size(), 3u);
  EXPECT_EQ(chunks[0]["choices"][0]["delta"]["content"], "");
  std::string text;
  std::string id;
  for (const json& chunk : chunks) {
    const json& delta = chunk["choices"][0]["delta"];
    if (delta.contains("content") && delta["content"].is_string()) {
      EXPECT_TRUE(id.empty()) << "text after the tool call started";
      text += delta["content"].get<std::string>();
    }
    if (delta.contains("tool_calls") && delta["tool_calls"][0].contains("id")) {
      id = delta["tool_calls"][0]["id"];
    }
  }
  EXPECT_EQ(text, "Let me check.");
  EXPECT_THAT(id, StartsWith("call_"));
}

// --- Anthropic shapes ---------------------------------------------------

TEST(FakeAnthropicTest, NonStreamedMessageHasTextAndToolUseBlocks) {
  FakeRule rule = TwoToolCallsRule();
  rule.reply.text = "Checking.";
  auto fake = StartFake({rule});
  const Exchange ex = PostRaw(fake->port(), kAnthropicPath, AnthropicRequest("weather?").dump(),
                              AnthropicHeaders());
  ASSERT_EQ(ex.status, 200);
  const json body = json::parse(ex.body);
  EXPECT_THAT(body["id"].get<std::string>(), StartsWith("msg_"));
  EXPECT_EQ(body["type"], "message");
  EXPECT_EQ(body["role"], "assistant");
  EXPECT_EQ(body["model"], "claude-test");
  ASSERT_EQ(body["content"].size(), 3u);
  EXPECT_EQ(body["content"][0], json({{"type", "text"}, {"text", "Checking."}}));
  EXPECT_EQ(body["content"][1]["type"], "tool_use");
  EXPECT_EQ(body["content"][1]["id"], "call_weather");
  EXPECT_EQ(body["content"][1]["name"], "get_weather");
  EXPECT_EQ(body["content"][1]["input"], json::parse(kWeatherArgs));
  EXPECT_EQ(body["content"][2]["input"], json::parse(kTimeArgs));
  EXPECT_EQ(body["stop_reason"], "tool_use");
  EXPECT_TRUE(body["stop_sequence"].is_null());
  // Usage normalises back to the rule's numbers: prompt = input + cache reads.
  EXPECT_EQ(body["usage"]["input_tokens"], 20);
  EXPECT_EQ(body["usage"]["cache_read_input_tokens"], 100);
  EXPECT_EQ(body["usage"]["cache_creation_input_tokens"], 0);
  EXPECT_EQ(body["usage"]["output_tokens"], 30);
}

TEST(FakeAnthropicTest, FinishReasonsMapToStopReasons) {
  FakeRule rule = TextRule("cut off");
  rule.reply.finish_reason = "length";
  auto fake = StartFake({rule});
  const Exchange ex =
      PostRaw(fake->port(), kAnthropicPath, AnthropicRequest("x").dump(), AnthropicHeaders());
  EXPECT_EQ(json::parse(ex.body)["stop_reason"], "max_tokens");
  const Exchange openai = PostRaw(fake->port(), kOpenAiPath, OpenAiRequest("x").dump());
  EXPECT_EQ(json::parse(openai.body)["choices"][0]["finish_reason"], "length");
}

TEST(FakeAnthropicTest, StreamFollowsTheMessagesEventSequence) {
  FakeRule rule = TwoToolCallsRule();
  rule.reply.text = "Checking the weather.";
  rule.reply.tool_calls.pop_back();
  auto fake = StartFake({rule});
  const Exchange ex = PostRaw(fake->port(), kAnthropicPath,
                              AnthropicRequest("weather?", true).dump(), AnthropicHeaders());
  ASSERT_EQ(ex.error, httplib::Error::Success);
  EXPECT_EQ(ex.content_type, "text/event-stream");
  const std::vector<SseEvent> events = ParseSse(ex.body);
  std::vector<std::string> names;
  std::string text;
  std::string partial_json;
  int empty_json_fragments = 0;
  for (const SseEvent& event : events) {
    const json data = json::parse(event.data);
    EXPECT_EQ(data["type"], event.name);
    if (names.empty() || names.back() != event.name) names.push_back(event.name);
    if (event.name != "content_block_delta") continue;
    if (data["delta"]["type"] == "text_delta") {
      EXPECT_EQ(data["index"], 0);
      text += data["delta"]["text"].get<std::string>();
    } else {
      EXPECT_EQ(data["delta"]["type"], "input_json_delta");
      EXPECT_EQ(data["index"], 1);
      const std::string fragment = data["delta"]["partial_json"];
      if (fragment.empty()) ++empty_json_fragments;
      partial_json += fragment;
    }
  }
  EXPECT_THAT(names,
              ElementsAre("message_start", "content_block_start", "ping", "content_block_delta",
                          "content_block_stop", "content_block_start", "content_block_delta",
                          "content_block_stop", "message_delta", "message_stop"));
  EXPECT_EQ(text, "Checking the weather.");
  EXPECT_EQ(partial_json, kWeatherArgs);
  EXPECT_EQ(empty_json_fragments, 1);

  const json start = json::parse(events[0].data);
  EXPECT_EQ(start["message"]["usage"]["input_tokens"], 20);
  EXPECT_EQ(start["message"]["usage"]["cache_read_input_tokens"], 100);
  EXPECT_TRUE(start["message"]["stop_reason"].is_null());
  const json tool_start = json::parse(events[3 + 6 + 1].data);  // after 6 pieces and a stop
  EXPECT_EQ(tool_start["content_block"], json({{"type", "tool_use"},
                                               {"id", "call_weather"},
                                               {"name", "get_weather"},
                                               {"input", json::object()}}));
  const json message_delta = json::parse(events[events.size() - 2].data);
  EXPECT_EQ(message_delta["delta"]["stop_reason"], "tool_use");
  EXPECT_TRUE(message_delta["delta"]["stop_sequence"].is_null());
  EXPECT_EQ(message_delta["usage"]["output_tokens"], 30);
}

// --- Structured output --------------------------------------------------

json AnswerSchema() {
  return {{"type", "object"},
          {"properties",
           {{"title", {{"type", "string"}}},
            {"score", {{"type", "integer"}}},
            {"tags", {{"type", "array"}, {"items", {{"type", "string"}}}}}}},
          {"required", {"title", "score"}}};
}

json OpenAiStructuredRequest() {
  json body = OpenAiRequest("rate it");
  body["response_format"] = {
      {"type", "json_schema"},
      {"json_schema", {{"name", "answer"}, {"schema", AnswerSchema()}, {"strict", true}}}};
  return body;
}

json AnthropicStructuredRequest(bool stream = false) {
  json body = AnthropicRequest("rate it", stream);
  body["tools"] = json::array({{{"name", "answer"}, {"input_schema", AnswerSchema()}}});
  body["tool_choice"] = {{"type", "tool"}, {"name", "answer"}};
  return body;
}

TEST(FakeStructuredOutputTest, OpenAiJsonSchemaGetsTheRuleJsonAsContent) {
  FakeRule rule;
  rule.reply.json = R"({"title":"Good","score":9})";
  auto fake = StartFake({rule});
  const Exchange ex = PostRaw(fake->port(), kOpenAiPath, OpenAiStructuredRequest().dump());
  const json choice = json::parse(ex.body)["choices"][0];
  EXPECT_EQ(choice["message"]["content"], R"({"title":"Good","score":9})");
  EXPECT_EQ(choice["finish_reason"], "stop");
}

TEST(FakeStructuredOutputTest, WithoutARuleTheAnswerIsTheSchemasSkeleton) {
  auto fake = StartFake();
  const Exchange ex = PostRaw(fake->port(), kOpenAiPath, OpenAiStructuredRequest().dump());
  const json content =
      json::parse(json::parse(ex.body)["choices"][0]["message"]["content"].get<std::string>());
  EXPECT_EQ(content, json({{"title", ""}, {"score", 0}}));
}

TEST(FakeStructuredOutputTest, InvalidStructuredOutputLacksTheFirstRequiredField) {
  FakeRule rule;
  rule.reply.json = R"({"title":"Good","score":9})";
  rule.fault.kind = FakeFault::Kind::kInvalidStructuredOutput;
  auto fake = StartFake({rule});
  const Exchange openai = PostRaw(fake->port(), kOpenAiPath, OpenAiStructuredRequest().dump());
  EXPECT_EQ(
      json::parse(json::parse(openai.body)["choices"][0]["message"]["content"].get<std::string>()),
      json({{"score", 9}}));
  const Exchange anthropic = PostRaw(fake->port(), kAnthropicPath,
                                     AnthropicStructuredRequest().dump(), AnthropicHeaders());
  EXPECT_EQ(json::parse(anthropic.body)["content"][0]["input"], json({{"score", 9}}));
}

TEST(FakeStructuredOutputTest, AnthropicForcedToolCarriesTheJsonAsInput) {
  FakeRule rule;
  rule.reply.json = R"({"title":"Good","score":9})";
  auto fake = StartFake({rule});
  const Exchange ex = PostRaw(fake->port(), kAnthropicPath, AnthropicStructuredRequest().dump(),
                              AnthropicHeaders());
  const json body = json::parse(ex.body);
  ASSERT_EQ(body["content"].size(), 1u);
  EXPECT_EQ(body["content"][0]["type"], "tool_use");
  EXPECT_EQ(body["content"][0]["name"], "answer");
  EXPECT_THAT(body["content"][0]["id"].get<std::string>(), StartsWith("toolu_"));
  EXPECT_EQ(body["content"][0]["input"], json({{"title", "Good"}, {"score", 9}}));
  EXPECT_EQ(body["stop_reason"], "tool_use");

  const Exchange streamed = PostRaw(fake->port(), kAnthropicPath,
                                    AnthropicStructuredRequest(true).dump(), AnthropicHeaders());
  std::string partial_json;
  for (const SseEvent& event : ParseSse(streamed.body)) {
    const json data = json::parse(event.data);
    if (event.name == "content_block_delta") partial_json += data["delta"]["partial_json"];
  }
  EXPECT_EQ(partial_json, R"({"title":"Good","score":9})");
}

// --- Rules --------------------------------------------------------------

std::string OpenAiText(const Exchange& ex) {
  return json::parse(ex.body)["choices"][0]["message"]["content"];
}

TEST(FakeRulesTest, UnmatchedRequestsGetAnEcho) {
  auto fake = StartFake();
  EXPECT_EQ(OpenAiText(PostRaw(fake->port(), kOpenAiPath, OpenAiRequest("ping me").dump())),
            "echo: ping me");
}

TEST(FakeRulesTest, MatchesOnOperationHeaderAndFirstMatchWins) {
  FakeRule summarize = TextRule("summary");
  summarize.match.operation = "summarize";
  FakeRule also_summarize = TextRule("second");
  also_summarize.match.operation = "summarize";
  auto fake = StartFake({summarize, also_summarize, TextRule("other")});
  EXPECT_EQ(OpenAiText(PostRaw(fake->port(), kOpenAiPath, OpenAiRequest("x").dump(),
                               {{"x-omniforge-operation", "summarize"}})),
            "summary");
  EXPECT_EQ(OpenAiText(PostRaw(fake->port(), kOpenAiPath, OpenAiRequest("x").dump(),
                               {{"x-omniforge-operation", "title"}})),
            "other");
}

TEST(FakeRulesTest, MatchesOnLastUserMessageCaseInsensitively) {
  FakeRule contains = TextRule("weather answer");
  contains.match.last_user_contains = "WEATHER";
  FakeRule regex = TextRule("greeting");
  regex.match.last_user_regex = "^(hi|hello)\\b";
  auto fake = StartFake({contains, regex});
  json request = OpenAiRequest("What's the Weather?");
  // Only the last user message counts.
  request["messages"] = json::array({{{"role", "user"}, {"content", "hello"}},
                                     {{"role", "assistant"}, {"content", "hey"}},
                                     {{"role", "user"}, {"content", "What's the Weather?"}}});
  EXPECT_EQ(OpenAiText(PostRaw(fake->port(), kOpenAiPath, request.dump())), "weather answer");
  EXPECT_EQ(OpenAiText(PostRaw(fake->port(), kOpenAiPath, OpenAiRequest("Hello you").dump())),
            "greeting");
  EXPECT_EQ(OpenAiText(PostRaw(fake->port(), kOpenAiPath, OpenAiRequest("oh hello").dump())),
            "echo: oh hello");
}

TEST(FakeRulesTest, MatchesOnApiModelToolOfferedAndToolResult) {
  FakeRule anthropic_only = TextRule("from claude rule");
  anthropic_only.match.api = "anthropic";
  FakeRule model = TextRule("model rule");
  model.match.model = "gpt-special";
  FakeRule tool = TextRule("tool rule");
  tool.match.tool_offered = "search";
  FakeRule after_tool = TextRule("after tool");
  after_tool.match.last_is_tool_result = true;
  auto fake = StartFake({anthropic_only, model, tool, after_tool});
  const int port = fake->port();

  EXPECT_EQ(
      json::parse(PostRaw(port, kAnthropicPath, AnthropicRequest("x").dump(), AnthropicHeaders())
                      .body)["content"][0]["text"],
      "from claude rule");
  json special = OpenAiRequest("x");
  special["model"] = "gpt-special";
  EXPECT_EQ(OpenAiText(PostRaw(port, kOpenAiPath, special.dump())), "model rule");
  json with_tool = OpenAiRequest("x");
  with_tool["tools"] = json::array(
      {{{"type", "function"}, {"function", {{"name", "search"}, {"parameters", json::object()}}}}});
  EXPECT_EQ(OpenAiText(PostRaw(port, kOpenAiPath, with_tool.dump())), "tool rule");
  json tool_loop = OpenAiRequest("x");
  tool_loop["messages"] = json::array(
      {{{"role", "user"}, {"content", "find it"}},
       {{"role", "assistant"},
        {"content", nullptr},
        {"tool_calls", json::array({{{"id", "call_1"},
                                     {"type", "function"},
                                     {"function", {{"name", "search"}, {"arguments", "{}"}}}}})}},
       {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "found"}}});
  EXPECT_EQ(OpenAiText(PostRaw(port, kOpenAiPath, tool_loop.dump())), "after tool");
  EXPECT_EQ(OpenAiText(PostRaw(port, kOpenAiPath, OpenAiRequest("plain").dump())), "echo: plain");
}

TEST(FakeRulesTest, ARuleWithTimesIsUsedUpAndLaterRulesTakeOver) {
  FakeRule once = TextRule("first time");
  once.times = 1;
  auto fake = StartFake({once, TextRule("afterwards")});
  EXPECT_EQ(OpenAiText(PostRaw(fake->port(), kOpenAiPath, OpenAiRequest("x").dump())),
            "first time");
  EXPECT_EQ(OpenAiText(PostRaw(fake->port(), kOpenAiPath, OpenAiRequest("x").dump())),
            "afterwards");
  EXPECT_EQ(OpenAiText(PostRaw(fake->port(), kOpenAiPath, OpenAiRequest("x").dump())),
            "afterwards");
}

TEST(FakeRulesTest, SetRulesReplacesAndAddRuleAppends) {
  auto fake = StartFake({TextRule("old")});
  ASSERT_TRUE(fake->SetRules({TextRule("new")}).ok());
  EXPECT_EQ(OpenAiText(PostRaw(fake->port(), kOpenAiPath, OpenAiRequest("x").dump())), "new");
  FakeRule specific = TextRule("added");
  specific.match.last_user_contains = "special";
  ASSERT_TRUE(fake->SetRules({}).ok());
  ASSERT_TRUE(fake->AddRule(specific).ok());
  EXPECT_EQ(OpenAiText(PostRaw(fake->port(), kOpenAiPath, OpenAiRequest("special").dump())),
            "added");
}

TEST(FakeRulesTest, InvalidRulesAreRejected) {
  FakeRule bad_regex;
  bad_regex.match.last_user_regex = "(unclosed";
  EXPECT_EQ(FakeLlmServer::Start({bad_regex}).status().code(), absl::StatusCode::kInvalidArgument);
  FakeRule bad_finish;
  bad_finish.reply.finish_reason = "end_turn";
  auto fake = StartFake({TextRule("kept")});
  EXPECT_EQ(fake->SetRules({bad_finish}).code(), absl::StatusCode::kInvalidArgument);
  FakeRule bad_status;
  bad_status.fault.kind = FakeFault::Kind::kStatus;
  bad_status.fault.status = 200;
  EXPECT_EQ(fake->AddRule(bad_status).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(OpenAiText(PostRaw(fake->port(), kOpenAiPath, OpenAiRequest("x").dump())), "kept");
}

// --- Faults -------------------------------------------------------------

FakeRule FaultRule(FakeFault::Kind kind, int after_deltas = 1) {
  FakeRule rule = TextRule("abcdefghijkl");  // three 4-character pieces
  rule.fault.kind = kind;
  rule.fault.after_deltas = after_deltas;
  return rule;
}

TEST(FakeFaultTest, StatusFaultsUseEachApisErrorShapeAndRetryAfter) {
  FakeRule limited = FaultRule(FakeFault::Kind::kStatus);
  limited.fault.status = 429;
  limited.fault.retry_after = "7";
  limited.match.api = "openai";
  FakeRule overloaded = FaultRule(FakeFault::Kind::kStatus);
  overloaded.fault.status = 529;
  overloaded.match.api = "anthropic";
  auto fake = StartFake({limited, overloaded});

  const Exchange openai = PostRaw(fake->port(), kOpenAiPath, OpenAiRequest("x").dump());
  EXPECT_EQ(openai.status, 429);
  EXPECT_EQ(openai.retry_after, "7");
  const json error = json::parse(openai.body)["error"];
  EXPECT_EQ(error["code"], "rate_limit_exceeded");
  EXPECT_TRUE(error["message"].is_string());
  EXPECT_TRUE(error.contains("param"));
  EXPECT_TRUE(error.contains("type"));

  const Exchange anthropic =
      PostRaw(fake->port(), kAnthropicPath, AnthropicRequest("x").dump(), AnthropicHeaders());
  EXPECT_EQ(anthropic.status, 529);
  EXPECT_EQ(anthropic.retry_after, "");
  EXPECT_EQ(json::parse(anthropic.body),
            json({{"type", "error"},
                  {"error", {{"type", "overloaded_error"}, {"message", "Overloaded"}}}}));
}

TEST(FakeFaultTest, StatusFaultBodyIsSentVerbatim) {
  FakeRule rule = FaultRule(FakeFault::Kind::kStatus);
  rule.fault.status = 503;
  rule.fault.body = "<html>upstream down</html>";
  auto fake = StartFake({rule});
  const Exchange ex = PostRaw(fake->port(), kOpenAiPath, OpenAiRequest("x").dump());
  EXPECT_EQ(ex.status, 503);
  EXPECT_EQ(ex.body, "<html>upstream down</html>");
}

TEST(FakeFaultTest, HangHoldsTheAnswerForHangMs) {
  FakeRule rule = FaultRule(FakeFault::Kind::kHang);
  rule.fault.hang_ms = 150;
  auto fake = StartFake({rule});
  const auto start = std::chrono::steady_clock::now();
  const Exchange ex = PostRaw(fake->port(), kOpenAiPath, OpenAiRequest("x").dump());
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(150));
  EXPECT_EQ(OpenAiText(ex), "abcdefghijkl");
}

TEST(FakeFaultTest, EndlessHangOutlastsTheClientAndEndsOnStop) {
  auto fake = StartFake({FaultRule(FakeFault::Kind::kHang)});
  const Exchange timed_out =
      PostRaw(fake->port(), kOpenAiPath, OpenAiRequest("x").dump(), {}, /*read_timeout_ms=*/200);
  EXPECT_EQ(timed_out.error, httplib::Error::Read);

  Exchange waiting;
  std::thread client(
      [&] { waiting = PostRaw(fake->port(), kOpenAiPath, OpenAiRequest("x", true).dump()); });
  ASSERT_TRUE(fake->WaitForRequests(2, 10'000));
  fake->Stop();  // must release the hanging handler, or join never returns
  client.join();
  EXPECT_NE(waiting.status, 200);
}

TEST(FakeFaultTest, MalformedJsonBreaksTheBodyOrOneStreamEvent) {
  auto fake = StartFake({FaultRule(FakeFault::Kind::kMalformedJson)});
  const Exchange plain = PostRaw(fake->port(), kOpenAiPath, OpenAiRequest("x").dump());
  EXPECT_EQ(plain.status, 200);
  EXPECT_TRUE(json::parse(plain.body, nullptr, false).is_discarded());
  EXPECT_THAT(plain.body, StartsWith("{\"id\":\"chatcmpl-"));

  const Exchange streamed = PostRaw(fake->port(), kOpenAiPath, OpenAiRequest("x", true).dump());
  const std::vector<SseEvent> events = ParseSse(streamed.body);
  std::vector<bool> parses;
  parses.reserve(events.size());
  for (const SseEvent& event : events) {
    parses.push_back(event.data == "[DONE]" ||
                     !json::parse(event.data, nullptr, false).is_discarded());
  }
  // role, one piece, the broken copy of the second, the rest as usual.
  EXPECT_THAT(parses, ElementsAre(true, true, false, true, true, true, true));
  EXPECT_EQ(events.back().data, "[DONE]");

  const Exchange anthropic =
      PostRaw(fake->port(), kAnthropicPath, AnthropicRequest("x", true).dump(), AnthropicHeaders());
  int broken = 0;
  for (const SseEvent& event : ParseSse(anthropic.body)) {
    if (json::parse(event.data, nullptr, false).is_discarded()) {
      ++broken;
      EXPECT_EQ(event.name, "content_block_delta");
    }
  }
  EXPECT_EQ(broken, 1);
}

TEST(FakeFaultTest, CutStreamClosesTheConnectionAfterTheGivenDeltas) {
  auto fake = StartFake({FaultRule(FakeFault::Kind::kCutStream, 2)});
  const Exchange openai = PostRaw(fake->port(), kOpenAiPath, OpenAiRequest("x", true).dump());
  EXPECT_EQ(openai.error, httplib::Error::Read);
  EXPECT_EQ(openai.status, 200);
  const std::vector<json> chunks = OpenAiChunks(ParseSse(openai.body));
  ASSERT_EQ(chunks.size(), 3u);  // role chunk and two pieces, each complete
  EXPECT_EQ(chunks[2]["choices"][0]["delta"]["content"], "efgh");
  EXPECT_THAT(openai.body, ::testing::Not(HasSubstr("[DONE]")));

  const Exchange anthropic =
      PostRaw(fake->port(), kAnthropicPath, AnthropicRequest("x", true).dump(), AnthropicHeaders());
  EXPECT_EQ(anthropic.error, httplib::Error::Read);
  std::vector<std::string> names;
  for (const SseEvent& event : ParseSse(anthropic.body)) names.push_back(event.name);
  EXPECT_THAT(names, ElementsAre("message_start", "content_block_start", "ping",
                                 "content_block_delta", "content_block_delta"));

  const Exchange plain = PostRaw(fake->port(), kOpenAiPath, OpenAiRequest("x").dump());
  EXPECT_EQ(plain.error, httplib::Error::Read);
  EXPECT_TRUE(json::parse(plain.body, nullptr, false).is_discarded());
}

TEST(FakeFaultTest, CutBeforeAnyDeltaSendsOnlyThePreamble) {
  auto fake = StartFake({FaultRule(FakeFault::Kind::kCutStream, 0)});
  const Exchange openai = PostRaw(fake->port(), kOpenAiPath, OpenAiRequest("x", true).dump());
  EXPECT_EQ(openai.error, httplib::Error::Read);
  const std::vector<json> chunks = OpenAiChunks(ParseSse(openai.body));
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0]["choices"][0]["delta"]["content"], "");
}

TEST(FakeFaultTest, StreamErrorIsTheApisErrorEventAndEndsTheStream) {
  auto fake = StartFake({FaultRule(FakeFault::Kind::kStreamError, 1)});
  const Exchange openai = PostRaw(fake->port(), kOpenAiPath, OpenAiRequest("x", true).dump());
  EXPECT_EQ(openai.error, httplib::Error::Success);
  const std::vector<json> chunks = OpenAiChunks(ParseSse(openai.body));
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[1]["choices"][0]["delta"]["content"], "abcd");
  EXPECT_EQ(chunks[2]["error"]["type"], "server_error");
  EXPECT_THAT(openai.body, ::testing::Not(HasSubstr("[DONE]")));

  const Exchange anthropic =
      PostRaw(fake->port(), kAnthropicPath, AnthropicRequest("x", true).dump(), AnthropicHeaders());
  const std::vector<SseEvent> events = ParseSse(anthropic.body);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().name, "error");
  EXPECT_EQ(json::parse(events.back().data)["error"]["type"], "overloaded_error");
  for (const SseEvent& event : events) EXPECT_NE(event.name, "message_stop");
}

TEST(FakeFaultTest, ChunkDelaySpacesTheEvents) {
  FakeRule rule = TextRule("abcdefghijkl");
  rule.first_byte_delay_ms = 30;
  rule.chunk_delay_ms = 20;
  auto fake = StartFake({rule});
  const auto start = std::chrono::steady_clock::now();
  const Exchange ex = PostRaw(fake->port(), kOpenAiPath, OpenAiRequest("x", true).dump());
  // role + 3 pieces + finish + [DONE]: 30 ms, then 5 gaps of 20 ms.
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(130));
  EXPECT_EQ(ParseSse(ex.body).back().data, "[DONE]");
}

// --- Validation and auth ------------------------------------------------

json OpenAiError(const Exchange& ex) {
  EXPECT_EQ(ex.status, 400) << ex.body;
  const json body = json::parse(ex.body);
  EXPECT_EQ(body["error"]["type"], "invalid_request_error");
  return body["error"];
}

// Bodies are read by a fast scanner that leaves some valid JSON (integers
// beyond 64 bits, deep nesting) to a full parser: such a body is still read.
TEST(FakeValidationTest, ABodyOnlyAFullParserReadsIsStillAnswered) {
  auto fake = StartFake();
  // Each before the members the fake needs, so a half-read body lacks them.
  const std::string request = OpenAiRequest("big numbers").dump();
  const std::string body = R"({"seed":123456789012345678901234567890,)" + request.substr(1);
  std::string nested = R"({"metadata":)";
  for (int i = 0; i < 100; ++i) nested += "[";
  for (int i = 0; i < 100; ++i) nested += "]";
  nested += "," + request.substr(1);
  for (const std::string& text : {body, nested}) {
    const Exchange ex = PostRaw(fake->port(), kOpenAiPath, text);
    EXPECT_EQ(ex.status, 200) << ex.body;
  }
  const Exchange broken = PostRaw(fake->port(), kOpenAiPath, body.substr(0, body.size() - 1));
  EXPECT_EQ(broken.status, 400) << broken.body;
}

TEST(FakeValidationTest, OpenAiRejectsMalformedRequestsLikeTheRealApi) {
  auto fake = StartFake();
  const int port = fake->port();
  EXPECT_EQ(
      OpenAiError(PostRaw(port, kOpenAiPath, "{\"model\":"))["message"].get<std::string>().rfind(
          "We could not parse the JSON body", 0),
      0u);
  EXPECT_EQ(OpenAiError(PostRaw(port, kOpenAiPath, R"({"messages":[]})"))["message"],
            "you must provide a model parameter");
  const json missing = OpenAiError(PostRaw(port, kOpenAiPath, R"({"model":"m"})"));
  EXPECT_EQ(missing["param"], "messages");
  EXPECT_EQ(missing["code"], "missing_required_parameter");
  EXPECT_EQ(OpenAiError(PostRaw(port, kOpenAiPath, R"({"model":"m","messages":"hi"})"))["code"],
            "invalid_type");

  json orphan_tool = OpenAiRequest("x");
  orphan_tool["messages"].push_back(
      {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "r"}});
  const json orphan = OpenAiError(PostRaw(port, kOpenAiPath, orphan_tool.dump()));
  EXPECT_THAT(orphan["message"].get<std::string>(),
              HasSubstr("must be a response to a preceeding message with 'tool_calls'"));
  EXPECT_EQ(orphan["param"], "messages.[1].role");

  json calls = OpenAiRequest("x");
  calls["messages"].push_back(
      {{"role", "assistant"},
       {"content", nullptr},
       {"tool_calls", json::array({{{"id", "call_1"},
                                    {"type", "function"},
                                    {"function", {{"name", "f"}, {"arguments", "{}"}}}}})}});
  json wrong_id = calls;
  wrong_id["messages"].push_back({{"role", "tool"}, {"tool_call_id", "call_2"}, {"content", "r"}});
  EXPECT_EQ(OpenAiError(PostRaw(port, kOpenAiPath, wrong_id.dump()))["param"],
            "messages.[2].tool_call_id");
  json unanswered = calls;
  unanswered["messages"].push_back({{"role", "user"}, {"content", "and?"}});
  EXPECT_THAT(
      OpenAiError(PostRaw(port, kOpenAiPath, unanswered.dump()))["message"].get<std::string>(),
      HasSubstr("did not have response messages: call_1"));
  json answered = calls;
  answered["messages"].push_back({{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "r"}});
  EXPECT_EQ(PostRaw(port, kOpenAiPath, answered.dump()).status, 200);
}

json AnthropicError(const Exchange& ex) {
  EXPECT_EQ(ex.status, 400) << ex.body;
  const json body = json::parse(ex.body);
  EXPECT_EQ(body["type"], "error");
  EXPECT_EQ(body["error"]["type"], "invalid_request_error");
  return body["error"]["message"];
}

TEST(FakeValidationTest, AnthropicRejectsMalformedRequestsLikeTheRealApi) {
  auto fake = StartFake();
  const int port = fake->port();
  EXPECT_EQ(AnthropicError(PostRaw(port, kAnthropicPath, AnthropicRequest("x").dump())),
            "anthropic-version: header is required");
  json no_max = AnthropicRequest("x");
  no_max.erase("max_tokens");
  EXPECT_EQ(AnthropicError(PostRaw(port, kAnthropicPath, no_max.dump(), AnthropicHeaders())),
            "max_tokens: Field required");
  json two_users = AnthropicRequest("x");
  two_users["messages"].push_back({{"role", "user"}, {"content", "again"}});
  EXPECT_THAT(AnthropicError(PostRaw(port, kAnthropicPath, two_users.dump(), AnthropicHeaders()))
                  .get<std::string>(),
              HasSubstr("roles must alternate"));
  json system_role = AnthropicRequest("x");
  system_role["messages"].insert(system_role["messages"].begin(),
                                 json::object({{"role", "system"}, {"content", "be nice"}}));
  EXPECT_THAT(AnthropicError(PostRaw(port, kAnthropicPath, system_role.dump(), AnthropicHeaders()))
                  .get<std::string>(),
              HasSubstr("top-level `system` parameter"));

  json tool_use = AnthropicRequest("x");
  tool_use["messages"].push_back({{"role", "assistant"},
                                  {"content", json::array({{{"type", "tool_use"},
                                                            {"id", "toolu_1"},
                                                            {"name", "f"},
                                                            {"input", json::object()}}})}});
  json stray = tool_use;
  stray["messages"].push_back(
      {{"role", "user"},
       {"content",
        json::array({{{"type", "tool_result"}, {"tool_use_id", "toolu_9"}, {"content", "r"}}})}});
  EXPECT_THAT(
      AnthropicError(PostRaw(port, kAnthropicPath, stray.dump(), AnthropicHeaders()))
          .get<std::string>(),
      StartsWith("messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: "
                 "toolu_9."));
  json unanswered = tool_use;
  unanswered["messages"].push_back({{"role", "user"}, {"content", "and?"}});
  EXPECT_THAT(AnthropicError(PostRaw(port, kAnthropicPath, unanswered.dump(), AnthropicHeaders()))
                  .get<std::string>(),
              HasSubstr("`tool_use` ids were found without `tool_result` blocks immediately after: "
                        "toolu_1"));
  json string_input = tool_use;
  string_input["messages"][1]["content"][0]["input"] = "{}";
  EXPECT_THAT(AnthropicError(PostRaw(port, kAnthropicPath, string_input.dump(), AnthropicHeaders()))
                  .get<std::string>(),
              HasSubstr("Input should be a valid dictionary"));
  json answered = tool_use;
  answered["messages"].push_back(
      {{"role", "user"},
       {"content",
        json::array({{{"type", "tool_result"}, {"tool_use_id", "toolu_1"}, {"content", "r"}}})}});
  EXPECT_EQ(PostRaw(port, kAnthropicPath, answered.dump(), AnthropicHeaders()).status, 200);
}

TEST(FakeValidationTest, WrongOrMissingKeysGet401WithoutEchoingTheKey) {
  FakeOptions options;
  options.api_key = "sk-test-correct-key-1234";
  auto fake = StartFake({}, options);
  const int port = fake->port();

  const Exchange no_key = PostRaw(port, kOpenAiPath, OpenAiRequest("x").dump());
  EXPECT_EQ(no_key.status, 401);
  const Exchange wrong = PostRaw(port, kOpenAiPath, OpenAiRequest("x").dump(),
                                 {{"Authorization", "Bearer sk-test-wrong-key-5678"}});
  EXPECT_EQ(wrong.status, 401);
  EXPECT_EQ(json::parse(wrong.body)["error"]["code"], "invalid_api_key");
  EXPECT_THAT(wrong.body, ::testing::Not(HasSubstr("sk-test-wrong-key-5678")));
  EXPECT_EQ(PostRaw(port, kOpenAiPath, OpenAiRequest("x").dump(),
                    {{"Authorization", "Bearer sk-test-correct-key-1234"}})
                .status,
            200);

  httplib::Headers anthropic_wrong = AnthropicHeaders();
  anthropic_wrong.emplace("x-api-key", "nope");
  const Exchange claude =
      PostRaw(port, kAnthropicPath, AnthropicRequest("x").dump(), anthropic_wrong);
  EXPECT_EQ(claude.status, 401);
  EXPECT_EQ(json::parse(claude.body)["error"]["type"], "authentication_error");
  httplib::Headers anthropic_right = AnthropicHeaders();
  anthropic_right.emplace("x-api-key", "sk-test-correct-key-1234");
  EXPECT_EQ(PostRaw(port, kAnthropicPath, AnthropicRequest("x").dump(), anthropic_right).status,
            200);
}

// --- Recording ----------------------------------------------------------

TEST(FakeRecordingTest, RequestsAreRecordedWithBodiesAndHeaders) {
  auto fake = StartFake();
  const std::string body = OpenAiRequest("remember me", true).dump();
  PostRaw(fake->port(), kOpenAiPath, body, {{"X-Omniforge-Operation", "summarize"}});
  PostRaw(fake->port(), kAnthropicPath, "not json", AnthropicHeaders());
  PostRaw(fake->port(), "/v1/nowhere", "{}");

  const std::vector<RecordedRequest> requests = fake->Requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(fake->RequestCount(), 3u);
  EXPECT_EQ(requests[0].api, "openai");
  EXPECT_EQ(requests[0].path, kOpenAiPath);
  EXPECT_EQ(requests[0].body, body);
  EXPECT_EQ(requests[0].operation, "summarize");
  EXPECT_EQ(requests[0].headers.at("x-omniforge-operation"), "summarize");
  EXPECT_TRUE(requests[0].stream);
  EXPECT_GT(requests[0].time_micros, 0);
  EXPECT_EQ(requests[1].api, "anthropic");
  EXPECT_EQ(requests[1].body, "not json");
  EXPECT_EQ(requests[1].headers.at("anthropic-version"), "2023-06-01");
  EXPECT_EQ(requests[2].api, "");
  EXPECT_LE(requests[0].time_micros, requests[1].time_micros);
}

TEST(FakeRecordingTest, UnknownPathsGetOpenAisNotFound) {
  auto fake = StartFake();
  const Exchange ex = PostRaw(fake->port(), "/chat/completions", "{}");
  EXPECT_EQ(ex.status, 404);
  EXPECT_EQ(json::parse(ex.body)["error"]["message"], "Invalid URL (POST /chat/completions)");
}

TEST(FakeServerTest, BaseUrlsFollowEachSdksConvention) {
  auto fake = StartFake();
  const std::string port = std::to_string(fake->port());
  EXPECT_EQ(fake->openai_base_url(), "http://127.0.0.1:" + port + "/v1");
  EXPECT_EQ(fake->anthropic_base_url(), "http://127.0.0.1:" + port);
}

TEST(FakeServerTest, WithoutRecordedBodiesRequestsAreStillListed) {
  FakeOptions options;
  options.record_bodies = false;
  auto fake = StartFake({TextRule("Hello")}, options);
  httplib::Headers headers = {{"x-omniforge-operation", "summarize"}};
  const Exchange ex = PostRaw(fake->port(), kOpenAiPath, OpenAiRequest("hi", true).dump(), headers);
  ASSERT_EQ(ex.status, 200);
  EXPECT_EQ(ParseSse(ex.body).back().data, "[DONE]");
  ASSERT_EQ(fake->RequestCount(), 1u);
  const RecordedRequest recorded = fake->Requests()[0];
  EXPECT_EQ(recorded.operation, "summarize");
  EXPECT_TRUE(recorded.stream);
  EXPECT_EQ(recorded.body, "");
}

TEST(FakeServerTest, StopDoesNotWaitForIdleKeepAliveConnections) {
  FakeOptions options;
  options.keep_alive_timeout_s = 60;
  auto fake = StartFake({}, options);
  // A raw HTTP/1.1 exchange, with the connection left open afterwards.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(fake->port()));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  const std::string body = OpenAiRequest("x").dump();
  const std::string request =
      "POST /v1/chat/completions HTTP/1.1\r\nHost: fake\r\n"
      "Content-Type: application/json\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  ASSERT_EQ(send(fd, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
  char reply[64] = {};
  ASSERT_GT(recv(fd, reply, sizeof(reply) - 1, 0), 0);
  EXPECT_THAT(reply, StartsWith("HTTP/1.1 200"));

  const auto start = std::chrono::steady_clock::now();
  fake->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  close(fd);
}

TEST(FakeServerTest, SixtyFourConcurrentStreamsAllComplete) {
  FakeRule rule = TextRule("a reasonably long answer, streamed in small pieces");
  rule.chunk_delay_ms = 1;
  auto fake = StartFake({rule});
  constexpr int kClients = 64;
  std::vector<std::thread> clients;
  clients.reserve(kClients);
  std::atomic<int> complete{0};
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&] {
      const Exchange ex = PostRaw(fake->port(), kOpenAiPath, OpenAiRequest("x", true, true).dump());
      const std::vector<SseEvent> events = ParseSse(ex.body);
      if (ex.error == httplib::Error::Success && !events.empty() &&
          events.back().data == "[DONE]") {
        ++complete;
      }
    });
  }
  for (std::thread& client : clients) client.join();
  EXPECT_EQ(complete.load(), kClients);
  EXPECT_EQ(fake->RequestCount(), static_cast<size_t>(kClients));
}

}  // namespace
}  // namespace omniforge::llm::testing
