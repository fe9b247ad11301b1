#include "libs/llm/anthropic_wire.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "libs/llm/errors.h"

namespace omniforge::llm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using Json = nlohmann::json;

Json Encode(const ChatRequest& request, bool stream = false) {
  absl::StatusOr<std::string> body = EncodeAnthropicRequest(request, stream);
  EXPECT_TRUE(body.ok()) << body.status();
  return body.ok() ? Json::parse(*body) : Json();
}

constexpr char kCitySchema[] =
    R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})";

ChatRequest WeatherRequest() {
  ChatRequest request;
  request.model = "claude-sonnet-4";
  request.max_tokens = 512;
  request.messages = {{.role = Role::kSystem, .content = "Be brief."},
                      {.role = Role::kUser, .content = "Weather in Paris and Rome?"}};
  request.tools = {
      {.name = "get_weather", .description = "Current weather", .parameters_schema = kCitySchema}};
  return request;
}

TEST(AnthropicEncodeTest, SystemExtractionAndToolResultMerging) {
  ChatRequest request = WeatherRequest();
  request.messages.push_back({.role = Role::kSystem, .content = "Use metric units."});
  request.messages.push_back({.role = Role::kAssistant,
                              .content = "Checking both.",
                              .tool_calls = {{"toolu_1", "get_weather", R"({"city":"Paris"})"},
                                             {"toolu_2", "get_weather", R"({"city":"Rome"})"}}});
  request.messages.push_back({.role = Role::kTool, .content = "18 C", .tool_call_id = "toolu_1"});
  request.messages.push_back({.role = Role::kTool, .content = "24 C", .tool_call_id = "toolu_2"});
  request.messages.push_back({.role = Role::kAssistant, .content = "Paris 18, Rome 24."});
  request.messages.push_back({.role = Role::kUser, .content = "Thanks"});
  request.temperature = 0.5;

  Json body = Encode(request, /*stream=*/true);
  EXPECT_EQ(body["model"], "claude-sonnet-4");
  EXPECT_EQ(body["max_tokens"], 512);
  EXPECT_EQ(body["system"], "Be brief.\n\nUse metric units.");
  EXPECT_EQ(body["temperature"], 0.5);
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["messages"], Json::parse(R"([
    {"role":"user","content":"Weather in Paris and Rome?"},
    {"role":"assistant","content":[
      {"type":"text","text":"Checking both."},
      {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}},
      {"type":"tool_use","id":"toolu_2","name":"get_weather","input":{"city":"Rome"}}]},
    {"role":"user","content":[
      {"type":"tool_result","tool_use_id":"toolu_1","content":"18 C"},
      {"type":"tool_result","tool_use_id":"toolu_2","content":"24 C"}]},
    {"role":"assistant","content":"Paris 18, Rome 24."},
    {"role":"user","content":"Thanks"}])"));
  EXPECT_EQ(body["tools"], Json::parse(std::string(R"([{"name":"get_weather",
    "description":"Current weather","input_schema":)") +
                                       kCitySchema + "}]"));
  EXPECT_EQ(body["tool_choice"], Json::parse(R"({"type":"auto"})"));
}

