#include "libs/llm/http_provider.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "libs/core/clock.h"
#include "libs/llm/errors.h"
#include "libs/trace/span.h"

namespace omniforge::llm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Optional;
using Json = nlohmann::json;

constexpr char kApiKey[] = "sk-test-SECRET-123";

// Replays a canned answer: the head, then the body in the given pieces, then
// `end` (OK for a clean end, an error for a failure after the last piece).
class ReplayTransport final : public HttpTransport {
 public:
  int status = 200;
  std::map<std::string, std::string> headers;
  std::vector<std::string> pieces;
  absl::Status end = absl::OkStatus();
  HttpRequest last_request;
  int calls = 0;

  absl::Status Post(const HttpRequest& request,
                    const std::function<void(const HttpResponseHead&)>& on_head,
                    const std::function<bool(std::string_view)>& on_body) override {
    last_request = request;
    ++calls;
    on_head({status, headers});
    for (const std::string& piece : pieces) {
      if (!on_body(piece)) return LlmError(LlmErrorKind::kCancelled, "aborted by receiver");
    }
    return end;
  }

  // The body split into one-byte pieces, the harshest chunking there is.
  void SetBodyBytewise(const std::string& body) {
    pieces.clear();
    for (char c : body) pieces.emplace_back(1, c);
  }

  std::string Header(const std::string& name) const {
    for (const auto& [key, value] : last_request.headers) {
      if (key == name) return value;
    }
    return "<absent>";
  }
};

ProviderOptions Options(ProviderOptions::Api api) {
  ProviderOptions options;
  options.name = api == ProviderOptions::Api::kOpenAi ? "openai" : "anthropic";
  options.api = api;
  options.base_url = api == ProviderOptions::Api::kOpenAi ? "https://api.example/v1/"
                                                          : "https://anthropic.example";
  options.api_key = kApiKey;
  options.extra_headers = {{"x-team", "core"}};
  return options;
}

ChatRequest Hello() {
  ChatRequest request;
  request.model = "model-1";
  request.messages = {{.role = Role::kUser, .content = "Say hello"}};
  return request;
}

CallContext Context() {
  CallContext context;
  context.operation_type = "intent_analysis";
  return context;
}

constexpr char kOpenAiAnswer[] =
    R"({"id":"chatcmpl-1","object":"chat.completion","model":"model-1",
        "choices":[{"index":0,"message":{"role":"assistant","content":"Hello!"},
                    "finish_reason":"stop"}],
        "usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}})";

std::string OpenAiChunk(const std::string& delta, const std::string& finish = "null") {
  return "data: " +
         Json{{"id", "chatcmpl-2"},
              {"object", "chat.completion.chunk"},
              {"model", "model-1"},
              {"choices",
               {{{"index", 0},
                 {"delta", Json::parse(delta)},
                 {"finish_reason", Json::parse(finish)}}}}}
             .dump() +
         "\n\n";
}

const std::string kRoleChunk = OpenAiChunk(R"({"role":"assistant","content":""})");
const std::string kOpenAiStream =
    kRoleChunk + OpenAiChunk(R"({"content":"Hel"})") + OpenAiChunk(R"({"content":"lo!"})") +
    OpenAiChunk("{}", R"("stop")") +
    "data: {\"id\":\"chatcmpl-2\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,"
    "\"completion_tokens\":2,\"prompt_tokens_details\":{\"cached_tokens\":1}}}\n\n" +
    "data: [DONE]\n\n";

class HttpProviderTest : public ::testing::Test {
 protected:
  std::shared_ptr<ReplayTransport> transport_ = std::make_shared<ReplayTransport>();
  std::unique_ptr<ChatModel> openai_ =
      MakeHttpProvider(Options(ProviderOptions::Api::kOpenAi), transport_);
  std::unique_ptr<ChatModel> anthropic_ =
      MakeHttpProvider(Options(ProviderOptions::Api::kAnthropic), transport_);

  // Streams with `model`, collecting the deltas' text and tool fragments.
  absl::StatusOr<ChatResponse> StreamFrom(ChatModel& model, std::vector<std::string>* seen,
                                          const CallContext& context = Context()) {
    return model.Stream(Hello(), context, [seen](const StreamDelta& delta) {
      seen->push_back(delta.tool_index < 0 ? delta.text : delta.arguments_fragment);
      return true;
    });
  }
};

