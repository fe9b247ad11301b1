#include "libs/llm/openai_wire.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "libs/llm/errors.h"
#include "libs/llm/wire_json.h"

namespace omniforge::llm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Json = nlohmann::json;

Json Encode(const ChatRequest& request, bool stream = false) {
  absl::StatusOr<std::string> body = EncodeOpenAiRequest(request, stream);
  EXPECT_TRUE(body.ok()) << body.status();
  return body.ok() ? Json::parse(*body) : Json();
}

ChatRequest WeatherRequest() {
  ChatRequest request;
  request.model = "gpt-4o-mini";
  request.messages = {{.role = Role::kSystem, .content = "Be brief."},
                      {.role = Role::kUser, .content = "Weather in Paris?"}};
  request.tools = {
      {.name = "get_weather",
       .description = "Current weather",
       .parameters_schema =
           R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})"}};
  return request;
}

TEST(OpenAiEncodeTest, ConversationWithToolTurn) {
  ChatRequest request = WeatherRequest();
  request.messages.push_back(
      {.role = Role::kAssistant, .tool_calls = {{"call_1", "get_weather", R"({"city":"Paris"})"}}});
  request.messages.push_back(
      {.role = Role::kTool, .content = R"({"temp_c":18})", .tool_call_id = "call_1"});
  request.messages.push_back({.role = Role::kAssistant, .content = "18 °C."});
  request.temperature = 0.2;
  request.max_tokens = 300;

  Json body = Encode(request);
  EXPECT_EQ(body["model"], "gpt-4o-mini");
  EXPECT_EQ(body["temperature"], 0.2);
  EXPECT_EQ(body["max_tokens"], 300);
  EXPECT_FALSE(body.contains("stream"));
  EXPECT_EQ(body["messages"], Json::parse(R"([
    {"role":"system","content":"Be brief."},
    {"role":"user","content":"Weather in Paris?"},
    {"role":"assistant","content":null,"tool_calls":[
      {"id":"call_1","type":"function",
       "function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
    {"role":"tool","tool_call_id":"call_1","content":"{\"temp_c\":18}"},
    {"role":"assistant","content":"18 °C."}])"));
  EXPECT_EQ(body["tools"], Json::parse(R"([{"type":"function","function":{
    "name":"get_weather","description":"Current weather",
    "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}])"));
  EXPECT_EQ(body["tool_choice"], "auto");
}

// Message text is written straight into the request: exactly as the JSON
// library writes it, for every kind of character (ill-formed UTF-8 is
// replaced as the library replaces it).
TEST(OpenAiEncodeTest, TextIsEscapedExactlyAsTheJsonLibraryWritesIt) {
  std::string every_byte;
  for (int c = 0; c < 256; ++c) every_byte += static_cast<char>(c);
  for (const std::string& text :
       {std::string(), std::string("plain words"), std::string("quote \" and \\ backslash"),
        std::string("tab\tnew\nline\rcr\bback\fform"), std::string("\x01\x1f\x7f", 3),
        std::string("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), std::string("nul \0 inside", 12),
        std::string("bad \xff\xfe utf-8"), std::string("cut \xe2\x82"), every_byte}) {
    std::string written;
    wire_internal::AppendJsonString(written, text);
    EXPECT_EQ(written, wire_internal::DumpJson(wire_internal::Json(text))) << text;
  }
}

// The whole request survives the trip: every message, tool call and id is
// read back as it was sent.
TEST(OpenAiEncodeTest, MessagesAreReadBackAsTheyWereSent) {
  ChatRequest request = WeatherRequest();
  request.messages.push_back(
      {.role = Role::kAssistant,
       .content = "",
       .tool_calls = {{"call \"1\"", "get_weather", R"({"city":"Paris"})"}}});
  request.messages.push_back(
      {.role = Role::kTool, .content = "18\u00b0C\nsunny", .tool_call_id = "call \"1\""});
  request.messages.push_back({.role = Role::kAssistant, .content = "It is \"sunny\"."});
  const Json body = Encode(request, /*stream=*/true);
  ASSERT_EQ(body["messages"].size(), 5u);
  EXPECT_EQ(body["model"], "gpt-4o-mini");
  EXPECT_EQ(body["messages"][0], (Json{{"role", "system"}, {"content", "Be brief."}}));
  EXPECT_EQ(body["messages"][1], (Json{{"role", "user"}, {"content", "Weather in Paris?"}}));
  EXPECT_TRUE(body["messages"][2]["content"].is_null());
  EXPECT_EQ(body["messages"][2]["tool_calls"][0]["id"], "call \"1\"");
  EXPECT_EQ(body["messages"][2]["tool_calls"][0]["function"]["arguments"], R"({"city":"Paris"})");
  EXPECT_EQ(
      body["messages"][3],
      (Json{{"role", "tool"}, {"tool_call_id", "call \"1\""}, {"content", "18\u00b0C\nsunny"}}));
  EXPECT_EQ(body["messages"][4]["content"], "It is \"sunny\".");
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["tools"][0]["function"]["name"], "get_weather");
}

TEST(OpenAiEncodeTest, UnsetOptionalsAreOmitted) {
  ChatRequest request;
  request.model = "m";
  request.messages = {{.role = Role::kUser, .content = "hi"}};
  Json body = Encode(request);
  for (const char* key : {"tools", "tool_choice", "response_format", "temperature", "max_tokens",
                          "max_completion_tokens"}) {
    EXPECT_FALSE(body.contains(key)) << key;
  }
}

TEST(OpenAiEncodeTest, TokenLimitTravelsInTheChosenField) {
  ChatRequest request;
  request.model = "o3";
  request.messages = {{.role = Role::kUser, .content = "hi"}};
  request.max_tokens = 300;
  absl::StatusOr<std::string> body =
      EncodeOpenAiRequest(request, /*stream=*/false, OpenAiTokenLimitField::kMaxCompletionTokens);
  ASSERT_TRUE(body.ok()) << body.status();
  Json parsed = Json::parse(*body);
  EXPECT_EQ(parsed["max_completion_tokens"], 300);
  EXPECT_FALSE(parsed.contains("max_tokens"));
}

TEST(OpenAiEncodeTest, SchemaKeyOrderIsKept) {
  // Models emit structured output in schema order; the prompt cache needs
  // identical bytes each time.
  ChatRequest request = WeatherRequest();
  request.tools[0].parameters_schema = R"({"type":"object","properties":{"z":{},"a":{}}})";
  absl::StatusOr<std::string> body = EncodeOpenAiRequest(request, false);
  ASSERT_TRUE(body.ok());
  EXPECT_THAT(*body, HasSubstr(R"("parameters":{"type":"object","properties":{"z":{},"a":{}}})"));
}

TEST(OpenAiEncodeTest, EveryToolOfACatalogGoesOutWithItsSchema) {
  ChatRequest request = WeatherRequest();
  // A schema the fast check leaves to the full parser (an integer beyond
  // 64 bits, nesting deeper than it follows) is still sent, as the parser
  // writes it.
  std::string deep = R"({"type":"object","x":)";
  for (int i = 0; i < 70; ++i) deep += "[";
  for (int i = 0; i < 70; ++i) deep += "]";
  deep += "}";
  request.tools.push_back(
      {.name = "huge", .parameters_schema = R"({"maximum":123456789012345678901234})"});
  request.tools.push_back(
      {.name = "deep", .description = "nested \"quotes\"", .parameters_schema = deep});
  request.tools.push_back({.name = "bare"});
  const Json body = Encode(request);
  ASSERT_EQ(body["tools"].size(), 4u);
  EXPECT_EQ(body["tools"][0]["function"]["parameters"]["required"], Json::array({"city"}));
  EXPECT_EQ(body["tools"][1]["function"]["parameters"],
            Json::parse(R"({"maximum":123456789012345678901234})"));
  EXPECT_EQ(body["tools"][2]["function"]["description"], "nested \"quotes\"");
  EXPECT_EQ(body["tools"][2]["function"]["parameters"], Json::parse(deep));
  EXPECT_EQ(body["tools"][3], Json::parse(R"({"type":"function","function":{"name":"bare"}})"));
  EXPECT_EQ(body["tool_choice"], "auto");
}

TEST(OpenAiEncodeTest, ToolChoiceVariants) {
  ChatRequest request = WeatherRequest();
  request.tool_choice = {ToolChoiceMode::kNone};
  EXPECT_EQ(Encode(request)["tool_choice"], "none");
  request.tool_choice = {ToolChoiceMode::kRequired};
  EXPECT_EQ(Encode(request)["tool_choice"], "required");
  request.tool_choice = {ToolChoiceMode::kNamed, "get_weather"};
  EXPECT_EQ(Encode(request)["tool_choice"],
            Json::parse(R"({"type":"function","function":{"name":"get_weather"}})"));
}

TEST(OpenAiEncodeTest, InvalidToolSetupsAreRejected) {
  ChatRequest request = WeatherRequest();
  request.tool_choice = {ToolChoiceMode::kNamed, "book_flight"};
  EXPECT_EQ(ErrorKindOf(EncodeOpenAiRequest(request, false).status()),
            LlmErrorKind::kInvalidRequest);

  request = WeatherRequest();
  request.tools[0].parameters_schema = "{not json";
  EXPECT_EQ(ErrorKindOf(EncodeOpenAiRequest(request, false).status()),
            LlmErrorKind::kInvalidRequest);
  for (const char* not_an_object :
       {R"(["type","object"])", R"({"type":"object"} trailing)", "{\"a\":\"\xC3\x28\"}"}) {
    request = WeatherRequest();
    request.tools[0].parameters_schema = not_an_object;
    EXPECT_EQ(ErrorKindOf(EncodeOpenAiRequest(request, false).status()),
              LlmErrorKind::kInvalidRequest)
        << not_an_object;
  }

  request = WeatherRequest();
  request.tools.clear();
  request.tool_choice = {ToolChoiceMode::kRequired};
  EXPECT_EQ(ErrorKindOf(EncodeOpenAiRequest(request, false).status()),
            LlmErrorKind::kInvalidRequest);
}

TEST(OpenAiEncodeTest, ResponseFormatAndStreamOptions) {
  ChatRequest request;
  request.model = "m";
  request.messages = {{.role = Role::kUser, .content = "Plan it"}};
  request.response_format =
      ResponseFormat{.name = "plan", .schema = R"({"type":"object"})", .strict = false};
  Json body = Encode(request, /*stream=*/true);
  EXPECT_EQ(body["response_format"], Json::parse(R"({"type":"json_schema","json_schema":{
    "name":"plan","schema":{"type":"object"},"strict":false}})"));
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"], Json::parse(R"({"include_usage":true})"));

  request.response_format->schema = "[]";
  EXPECT_EQ(ErrorKindOf(EncodeOpenAiRequest(request, false).status()),
            LlmErrorKind::kInvalidRequest);
}

TEST(OpenAiDecodeTest, TextAnswerWithUsage) {
  absl::StatusOr<ChatResponse> response = DecodeOpenAiResponse(R"({
    "id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini-2024",
    "choices":[{"index":0,"message":{"role":"assistant","content":"Hello","refusal":null},
                "finish_reason":"stop"}],
    "usage":{"prompt_tokens":20,"completion_tokens":3,"total_tokens":23,
             "prompt_tokens_details":{"cached_tokens":16},
             "completion_tokens_details":{"reasoning_tokens":0}}})");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->id, "chatcmpl-1");
  EXPECT_EQ(response->model, "gpt-4o-mini-2024");
  EXPECT_EQ(response->content, "Hello");
  EXPECT_EQ(response->finish_reason, FinishReason::kStop);
  EXPECT_EQ(response->usage, (TokenUsage{20, 3, 16}));
  EXPECT_EQ(response->time_to_first_token_us, -1);
}

TEST(OpenAiDecodeTest, ToolCallAnswer) {
  absl::StatusOr<ChatResponse> response = DecodeOpenAiResponse(R"({
    "id":"x","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,
      "tool_calls":[{"id":"call_a","type":"function",
                     "function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
                    {"id":"call_b","type":"function",
                     "function":{"name":"get_time","arguments":"{}"}}]},
      "finish_reason":"tool_calls"}]})");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->content, "");
  EXPECT_THAT(response->tool_calls,
              ElementsAre(ToolCall{"call_a", "get_weather", R"({"city":"Paris"})"},
                          ToolCall{"call_b", "get_time", "{}"}));
  EXPECT_EQ(response->finish_reason, FinishReason::kToolCalls);
}