TEST(AnthropicEncodeTest, ConsecutiveMessagesOfOneRoleMergeSoRolesAlternate) {
  ChatRequest request = WeatherRequest();
  request.messages.push_back({.role = Role::kAssistant,
                              .tool_calls = {{"toolu_1", "get_weather", R"({"city":"Paris"})"}}});
  request.messages.push_back({.role = Role::kTool, .content = "18 C", .tool_call_id = "toolu_1"});
  request.messages.push_back({.role = Role::kUser, .content = "And in Rome?"});
  request.messages.push_back({.role = Role::kAssistant, .content = "Rome: 24 C."});
  request.messages.push_back({.role = Role::kAssistant, .content = ""});
  request.messages.push_back({.role = Role::kUser, .content = "Thanks"});
  request.messages.push_back({.role = Role::kUser, .content = "Bye"});

  EXPECT_EQ(Encode(request)["messages"], Json::parse(R"([
    {"role":"user","content":"Weather in Paris and Rome?"},
    {"role":"assistant","content":[
      {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},
    {"role":"user","content":[
      {"type":"tool_result","tool_use_id":"toolu_1","content":"18 C"},
      {"type":"text","text":"And in Rome?"}]},
    {"role":"assistant","content":"Rome: 24 C."},
    {"role":"user","content":[{"type":"text","text":"Thanks"},{"type":"text","text":"Bye"}]}])"));
}

TEST(AnthropicEncodeTest, AssistantTurnWithoutTextOrToolCallsIsLeftOut) {
  ChatRequest request = WeatherRequest();
  request.messages.push_back({.role = Role::kAssistant, .content = ""});
  request.messages.push_back({.role = Role::kUser, .content = "Hello?"});
  request.messages.push_back({.role = Role::kAssistant, .content = " \n "});
  request.messages.push_back({.role = Role::kAssistant, .content = "Sunny."});
  request.messages.push_back({.role = Role::kAssistant, .content = ""});

  // The empty turns vanish, the user turns around the first one merge, and no
  // message carries empty content.
  EXPECT_EQ(Encode(request)["messages"], Json::parse(R"([
    {"role":"user","content":[
      {"type":"text","text":"Weather in Paris and Rome?"},{"type":"text","text":"Hello?"}]},
    {"role":"assistant","content":"Sunny."}])"));
}

TEST(AnthropicEncodeTest, ToolCallWithoutArgumentsSendsEmptyInput) {
  ChatRequest request = WeatherRequest();
  request.messages.push_back(
      {.role = Role::kAssistant, .tool_calls = {{"toolu_1", "get_time", ""}}});
  Json body = Encode(request);
  EXPECT_EQ(body["messages"][1]["content"][0]["input"], Json::object());
}

TEST(AnthropicEncodeTest, ToolChoiceVariants) {
  ChatRequest request = WeatherRequest();
  request.tool_choice = {ToolChoiceMode::kNone};
  EXPECT_EQ(Encode(request)["tool_choice"], Json::parse(R"({"type":"none"})"));
  request.tool_choice = {ToolChoiceMode::kRequired};
  EXPECT_EQ(Encode(request)["tool_choice"], Json::parse(R"({"type":"any"})"));
  request.tool_choice = {ToolChoiceMode::kNamed, "get_weather"};
  EXPECT_EQ(Encode(request)["tool_choice"], Json::parse(R"({"type":"tool","name":"get_weather"})"));
}

TEST(AnthropicEncodeTest, StructuredOutputIsAForcedTool) {
  ChatRequest request;
  request.model = "claude";
  request.max_tokens = 100;
  request.messages = {{.role = Role::kUser, .content = "Where?"}};
  request.response_format = ResponseFormat{.name = "location", .schema = kCitySchema};
  Json body = Encode(request);
  ASSERT_EQ(body["tools"].size(), 1u);
  EXPECT_EQ(body["tools"][0]["name"], "location");
  EXPECT_EQ(body["tools"][0]["input_schema"], Json::parse(kCitySchema));
  EXPECT_EQ(body["tool_choice"], Json::parse(R"({"type":"tool","name":"location"})"));
  EXPECT_FALSE(body.contains("system"));
  EXPECT_EQ(AnthropicStructuredToolName(request), "location");
}

TEST(AnthropicEncodeTest, ToolsAndAStructuredAnswerGoOutWithTheirSchemas) {
  ChatRequest request = WeatherRequest();
  std::string deep = R"({"type":"object","x":)" + std::string(70, '[') + std::string(70, ']') + "}";
  request.tools.push_back({.name = "deep", .parameters_schema = deep});
  request.tools.push_back({.name = "bare", .description = "says \"hi\""});
  request.response_format = ResponseFormat{.name = "answer", .schema = kCitySchema};
  const Json body = Encode(request);
  ASSERT_EQ(body["tools"].size(), 4u);
  EXPECT_EQ(body["tools"][0]["input_schema"], Json::parse(kCitySchema));
  EXPECT_EQ(body["tools"][1]["input_schema"], Json::parse(deep));
  EXPECT_EQ(body["tools"][2],
            Json::parse(
                R"({"name":"bare","description":"says \"hi\"","input_schema":{"type":"object"}})"));
  EXPECT_EQ(body["tools"][3]["name"], "answer");
  EXPECT_EQ(body["tool_choice"], Json::parse(R"({"type":"tool","name":"answer"})"));

  request.response_format.reset();
  request.tools[1].parameters_schema = R"(["not", "an", "object"])";
  const absl::Status status = EncodeAnthropicRequest(request, false).status();
  EXPECT_EQ(ErrorKindOf(status), LlmErrorKind::kInvalidRequest);
  EXPECT_THAT(std::string(status.message()), HasSubstr("parameters of tool \"deep\""));
}

TEST(AnthropicEncodeTest, InvalidRequestsAreRejected) {
  ChatRequest request = WeatherRequest();
  request.max_tokens = 0;
  EXPECT_EQ(ErrorKindOf(EncodeAnthropicRequest(request, false).status()),
            LlmErrorKind::kInvalidRequest);

  request = WeatherRequest();
  request.response_format = ResponseFormat{.name = "get_weather", .schema = "{}"};
  EXPECT_EQ(ErrorKindOf(EncodeAnthropicRequest(request, false).status()),
            LlmErrorKind::kInvalidRequest);

  request = WeatherRequest();
  request.messages.push_back(
      {.role = Role::kAssistant, .tool_calls = {{"toolu_1", "get_weather", "{\"city\":"}}});
  EXPECT_EQ(ErrorKindOf(EncodeAnthropicRequest(request, false).status()),
            LlmErrorKind::kInvalidRequest);

  request = WeatherRequest();
  request.tool_choice = {ToolChoiceMode::kNamed, "nope"};
  EXPECT_EQ(ErrorKindOf(EncodeAnthropicRequest(request, false).status()),
            LlmErrorKind::kInvalidRequest);
}

TEST(AnthropicDecodeTest, TextAndToolUseWithCacheUsage) {
  absl::StatusOr<ChatResponse> response = DecodeAnthropicResponse(R"({
    "id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-20250514",
    "content":[{"type":"text","text":"Let me check."},
               {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris","z":1,"a":2}}],
    "stop_reason":"tool_use","stop_sequence":null,
    "usage":{"input_tokens":10,"cache_creation_input_tokens":5,"cache_read_input_tokens":100,
             "output_tokens":30}})",
                                                                  "");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->id, "msg_1");
  EXPECT_EQ(response->model, "claude-sonnet-4-20250514");
  EXPECT_EQ(response->content, "Let me check.");
  EXPECT_THAT(response->tool_calls,
              ElementsAre(ToolCall{"toolu_1", "get_weather", R"({"city":"Paris","z":1,"a":2})"}));
  EXPECT_EQ(response->finish_reason, FinishReason::kToolCalls);
  EXPECT_EQ(response->usage, (TokenUsage{115, 30, 100, 5}));
}

TEST(AnthropicDecodeTest, ForcedToolInputBecomesContent) {
  absl::StatusOr<ChatResponse> response = DecodeAnthropicResponse(R"({
    "id":"msg_2","type":"message","role":"assistant","model":"claude",
    "content":[{"type":"tool_use","id":"toolu_9","name":"location","input":{"city":"Rome"}}],
    "stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":4}})",
                                                                  "location");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->content, R"({"city":"Rome"})");
  EXPECT_THAT(response->tool_calls, IsEmpty());
  EXPECT_EQ(response->finish_reason, FinishReason::kStop);
}