TEST_F(HttpProviderTest, OpenAiCompleteSendsTheRightRequest) {
  transport_->pieces = {kOpenAiAnswer};
  const int64_t before = core::NowMicros();
  absl::StatusOr<ChatResponse> response = openai_->Complete(Hello(), Context());
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->content, "Hello!");
  EXPECT_EQ(response->usage, (TokenUsage{5, 2, 0}));

  const HttpRequest& sent = transport_->last_request;
  EXPECT_EQ(sent.url, "https://api.example/v1/chat/completions");
  EXPECT_EQ(transport_->Header("authorization"), std::string("Bearer ") + kApiKey);
  EXPECT_EQ(transport_->Header("content-type"), "application/json");
  EXPECT_EQ(transport_->Header("x-omniforge-operation"), "intent_analysis");
  EXPECT_EQ(transport_->Header("x-team"), "core");
  EXPECT_EQ(transport_->Header("x-api-key"), "<absent>");
  Json body = Json::parse(sent.body);
  EXPECT_EQ(body["max_tokens"], 1024);  // the provider default fills in 0
  EXPECT_FALSE(body.contains("stream"));
  // No call deadline: the per-attempt timeout bounds the attempt.
  EXPECT_GE(sent.deadline_micros, before + 60'000'000);
  EXPECT_LE(sent.deadline_micros, core::NowMicros() + 60'000'000);
  EXPECT_EQ(sent.connect_timeout_micros, 5'000'000);
}

TEST_F(HttpProviderTest, OpenAiTokenLimitFieldIsConfigurable) {
  ProviderOptions options = Options(ProviderOptions::Api::kOpenAi);
  options.openai_token_limit_field = OpenAiTokenLimitField::kMaxCompletionTokens;
  std::unique_ptr<ChatModel> provider = MakeHttpProvider(std::move(options), transport_);
  transport_->pieces = {kOpenAiAnswer};
  ASSERT_TRUE(provider->Complete(Hello(), Context()).ok());
  Json body = Json::parse(transport_->last_request.body);
  EXPECT_EQ(body["max_completion_tokens"], 1024);
  EXPECT_FALSE(body.contains("max_tokens"));
}

TEST_F(HttpProviderTest, TheCallersModelAndTokenLimitGoInTheBodyAndTheRequestStaysAsItIs) {
  // LlmClient names each target's model in the call's context; the request
  // itself (the whole history) is sent as the caller built it.
  for (const auto& [provider, answer] :
       {std::pair{openai_.get(), std::string(kOpenAiAnswer)},
        std::pair{anthropic_.get(),
                  std::string(R"({"id":"msg_1","type":"message","model":"claude","content":[
                      {"type":"text","text":"hi"}],"stop_reason":"end_turn",
                      "usage":{"input_tokens":4,"output_tokens":3}})")}}) {
    transport_->pieces = {answer};
    const ChatRequest request = Hello();
    CallContext context = Context();
    context.model = "model-2";
    ASSERT_TRUE(provider->Complete(request, context).ok());
    Json body = Json::parse(transport_->last_request.body);
    EXPECT_EQ(body["model"], "model-2");
    EXPECT_EQ(body["max_tokens"], 1024);
    EXPECT_EQ(request.model, "model-1");
    EXPECT_EQ(request.max_tokens, 0);

    // Without one, the request's own model is sent; its own limit wins.
    ChatRequest limited = Hello();
    limited.max_tokens = 77;
    transport_->pieces = {answer};
    ASSERT_TRUE(provider->Complete(limited, Context()).ok());
    body = Json::parse(transport_->last_request.body);
    EXPECT_EQ(body["model"], "model-1");
    EXPECT_EQ(body["max_tokens"], 77);
  }
}

TEST_F(HttpProviderTest, SoonerCallDeadlineBoundsTheAttempt) {
  transport_->pieces = {kOpenAiAnswer};
  CallContext context = Context();
  context.deadline_micros = core::NowMicros() + 1'000'000;
  ASSERT_TRUE(openai_->Complete(Hello(), context).ok());
  EXPECT_EQ(transport_->last_request.deadline_micros, context.deadline_micros);
}