TEST(OpenAiDecodeTest, RefusalIsContentFilter) {
  absl::StatusOr<ChatResponse> response = DecodeOpenAiResponse(R"({"choices":[{"index":0,
    "message":{"role":"assistant","content":null,"refusal":"I can't help with that."},
    "finish_reason":"stop"}]})");
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(response->finish_reason, FinishReason::kContentFilter);
  EXPECT_EQ(response->content, "");
}

TEST(OpenAiDecodeTest, MalformedBodiesAreBadResponses) {
  for (const char* body :
       {"", R"({"choices":[{"message":{"content":"cut)", "[]", "{}", R"({"choices":[]})",
        R"({"choices":[{"index":0}]})", R"({"choices":[{"message":{"tool_calls":{}}}]})"}) {
    EXPECT_EQ(ErrorKindOf(DecodeOpenAiResponse(body).status()), LlmErrorKind::kBadResponse) << body;
  }
}

TEST(OpenAiDecodeTest, FinishReasons) {
  EXPECT_EQ(OpenAiFinishReason("stop"), FinishReason::kStop);
  EXPECT_EQ(OpenAiFinishReason("length"), FinishReason::kLength);
  EXPECT_EQ(OpenAiFinishReason("tool_calls"), FinishReason::kToolCalls);
  EXPECT_EQ(OpenAiFinishReason("function_call"), FinishReason::kToolCalls);
  EXPECT_EQ(OpenAiFinishReason("content_filter"), FinishReason::kContentFilter);
  EXPECT_EQ(OpenAiFinishReason("something_new"), FinishReason::kUnspecified);
}