TEST(AnthropicDecodeTest, MalformedBodiesAreBadResponses) {
  for (const char* body : {"", "{\"content\":[", "[]", "{}", R"({"content":"text"})"}) {
    EXPECT_EQ(ErrorKindOf(DecodeAnthropicResponse(body, "").status()), LlmErrorKind::kBadResponse)
        << body;
  }
}

TEST(AnthropicDecodeTest, FinishReasons) {
  EXPECT_EQ(AnthropicFinishReason("end_turn"), FinishReason::kStop);
  EXPECT_EQ(AnthropicFinishReason("stop_sequence"), FinishReason::kStop);
  EXPECT_EQ(AnthropicFinishReason("max_tokens"), FinishReason::kLength);
  EXPECT_EQ(AnthropicFinishReason("tool_use"), FinishReason::kToolCalls);
  EXPECT_EQ(AnthropicFinishReason("refusal"), FinishReason::kContentFilter);
  // Not done: the caller must send the turn back for the model to go on.
  EXPECT_EQ(AnthropicFinishReason("pause_turn"), FinishReason::kPauseTurn);
  EXPECT_EQ(FinishReasonName(FinishReason::kPauseTurn), "pause_turn");
  EXPECT_EQ(AnthropicFinishReason("new_reason"), FinishReason::kUnspecified);
}

using Event = std::pair<std::string, std::string>;

std::vector<StreamDelta> FeedAll(AnthropicStreamDecoder& decoder,
                                 const std::vector<Event>& events) {
  std::vector<StreamDelta> all;
  for (const auto& [type, data] : events) {
    std::vector<StreamDelta> deltas;
    absl::Status status = decoder.Consume(type, data, &deltas);
    EXPECT_TRUE(status.ok()) << status << " for " << data;
    all.insert(all.end(), deltas.begin(), deltas.end());
  }
  return all;
}