TEST_F(HttpProviderTest, OperationHeaderIsOmittedWhenUnset) {
  transport_->pieces = {kOpenAiAnswer};
  ASSERT_TRUE(openai_->Complete(Hello(), CallContext()).ok());
  EXPECT_EQ(transport_->Header("x-omniforge-operation"), "<absent>");
}

TEST_F(HttpProviderTest, AnthropicCompleteWithStructuredOutput) {
  transport_->pieces = {R"({"id":"msg_1","type":"message","model":"claude","content":[
      {"type":"tool_use","id":"toolu_1","name":"answer","input":{"greeting":"hi"}}],
      "stop_reason":"tool_use","usage":{"input_tokens":4,"cache_read_input_tokens":6,
      "output_tokens":3}})"};
  ChatRequest request = Hello();
  request.response_format = ResponseFormat{.name = "answer", .schema = R"({"type":"object"})"};
  absl::StatusOr<ChatResponse> response = anthropic_->Complete(request, Context());
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->content, R"({"greeting":"hi"})");
  EXPECT_EQ(response->finish_reason, FinishReason::kStop);
  EXPECT_EQ(response->usage, (TokenUsage{10, 3, 6}));

  EXPECT_EQ(transport_->last_request.url, "https://anthropic.example/v1/messages");
  EXPECT_EQ(transport_->Header("x-api-key"), kApiKey);
  EXPECT_EQ(transport_->Header("anthropic-version"), "2023-06-01");
  EXPECT_EQ(transport_->Header("authorization"), "<absent>");
  EXPECT_EQ(Json::parse(transport_->last_request.body)["max_tokens"], 1024);
}

TEST_F(HttpProviderTest, OpenAiStreamAssemblesTheAnswer) {
  transport_->SetBodyBytewise(kOpenAiStream);
  std::vector<std::string> seen;
  absl::StatusOr<ChatResponse> response = StreamFrom(*openai_, &seen);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_THAT(seen, ElementsAre("Hel", "lo!"));
  EXPECT_EQ(response->content, "Hello!");
  EXPECT_EQ(response->finish_reason, FinishReason::kStop);
  EXPECT_EQ(response->usage, (TokenUsage{5, 2, 1}));
  EXPECT_GE(response->time_to_first_token_us, 0);
  Json body = Json::parse(transport_->last_request.body);
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(transport_->Header("accept"), "text/event-stream");
}

TEST_F(HttpProviderTest, AnthropicStreamAssemblesTheAnswer) {
  transport_->pieces = {
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_2\","
      "\"model\":\"claude\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n",
      "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
      "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: ping\ndata: {\"type\":\"p",
      "ing\"}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
      "\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n",
      "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
      "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
      "\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n"
      "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"};
  std::vector<std::string> seen;
  absl::StatusOr<ChatResponse> response = StreamFrom(*anthropic_, &seen);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_THAT(seen, ElementsAre("Hi"));
  EXPECT_EQ(response->content, "Hi");
  EXPECT_EQ(response->usage, (TokenUsage{3, 2, 0}));
}

TEST_F(HttpProviderTest, StreamCutBeforeFirstDeltaIsARetryableConnectionError) {
  std::vector<std::string> seen;
  // The connection closes cleanly after the role chunk: no output, no [DONE].
  transport_->pieces = {kRoleChunk};
  absl::StatusOr<ChatResponse> response = StreamFrom(*openai_, &seen);
  EXPECT_EQ(ErrorKindOf(response.status()), LlmErrorKind::kConnection);
  EXPECT_TRUE(IsRetryable(ErrorKindOf(response.status())));

  // The transport reports the cut itself (a chunked body ended early).
  transport_->end = LlmError(LlmErrorKind::kConnection, "transfer closed");
  response = StreamFrom(*openai_, &seen);
  EXPECT_EQ(ErrorKindOf(response.status()), LlmErrorKind::kConnection);
  EXPECT_THAT(seen, ::testing::IsEmpty());
}