std::string Chunk(const std::string& delta, const std::string& finish_reason = "null") {
  return R"({"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"gpt-4o",)"
         R"("choices":[{"index":0,"delta":)" +
         delta + R"(,"finish_reason":)" + finish_reason + R"(}],"usage":null})";
}

// Feeds `events` and returns every delta; fails the test on a decode error.
std::vector<StreamDelta> FeedAll(OpenAiStreamDecoder& decoder,
                                 const std::vector<std::string>& events) {
  std::vector<StreamDelta> all;
  for (const std::string& data : events) {
    std::vector<StreamDelta> deltas;
    absl::Status status = decoder.Consume(data, &deltas);
    EXPECT_TRUE(status.ok()) << status << " for " << data;
    all.insert(all.end(), deltas.begin(), deltas.end());
  }
  return all;
}

MATCHER_P(IsText, text, "") { return arg.tool_index == -1 && arg.text == text; }
MATCHER_P3(IsToolStart, index, id, name, "") {
  return arg.tool_index == index && arg.tool_call_id == id && arg.tool_name == name &&
         arg.arguments_fragment.empty();
}
MATCHER_P2(IsFragment, index, fragment, "") {
  return arg.tool_index == index && arg.tool_call_id.empty() && arg.tool_name.empty() &&
         arg.arguments_fragment == fragment;
}