MATCHER_P(IsText, text, "") { return arg.tool_index == -1 && arg.text == text; }
MATCHER_P3(IsToolStart, index, id, name, "") {
  return arg.tool_index == index && arg.tool_call_id == id && arg.tool_name == name &&
         arg.arguments_fragment.empty() && arg.text.empty();
}
MATCHER_P2(IsFragment, index, fragment, "") {
  return arg.tool_index == index && arg.tool_call_id.empty() && arg.arguments_fragment == fragment;
}

const Event kMessageStart = {
    "message_start",
    R"({"type":"message_start","message":{"id":"msg_s","type":"message","role":"assistant",
        "model":"claude-sonnet-4","content":[],"stop_reason":null,
        "usage":{"input_tokens":12,"cache_creation_input_tokens":8,
                 "cache_read_input_tokens":200,"output_tokens":1}}})"};
const Event kMessageStop = {"message_stop", R"({"type":"message_stop"})"};

Event BlockStart(int index, const std::string& block) {
  return {"content_block_start", R"({"type":"content_block_start","index":)" +
                                     std::to_string(index) + R"(,"content_block":)" + block + "}"};
}
Event BlockDelta(int index, const std::string& delta) {
  return {"content_block_delta", R"({"type":"content_block_delta","index":)" +
                                     std::to_string(index) + R"(,"delta":)" + delta + "}"};
}
Event BlockStop(int index) {
  return {"content_block_stop",
          R"({"type":"content_block_stop","index":)" + std::to_string(index) + "}"};
}
Event JsonDelta(int index, const std::string& partial_json) {
  return BlockDelta(
      index, R"({"type":"input_json_delta","partial_json":)" + Json(partial_json).dump() + "}");
}
Event MessageDelta(const std::string& stop_reason, int output_tokens) {
  return {"message_delta", R"({"type":"message_delta","delta":{"stop_reason":")" + stop_reason +
                               R"(","stop_sequence":null},"usage":{"output_tokens":)" +
                               std::to_string(output_tokens) + "}}"};
}

TEST(AnthropicStreamDecoderTest, TextThenTwoToolUses) {
  AnthropicStreamDecoder decoder("");
  std::vector<StreamDelta> deltas = FeedAll(
      decoder,
      {kMessageStart,
       BlockStart(0, R"({"type":"text","text":""})"),
       {"ping", R"({"type":"ping"})"},
       BlockDelta(0, R"({"type":"text_delta","text":"Checking"})"),
       BlockDelta(0, R"({"type":"text_delta","text":" both."})"),
       BlockStop(0),
       BlockStart(1, R"({"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}})"),
       JsonDelta(1, ""),
       JsonDelta(1, R"({"ci)"),
       JsonDelta(1, R"(ty": "Pa)"),
       JsonDelta(1, R"(ris"})"),
       BlockStop(1),
       BlockStart(2, R"({"type":"tool_use","id":"toolu_2","name":"get_time","input":{}})"),
       BlockStop(2),
       MessageDelta("tool_use", 57)});
  EXPECT_FALSE(decoder.done());
  FeedAll(decoder, {kMessageStop});
  EXPECT_TRUE(decoder.done());
  // tool_index counts tool calls, not content blocks; a call without
  // fragments still ends with its (empty) input.
  EXPECT_THAT(
      deltas,
      ElementsAre(IsText("Checking"), IsText(" both."), IsToolStart(0, "toolu_1", "get_weather"),
                  IsFragment(0, R"({"ci)"), IsFragment(0, R"(ty": "Pa)"), IsFragment(0, R"(ris"})"),
                  IsToolStart(1, "toolu_2", "get_time"), IsFragment(1, "{}")));
  ChatResponse response = decoder.TakeResponse();
  EXPECT_EQ(response.id, "msg_s");
  EXPECT_EQ(response.model, "claude-sonnet-4");
  EXPECT_EQ(response.content, "Checking both.");
  EXPECT_THAT(response.tool_calls,
              ElementsAre(ToolCall{"toolu_1", "get_weather", R"({"city": "Paris"})"},
                          ToolCall{"toolu_2", "get_time", "{}"}));
  EXPECT_EQ(response.finish_reason, FinishReason::kToolCalls);
  // Normalised: every input token counts as prompt, cache reads as cached.
  EXPECT_EQ(response.usage, (TokenUsage{220, 57, 200, 8}));
}