TEST_F(HttpProviderTest, StreamCutAfterADeltaIsBroken) {
  std::vector<std::string> seen;
  transport_->pieces = {kRoleChunk + OpenAiChunk(R"({"content":"Hel"})")};
  absl::StatusOr<ChatResponse> response = StreamFrom(*openai_, &seen);
  EXPECT_EQ(ErrorKindOf(response.status()), LlmErrorKind::kStreamBroken);
  EXPECT_FALSE(IsRetryable(ErrorKindOf(response.status())));
  EXPECT_THAT(seen, ElementsAre("Hel"));

  // Even when the transport calls it a timeout: retrying would repeat output.
  transport_->end = LlmError(LlmErrorKind::kTimeout, "deadline");
  EXPECT_EQ(ErrorKindOf(StreamFrom(*openai_, &seen).status()), LlmErrorKind::kStreamBroken);
}

TEST_F(HttpProviderTest, FailedStreamCarriesTheUsageItWasBilled) {
  std::vector<std::string> seen;
  // OpenAI: everything up to the usage chunk, then the connection drops
  // before [DONE].
  const std::string until_usage = kOpenAiStream.substr(0, kOpenAiStream.find("data: [DONE]"));
  transport_->pieces = {until_usage};
  transport_->end = LlmError(LlmErrorKind::kConnection, "transfer closed");
  absl::StatusOr<ChatResponse> response = StreamFrom(*openai_, &seen);
  EXPECT_EQ(ErrorKindOf(response.status()), LlmErrorKind::kStreamBroken);
  EXPECT_THAT(BilledUsageOf(response.status()), Optional(TokenUsage{5, 2, 1}));

  // Anthropic reports the input at message_start: an overload error after it
  // still bills those tokens.
  transport_->end = absl::OkStatus();
  transport_->pieces = {
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\","
      "\"usage\":{\"input_tokens\":7,\"cache_creation_input_tokens\":3,\"output_tokens\":1}}}\n\n"
      "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
      "\"message\":\"Overloaded\"}}\n\n"};
  response = StreamFrom(*anthropic_, &seen);
  EXPECT_EQ(ErrorKindOf(response.status()), LlmErrorKind::kServerError);
  EXPECT_THAT(
      BilledUsageOf(response.status()),
      Optional(TokenUsage{.prompt_tokens = 10, .completion_tokens = 1, .cache_write_tokens = 3}));

  // Nothing reported, nothing attached.
  transport_->pieces = {kRoleChunk};
  EXPECT_EQ(BilledUsageOf(StreamFrom(*openai_, &seen).status()), std::nullopt);
}

TEST_F(HttpProviderTest, TimeoutBeforeOutputStaysATimeout) {
  std::vector<std::string> seen;
  transport_->pieces = {kRoleChunk};
  transport_->end = LlmError(LlmErrorKind::kTimeout, "deadline");
  EXPECT_EQ(ErrorKindOf(StreamFrom(*openai_, &seen).status()), LlmErrorKind::kTimeout);
}

TEST_F(HttpProviderTest, AnthropicErrorEventBeforeAndAfterOutput) {
  const std::string error_event =
      "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
      "\"message\":\"Overloaded\"}}\n\n";
  const std::string start =
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\"}}\n\n"
      "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
      "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n";
  const std::string delta =
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
      "\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n";
  std::vector<std::string> seen;
  transport_->pieces = {start + error_event};
  absl::StatusOr<ChatResponse> response = StreamFrom(*anthropic_, &seen);
  EXPECT_EQ(ErrorKindOf(response.status()), LlmErrorKind::kServerError);
  EXPECT_THAT(response.status().message(), HasSubstr("Overloaded"));

  transport_->pieces = {start + delta + error_event};
  response = StreamFrom(*anthropic_, &seen);
  EXPECT_EQ(ErrorKindOf(response.status()), LlmErrorKind::kStreamBroken);
  EXPECT_THAT(response.status().message(), HasSubstr("Overloaded"));
}

TEST_F(HttpProviderTest, RateLimitWithRetryAfter) {
  transport_->status = 429;
  transport_->headers = {{"retry-after", "3"}, {"content-type", "application/json"}};
  transport_->pieces = {R"({"error":{"message":"Rate limit reached for key )" +
                        std::string(kApiKey) +
                        R"(","type":"requests","code":"rate_limit_exceeded"}})"};
  for (bool stream : {false, true}) {
    absl::StatusOr<ChatResponse> response =
        stream ? openai_->Stream(Hello(), Context(), [](const StreamDelta&) { return true; })
               : openai_->Complete(Hello(), Context());
    EXPECT_EQ(ErrorKindOf(response.status()), LlmErrorKind::kRateLimited) << stream;
    EXPECT_THAT(RetryAfterMicrosOf(response.status()), Optional(3'000'000));
    EXPECT_THAT(response.status().message(), HasSubstr("Rate limit reached"));
    // The provider echoed the key; the status must not.
    EXPECT_THAT(response.status().message(), Not(HasSubstr(kApiKey)));
  }
}