TEST(OpenAiStreamDecoderTest, TextStreamWithUsage) {
  OpenAiStreamDecoder decoder;
  std::vector<StreamDelta> deltas = FeedAll(
      decoder,
      {Chunk(R"({"role":"assistant","content":"","refusal":null})"), Chunk(R"({"content":"Hel"})"),
       Chunk(R"({"content":"lo"})"), Chunk("{}", R"("stop")"),
       R"({"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"gpt-4o",
           "choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11,
           "prompt_tokens_details":{"cached_tokens":4},
           "completion_tokens_details":{"reasoning_tokens":0}}})"});
  EXPECT_FALSE(decoder.done());
  FeedAll(decoder, {"[DONE]"});
  EXPECT_TRUE(decoder.done());
  EXPECT_THAT(deltas, ElementsAre(IsText("Hel"), IsText("lo")));
  ChatResponse response = decoder.TakeResponse();
  EXPECT_EQ(response.id, "chatcmpl-9");
  EXPECT_EQ(response.model, "gpt-4o");
  EXPECT_EQ(response.content, "Hello");
  EXPECT_EQ(response.finish_reason, FinishReason::kStop);
  EXPECT_EQ(response.usage, (TokenUsage{9, 2, 4}));
}

TEST(OpenAiStreamDecoderTest, ParallelToolCallsInterleavedByIndex) {
  // As OpenAI streams them: the first call's header rides on the role chunk,
  // argument fragments end inside keys, strings and escapes.
  OpenAiStreamDecoder decoder;
  std::vector<StreamDelta> deltas = FeedAll(
      decoder,
      {Chunk(R"({"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_A",)"
             R"("type":"function","function":{"name":"get_weather","arguments":""}}]})"),
       Chunk(R"({"tool_calls":[{"index":0,"function":{"arguments":"{\"ci"}}]})"),
       Chunk(R"({"tool_calls":[{"index":1,"id":"call_B","type":"function",)"
             R"("function":{"name":"get_time","arguments":""}}]})"),
       Chunk(R"({"tool_calls":[{"index":1,"function":{"arguments":"{\"tz\":\"Europe\\/"}}]})"),
       Chunk(R"({"tool_calls":[{"index":0,"function":{"arguments":"ty\":\"Par"}}]})"),
       Chunk(R"({"tool_calls":[{"index":0,"function":{"arguments":"is \\\""}}]})"),
       Chunk(R"({"tool_calls":[{"index":1,"function":{"arguments":"Paris\"}"}}]})"),
       Chunk(R"({"tool_calls":[{"index":0,"function":{"arguments":"\"}"}}]})"),
       Chunk("{}", R"("tool_calls")"), "[DONE]"});
  EXPECT_THAT(deltas,
              ElementsAre(IsToolStart(0, "call_A", "get_weather"), IsFragment(0, R"({"ci)"),
                          IsToolStart(1, "call_B", "get_time"), IsFragment(1, R"({"tz":"Europe\/)"),
                          IsFragment(0, R"(ty":"Par)"), IsFragment(0, R"(is \")"),
                          IsFragment(1, R"(Paris"})"), IsFragment(0, R"("})")));
  ChatResponse response = decoder.TakeResponse();
  EXPECT_THAT(response.tool_calls,
              ElementsAre(ToolCall{"call_A", "get_weather", R"({"city":"Paris \""})"},
                          ToolCall{"call_B", "get_time", R"({"tz":"Europe\/Paris"})"}));
  for (const ToolCall& call : response.tool_calls) {
    EXPECT_TRUE(Json::accept(call.arguments)) << call.arguments;
  }
  EXPECT_EQ(response.finish_reason, FinishReason::kToolCalls);
  EXPECT_EQ(response.content, "");
}