TEST(AnthropicStreamDecoderTest, NullCountsInMessageDeltaKeepTheStartCounts) {
  AnthropicStreamDecoder decoder("");
  FeedAll(decoder,
          {kMessageStart,
           BlockStart(0, R"({"type":"text","text":"Hi"})"),
           BlockStop(0),
           {"message_delta",
            R"({"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},
                "usage":{"input_tokens":null,"cache_creation_input_tokens":null,
                         "cache_read_input_tokens":null,"output_tokens":7}})"},
           kMessageStop});
  EXPECT_EQ(decoder.TakeResponse().usage, (TokenUsage{220, 7, 200, 8}));
}

TEST(AnthropicStreamDecoderTest, ForcedToolStreamsAsText) {
  AnthropicStreamDecoder decoder("location");
  std::vector<StreamDelta> deltas = FeedAll(
      decoder, {kMessageStart,
                BlockStart(0, R"({"type":"tool_use","id":"toolu_9","name":"location","input":{}})"),
                JsonDelta(0, ""), JsonDelta(0, R"({"city")"), JsonDelta(0, R"(:"Rome"})"),
                BlockStop(0), MessageDelta("tool_use", 9), kMessageStop});
  EXPECT_THAT(deltas, ElementsAre(IsText(R"({"city")"), IsText(R"(:"Rome"})")));
  ChatResponse response = decoder.TakeResponse();
  EXPECT_EQ(response.content, R"({"city":"Rome"})");
  EXPECT_THAT(response.tool_calls, IsEmpty());
  EXPECT_EQ(response.finish_reason, FinishReason::kStop);
}

TEST(AnthropicStreamDecoderTest, EventTypeFromDataWhenTheEventHasNoName) {
  AnthropicStreamDecoder decoder("");
  std::vector<StreamDelta> deltas =
      FeedAll(decoder, {{"message", kMessageStart.second},
                        {"message", BlockStart(0, R"({"type":"text","text":"Hi"})").second},
                        {"message", kMessageStop.second}});
  EXPECT_THAT(deltas, ElementsAre(IsText("Hi")));
  EXPECT_TRUE(decoder.done());
}

TEST(AnthropicStreamDecoderTest, ThinkingAndUnknownEventsAreSkipped) {
  AnthropicStreamDecoder decoder("");
  std::vector<StreamDelta> deltas =
      FeedAll(decoder, {kMessageStart,
                        BlockStart(0, R"({"type":"thinking","thinking":""})"),
                        BlockDelta(0, R"({"type":"thinking_delta","thinking":"hmm"})"),
                        BlockDelta(0, R"({"type":"signature_delta","signature":"abc"})"),
                        BlockStop(0),
                        {"future_event", R"({"type":"future_event"})"},
                        BlockStart(1, R"({"type":"text","text":""})"),
                        BlockDelta(1, R"({"type":"text_delta","text":"Answer"})"),
                        BlockStop(1),
                        MessageDelta("end_turn", 3),
                        kMessageStop});
  EXPECT_THAT(deltas, ElementsAre(IsText("Answer")));
  EXPECT_EQ(decoder.TakeResponse().finish_reason, FinishReason::kStop);
}

TEST(AnthropicStreamDecoderTest, ErrorEvents) {
  AnthropicStreamDecoder decoder("");
  std::vector<StreamDelta> deltas;
  absl::Status overloaded = decoder.Consume(
      "error", R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})",
      &deltas);
  EXPECT_EQ(ErrorKindOf(overloaded), LlmErrorKind::kServerError);
  EXPECT_THAT(overloaded.message(), HasSubstr("Overloaded"));

  AnthropicStreamDecoder limited("");
  EXPECT_EQ(ErrorKindOf(limited.Consume(
                "error", R"({"type":"error","error":{"type":"rate_limit_error","message":"x"}})",
                &deltas)),
            LlmErrorKind::kRateLimited);
}

TEST(AnthropicStreamDecoderTest, MalformedEventsAreBadResponses) {
  std::vector<StreamDelta> deltas;
  AnthropicStreamDecoder decoder("");
  EXPECT_EQ(ErrorKindOf(decoder.Consume("content_block_delta", R"({"type":"content_bl)", &deltas)),
            LlmErrorKind::kBadResponse);
  EXPECT_EQ(
      ErrorKindOf(decoder.Consume("content_block_delta", BlockDelta(4, "{}").second, &deltas)),
      LlmErrorKind::kBadResponse);
  EXPECT_EQ(ErrorKindOf(decoder.Consume("message_start", R"({"type":"message_start"})", &deltas)),
            LlmErrorKind::kBadResponse);
}

}  // namespace
}  // namespace omniforge::llm