TEST_F(HttpProviderTest, HttpStatusesMapToKinds) {
  const std::vector<std::pair<int, LlmErrorKind>> cases = {
      {401, LlmErrorKind::kAuth},           {403, LlmErrorKind::kAuth},
      {400, LlmErrorKind::kInvalidRequest}, {404, LlmErrorKind::kInvalidRequest},
      {500, LlmErrorKind::kServerError},    {529, LlmErrorKind::kServerError}};
  transport_->pieces = {R"({"type":"error","error":{"type":"x","message":"nope"}})"};
  for (const auto& [status, kind] : cases) {
    transport_->status = status;
    absl::StatusOr<ChatResponse> response = anthropic_->Complete(Hello(), Context());
    EXPECT_EQ(ErrorKindOf(response.status()), kind) << status;
    EXPECT_THAT(response.status().message(), HasSubstr("nope"));
  }
}

TEST_F(HttpProviderTest, MalformedAnswersAreBadResponses) {
  transport_->pieces = {R"({"id":"chatcmpl-1","choices":[{"index":0,"message":{"content":"Hel)"};
  EXPECT_EQ(ErrorKindOf(openai_->Complete(Hello(), Context()).status()),
            LlmErrorKind::kBadResponse);

  std::vector<std::string> seen;
  transport_->pieces = {"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\n\n"};
  EXPECT_EQ(ErrorKindOf(StreamFrom(*openai_, &seen).status()), LlmErrorKind::kBadResponse);
}

TEST_F(HttpProviderTest, OversizedAnswerIsBadResponse) {
  transport_->pieces = {std::string(kMaxProviderResponseBytes, ' '), "{}"};
  EXPECT_EQ(ErrorKindOf(openai_->Complete(Hello(), Context()).status()),
            LlmErrorKind::kBadResponse);
}

TEST_F(HttpProviderTest, LongStreamIsNotHeldToTheSizeLimitForItsFraming) {
  // Each one-character delta costs over a hundred bytes of framing, so this
  // answer of ~70k characters streams more than the limit in total.
  const std::string delta = OpenAiChunk(R"({"content":"x"})");
  const size_t count = kMaxProviderResponseBytes / delta.size() + 1000;
  transport_->pieces = {kRoleChunk};
  for (size_t i = 0; i < count; ++i) transport_->pieces.push_back(delta);
  transport_->pieces.push_back(OpenAiChunk("{}", R"("stop")"));
  transport_->pieces.emplace_back("data: [DONE]\n\n");
  absl::StatusOr<ChatResponse> response =
      openai_->Stream(Hello(), Context(), [](const StreamDelta&) { return true; });
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->content.size(), count);
}

TEST_F(HttpProviderTest, OversizedStreamEventOrAnswerIsBadResponse) {
  // One endless line: refused once it outgrows the limit, before output.
  transport_->pieces = {R"(data: {"choices":[{"index":0,"delta":{"content":")"};
  for (size_t sent = 0; sent <= kMaxProviderResponseBytes; sent += 1 << 16) {
    transport_->pieces.emplace_back(1 << 16, 'x');
  }
  std::vector<std::string> seen;
  absl::StatusOr<ChatResponse> response = StreamFrom(*openai_, &seen);
  EXPECT_EQ(ErrorKindOf(response.status()), LlmErrorKind::kBadResponse) << response.status();

  // Events of a fair size adding up to an oversized answer: refused too,
  // broken since output began.
  const std::string third(kMaxProviderResponseBytes / 3 + 1, 'y');
  transport_->pieces = {kRoleChunk};
  for (int i = 0; i < 3; ++i)
    transport_->pieces.push_back(OpenAiChunk(Json{{"content", third}}.dump()));
  seen.clear();
  response = StreamFrom(*openai_, &seen);
  EXPECT_EQ(ErrorKindOf(response.status()), LlmErrorKind::kStreamBroken) << response.status();
  EXPECT_EQ(seen.size(), 2u);
}