TEST(OpenAiStreamDecoderTest, WireIndexNeedNotStartAtZero) {
  OpenAiStreamDecoder decoder;
  std::vector<StreamDelta> deltas = FeedAll(
      decoder,
      {Chunk(R"({"tool_calls":[{"index":3,"id":"c","function":{"name":"f","arguments":"{}"}}]})")});
  ASSERT_EQ(deltas.size(), 1u);
  EXPECT_EQ(deltas[0].tool_index, 0);
  EXPECT_EQ(deltas[0].arguments_fragment, "{}");
}

TEST(OpenAiStreamDecoderTest, StreamWithoutDoneIsNotComplete) {
  OpenAiStreamDecoder decoder;
  FeedAll(decoder, {Chunk(R"({"content":"Hi"})"), Chunk("{}", R"("stop")")});
  EXPECT_FALSE(decoder.done());
}

TEST(OpenAiStreamDecoderTest, MalformedChunkIsBadResponse) {
  OpenAiStreamDecoder decoder;
  std::vector<StreamDelta> deltas;
  std::string cut = Chunk(R"({"content":"Hi"})");
  cut.resize(cut.size() / 2);
  EXPECT_EQ(ErrorKindOf(decoder.Consume(cut, &deltas)), LlmErrorKind::kBadResponse);
  EXPECT_EQ(ErrorKindOf(decoder.Consume("42", &deltas)), LlmErrorKind::kBadResponse);
  EXPECT_EQ(ErrorKindOf(decoder.Consume(R"({"choices":{}})", &deltas)), LlmErrorKind::kBadResponse);
}

TEST(OpenAiStreamDecoderTest, ErrorObjectMidStreamIsServerError) {
  OpenAiStreamDecoder decoder;
  std::vector<StreamDelta> deltas;
  absl::Status status = decoder.Consume(
      R"({"error":{"message":"The server had an error","type":"server_error"}})", &deltas);
  EXPECT_EQ(ErrorKindOf(status), LlmErrorKind::kServerError);
  EXPECT_THAT(status.message(), HasSubstr("The server had an error"));
}

TEST(OpenAiStreamDecoderTest, DataAfterDoneIsIgnored) {
  OpenAiStreamDecoder decoder;
  std::vector<StreamDelta> deltas = FeedAll(decoder, {"[DONE]", Chunk(R"({"content":"late"})")});
  EXPECT_TRUE(deltas.empty());
  EXPECT_EQ(decoder.TakeResponse().content, "");
}

}  // namespace
}  // namespace omniforge::llm