TEST_F(HttpProviderTest, ReceiverReturningFalseCancels) {
  transport_->pieces = {kOpenAiStream};
  int deltas = 0;
  absl::StatusOr<ChatResponse> response =
      openai_->Stream(Hello(), Context(), [&](const StreamDelta&) { return ++deltas < 1; });
  EXPECT_EQ(ErrorKindOf(response.status()), LlmErrorKind::kCancelled);
  EXPECT_EQ(deltas, 1);
}

TEST_F(HttpProviderTest, CancelledContextStopsTheCall) {
  transport_->SetBodyBytewise(kOpenAiStream);
  CallContext context = Context();
  bool cancelled = true;
  context.cancelled = [&] { return cancelled; };
  std::vector<std::string> seen;
  EXPECT_EQ(ErrorKindOf(StreamFrom(*openai_, &seen, context).status()), LlmErrorKind::kCancelled);
  EXPECT_EQ(transport_->calls, 0);

  // Cancelled mid-stream, after output began: still CANCELLED, not broken.
  cancelled = false;
  absl::StatusOr<ChatResponse> response =
      openai_->Stream(Hello(), context, [&](const StreamDelta&) {
        cancelled = true;
        return true;
      });
  EXPECT_EQ(ErrorKindOf(response.status()), LlmErrorKind::kCancelled);
}

TEST_F(HttpProviderTest, TheTransportWatchesTheCallsCancellation) {
  transport_->pieces = {kOpenAiAnswer};
  CallContext context = Context();
  bool cancelled = false;
  context.cancelled = [&] { return cancelled; };
  ASSERT_TRUE(openai_->Complete(Hello(), context).ok());
  ASSERT_TRUE(transport_->last_request.cancelled);
  EXPECT_FALSE(transport_->last_request.cancelled());
  cancelled = true;
  EXPECT_TRUE(transport_->last_request.cancelled());
}

TEST_F(HttpProviderTest, InvalidRequestIsRejectedBeforeSending) {
  ChatRequest request = Hello();
  request.tools = {{.name = "f", .parameters_schema = "not json"}};
  EXPECT_EQ(ErrorKindOf(openai_->Complete(request, Context()).status()),
            LlmErrorKind::kInvalidRequest);
  EXPECT_EQ(transport_->calls, 0);
}

// Keeps the spans the provider ends.
class RecordingExporter final : public trace::SpanExporter {
 public:
  void Export(trace::SpanRecord record) override {
    std::lock_guard lock(mu);
    spans.push_back(std::move(record));
  }
  std::mutex mu;
  std::vector<trace::SpanRecord> spans;
};

TEST_F(HttpProviderTest, EachModelCallIsAClientSpanMarkedFailedWhenTheCallFails) {
  auto exporter = std::make_shared<RecordingExporter>();
  trace::InstallExporter(exporter);
  transport_->pieces = {kOpenAiAnswer};
  ASSERT_TRUE(openai_->Complete(Hello(), Context()).ok());
  transport_->status = 500;
  transport_->pieces = {R"({"error":{"message":"boom"}})"};
  ASSERT_FALSE(openai_->Complete(Hello(), Context()).ok());
  transport_->status = 200;
  transport_->pieces = {kRoleChunk};  // cut before any output
  std::vector<std::string> seen;
  ASSERT_FALSE(StreamFrom(*openai_, &seen).ok());
  trace::InstallExporter(nullptr);

  std::lock_guard lock(exporter->mu);
  ASSERT_EQ(exporter->spans.size(), 3u);
  for (const trace::SpanRecord& span : exporter->spans) {
    EXPECT_EQ(span.name, "model.call");
    EXPECT_EQ(span.kind, trace::SpanKind::kClient);
    EXPECT_THAT(span.attributes, ::testing::Contains(std::pair<std::string, std::string>(
                                     "gen_ai.request.model", "model-1")));
  }
  EXPECT_FALSE(exporter->spans[0].error);
  EXPECT_TRUE(exporter->spans[1].error);
  EXPECT_THAT(exporter->spans[1].status_message, HasSubstr("500"));
  EXPECT_TRUE(exporter->spans[2].error);
  EXPECT_THAT(exporter->spans[2].status_message, Not(::testing::IsEmpty()));
}

}  // namespace
}  // namespace omniforge::llm
