// Integration tests of the whole client stack: YAML configuration ->
// ReadLlmConfig -> MakeLlmClient -> LlmClient -> HTTP provider -> libcurl ->
// a real loopback socket -> FakeLlmServer.
//
//  Conformance/*  what any endpoint must do, for the OpenAI and the Anthropic
//                 wire format against the fake; with OMNIFORGE_LLM_LIVE=1
//                 against the real endpoint the environment names instead
//                 (OMNIFORGE_LLM_BASE_URL, OMNIFORGE_LLM_API openai|anthropic,
//                 OMNIFORGE_LLM_API_KEY, OMNIFORGE_LLM_MODEL), for its API
//                 only. Run live with --gtest_filter='Conformance/*'.
//  Faults/*       every fault the fake can inject, fake only: each ends in
//                 success through retry or fallback, or in a typed error,
//                 within time bounds.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "libs/core/call_deadline.h"
#include "libs/core/clock.h"
#include "libs/core/config.h"
#include "libs/llm/client_test_fakes.h"
#include "libs/llm/errors.h"
#include "libs/llm/llm_client.h"
#include "libs/llm/llm_config.h"
#include "libs/llm/llm_factory.h"
#include "libs/llm/structured_output.h"
#include "libs/llm/testing/fake_provider.h"
#include "libs/llm/usage.h"

namespace omniforge::llm {

// Readable gtest failures for the library's enums.
void PrintTo(LlmErrorKind kind, std::ostream* os) { *os << ErrorKindName(kind); }
void PrintTo(FinishReason reason, std::ostream* os) { *os << FinishReasonName(reason); }

namespace {

using ::omniforge::llm::testing::FakeFault;
using ::omniforge::llm::testing::FakeLlmServer;
using ::omniforge::llm::testing::FakeOptions;
using ::omniforge::llm::testing::FakeRule;
using ::omniforge::llm::testing::FakeToolCall;
using ::omniforge::llm::testing::FakeUsage;
using ::omniforge::llm::testing::RecordedRequest;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;
using Json = nlohmann::json;

// --- The stack under test, built from YAML ------------------------------

struct ProviderSetup {
  std::string name;
  std::string api;  // openai | anthropic
  std::string base_url;
  std::string model;  // the one priced
  std::string api_key;
  Price price;
  int64_t request_timeout_ms = 5'000;
};

struct ClientSetup {
  std::vector<ProviderSetup> providers;
  std::map<std::string, std::vector<std::string>> profiles;  // "provider/model" chains
  int max_attempts = 3;
  int failure_threshold = 100;
  int64_t open_ms = 60'000;
  int64_t default_timeout_ms = 10'000;
};

std::string Quoted(std::string_view text) { return Json(text).dump(); }

std::string KeyVariable(const std::string& provider) {
  return absl::StrCat("OMNIFORGE_TEST_", absl::AsciiStrToUpper(provider), "_KEY");
}

// Backoffs of a few milliseconds keep the retrying tests fast.
std::string ConfigYaml(const ClientSetup& setup) {
  std::string yaml = absl::StrCat("llm:\n  default_timeout_ms: ", setup.default_timeout_ms,
                                  "\n  retry: {max_attempts: ", setup.max_attempts,
                                  ", initial_backoff_ms: 5, max_backoff_ms: 20, multiplier: 2}",
                                  "\n  breaker: {failure_threshold: ", setup.failure_threshold,
                                  ", open_ms: ", setup.open_ms, "}\n  providers:\n");
  for (const ProviderSetup& p : setup.providers) {
    absl::StrAppend(
        &yaml, "    ", p.name, ":\n      api: ", p.api, "\n      base_url: ", Quoted(p.base_url),
        "\n      connect_timeout_ms: 1000\n      request_timeout_ms: ", p.request_timeout_ms,
        "\n      default_max_tokens: 1024\n");
    if (!p.api_key.empty()) {
      absl::StrAppend(&yaml, "      api_key_env: ", KeyVariable(p.name), "\n");
    }
    absl::StrAppend(&yaml, "      prices:\n        ", Quoted(p.model), ": \"",
                    p.price.input_per_mtok, " ", p.price.cached_input_per_mtok, " ",
                    p.price.output_per_mtok, "\"\n");
  }
  absl::StrAppend(&yaml, "  profiles:\n");
  for (const auto& [name, chain] : setup.profiles) {
    std::vector<std::string> entries;
    for (const std::string& entry : chain) entries.push_back(Quoted(entry));
    absl::StrAppend(&yaml, "    ", name, ": [", absl::StrJoin(entries, ", "), "]\n");
  }
  return yaml;
}

// The keys reach the config through api_key_env, from an environment holding
// only them, so the process's own OMNIFORGE_* variables cannot leak in.
absl::StatusOr<std::unique_ptr<LlmClient>> ClientFromYaml(const ClientSetup& setup,
                                                          std::shared_ptr<UsageSink> sink) {
  std::map<std::string, std::string> env;
  for (const ProviderSetup& p : setup.providers) {
    if (!p.api_key.empty()) env[KeyVariable(p.name)] = p.api_key;
  }
  const core::ConfigReader::EnvLookup lookup =
      [env](const std::string& name) -> std::optional<std::string> {
    const auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  absl::StatusOr<core::ConfigReader> reader =
      core::ConfigReader::FromString(ConfigYaml(setup), lookup);
  if (!reader.ok()) return reader.status();
  absl::StatusOr<LlmConfig> config = ReadLlmConfig(*reader, lookup);
  if (!config.ok()) return config.status();
  if (absl::Status finished = reader->Finish(); !finished.ok()) return finished;
  return MakeLlmClient(*config, std::move(sink));
}

std::string BaseUrl(const FakeLlmServer& fake, std::string_view api) {
  return api == "anthropic" ? fake.anthropic_base_url() : fake.openai_base_url();
}

double ExpectedCost(const Price& price, const TokenUsage& tokens) {
  return (static_cast<double>(tokens.prompt_tokens - tokens.cached_tokens) * price.input_per_mtok +
          static_cast<double>(tokens.cached_tokens) * price.cached_input_per_mtok +
          static_cast<double>(tokens.completion_tokens) * price.output_per_mtok) /
         1e6;
}

// --- Calls ----------------------------------------------------------------

class Stopwatch final {
 public:
  int64_t ElapsedMs() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 start_)
        .count();
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

CallContext ContextWithBudget(std::chrono::milliseconds budget,
                              std::string operation = "integration") {
  CallContext context;
  context.deadline_micros =
      core::NowMicros() + std::chrono::duration_cast<std::chrono::microseconds>(budget).count();
  context.operation_type = std::move(operation);
  return context;
}

ChatRequest UserAsks(std::string text) {
  ChatRequest request;
  request.messages.push_back(ChatMessage{.role = Role::kUser, .content = std::move(text)});
  return request;
}

// What a streamed call delivered, besides its result.
struct Streamed {
  absl::StatusOr<ChatResponse> response;
  std::vector<StreamDelta> deltas;
  std::string text;  // the text deltas, concatenated
  // The tool-call deltas reassembled, by tool_index.
  std::map<int, ToolCall> tool_calls;
};

// `on_delta_extra` (optional) sees each delta after it is collected and
// decides whether the stream goes on.
Streamed StreamThrough(LlmClient& client, std::string_view profile, const ChatRequest& request,
                       const CallContext& context,
                       const std::function<bool(const Streamed&)>& on_delta_extra = nullptr) {
  Streamed out;
  out.response = client.Stream(profile, request, context, [&](const StreamDelta& delta) {
    out.deltas.push_back(delta);
    if (delta.tool_index < 0) {
      out.text += delta.text;
    } else {
      ToolCall& call = out.tool_calls[delta.tool_index];
      if (!delta.tool_call_id.empty()) call.id = delta.tool_call_id;
      if (!delta.tool_name.empty()) call.name = delta.tool_name;
      call.arguments += delta.arguments_fragment;
    }
    return on_delta_extra == nullptr || on_delta_extra(out);
  });
  return out;
}

// --- Conformance ------------------------------------------------------------

constexpr char kPlainPrompt[] = "In one short sentence: what is the capital of France?";
constexpr char kPlainAnswer[] = "The capital of France is Paris, on the Seine.";
constexpr char kWeatherPrompt[] =
    "What is the weather in Paris right now? Use the get_weather tool to find out.";
constexpr char kWeatherSchema[] =
    R"({"type":"object","properties":{"city":{"type":"string","description":"The city's name"}},)"
    R"("required":["city"]})";
constexpr char kWeatherResult[] = R"({"city":"Paris","temperature_c":18,"conditions":"sunny"})";
constexpr char kWeatherAnswer[] = "It is 18 °C and sunny in Paris.";
constexpr char kCityPrompt[] =
    "Describe the city of Paris as JSON: its name, its country and its approximate population.";
constexpr char kCitySchema[] =
    R"({"type":"object","properties":{"city":{"type":"string"},"country":{"type":"string"},)"
    R"("population":{"type":"integer"}},"required":["city","country","population"],)"
    R"("additionalProperties":false})";
constexpr char kCityJson[] = R"({"city":"Paris","country":"France","population":2100000})";
constexpr FakeUsage kPlainUsage{
    .prompt_tokens = 1200, .completion_tokens = 300, .cached_tokens = 200};
constexpr Price kConformancePrice{3.0, 0.3, 15.0};
constexpr char kConformanceProfile[] = "conformance";
constexpr char kFakeConformanceKey[] = "sk-conformance-fake-key";

// The real endpoint to check, when the environment asks for one.
struct LiveEndpoint {
  std::string api;
  std::string base_url;
  std::string api_key;
  std::string model;
};

std::string EnvOr(const char* name, std::string fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : std::move(fallback);
}

std::optional<LiveEndpoint> LiveEndpointFromEnv() {
  if (EnvOr("OMNIFORGE_LLM_LIVE", "") != "1") return std::nullopt;
  LiveEndpoint live;
  live.api = EnvOr("OMNIFORGE_LLM_API", "openai");
  live.base_url =
      EnvOr("OMNIFORGE_LLM_BASE_URL",
            live.api == "anthropic" ? "https://api.anthropic.com" : "https://api.openai.com/v1");
  live.api_key = EnvOr("OMNIFORGE_LLM_API_KEY", "");
  live.model = EnvOr("OMNIFORGE_LLM_MODEL", "");
  return live;
}

std::vector<std::string> ConformanceApis() {
  if (const std::optional<LiveEndpoint> live = LiveEndpointFromEnv()) return {live->api};
  return {"openai", "anthropic"};
}

// The fake's script for every conformance case, each told apart by its
// prompt; the tool loop's two steps by whether a tool result came back.
std::vector<FakeRule> ConformanceRules() {
  FakeRule weather_answer;
  weather_answer.match.tool_offered = "get_weather";
  weather_answer.match.last_is_tool_result = true;
  weather_answer.reply.text = kWeatherAnswer;

  FakeRule weather_call;
  weather_call.match.tool_offered = "get_weather";
  weather_call.match.last_is_tool_result = false;
  weather_call.reply.tool_calls.push_back(
      FakeToolCall{.name = "get_weather", .arguments_json = R"({"city":"Paris"})"});

  FakeRule city;
  city.match.last_user_contains = "as JSON";
  city.reply.json = kCityJson;

  FakeRule plain;
  plain.match.last_user_contains = "capital of France";
  plain.reply.text = kPlainAnswer;
  plain.reply.usage = kPlainUsage;
  return {weather_answer, weather_call, city, plain};
}

// Parameter: the API ("openai" or "anthropic").
class ConformanceTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::optional<LiveEndpoint> live = LiveEndpointFromEnv();
    live_ = live.has_value();
    ProviderSetup provider{.name = "conformance", .api = GetParam(), .price = kConformancePrice};
    if (live_) {
      ASSERT_THAT(live->model, Not(IsEmpty())) << "OMNIFORGE_LLM_MODEL is required in live mode";
      provider.base_url = live->base_url;
      provider.api_key = live->api_key;
      provider.model = live->model;
      provider.request_timeout_ms = 120'000;
    } else {
      absl::StatusOr<std::unique_ptr<FakeLlmServer>> fake =
          FakeLlmServer::Start(ConformanceRules(), FakeOptions{.api_key = kFakeConformanceKey});
      ASSERT_TRUE(fake.ok()) << fake.status();
      fake_ = *std::move(fake);
      provider.base_url = BaseUrl(*fake_, GetParam());
      provider.api_key = kFakeConformanceKey;
      provider.model = "fake-model";
    }
    model_ = provider.model;
    ClientSetup setup;
    setup.providers = {provider};
    setup.profiles[kConformanceProfile] = {absl::StrCat(provider.name, "/", provider.model)};
    setup.default_timeout_ms = live_ ? 300'000 : 10'000;
    absl::StatusOr<std::unique_ptr<LlmClient>> client = ClientFromYaml(setup, sink_);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
  }

  CallContext Context() const {
    return ContextWithBudget(live_ ? std::chrono::seconds(120) : std::chrono::seconds(5),
                             "conformance");
  }

  // The one usage record `response` produced, checked against it.
  UsageRecord CheckOnlyRecord(const ChatResponse& response, bool streamed) {
    const std::vector<UsageRecord> records = sink_->records();
    EXPECT_THAT(records, SizeIs(1));
    if (records.empty()) return {};
    const UsageRecord& record = records.back();
    EXPECT_TRUE(record.ok) << record.error_message;
    EXPECT_EQ(record.operation_type, "conformance");
    EXPECT_EQ(record.profile, kConformanceProfile);
    EXPECT_EQ(record.provider, "conformance");
    EXPECT_EQ(record.model, model_);
    EXPECT_EQ(record.streamed, streamed);
    EXPECT_FALSE(record.fallback_used);
    EXPECT_GE(record.attempts, 1);
    if (!live_) {
      EXPECT_EQ(record.attempts, 1);
    }
    EXPECT_EQ(record.tokens, response.usage);
    EXPECT_GT(record.tokens.prompt_tokens, 0);
    EXPECT_GT(record.tokens.completion_tokens, 0);
    EXPECT_DOUBLE_EQ(record.cost_usd, ExpectedCost(kConformancePrice, record.tokens));
    EXPECT_GT(record.cost_usd, 0);
    EXPECT_GT(record.latency_us, 0);
    if (streamed) {
      EXPECT_GE(record.time_to_first_token_us, 0);
      EXPECT_LE(record.time_to_first_token_us, record.latency_us);
    }
    return record;
  }

  bool live_ = false;
  std::string model_;
  std::unique_ptr<FakeLlmServer> fake_;
  std::shared_ptr<RecordingUsageSink> sink_ = std::make_shared<RecordingUsageSink>();
  std::unique_ptr<LlmClient> client_;
};

TEST_P(ConformanceTest, PlainCompletion) {
  absl::StatusOr<ChatResponse> response =
      client_->Complete(kConformanceProfile, UserAsks(kPlainPrompt), Context());
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_THAT(response->content, Not(IsEmpty()));
  EXPECT_THAT(response->tool_calls, IsEmpty());
  EXPECT_EQ(response->finish_reason, FinishReason::kStop);
  EXPECT_EQ(response->time_to_first_token_us, -1);
  CheckOnlyRecord(*response, /*streamed=*/false);
  if (!live_) {
    EXPECT_EQ(response->content, kPlainAnswer);
    EXPECT_EQ(response->model, "fake-model");
    EXPECT_THAT(response->id, Not(IsEmpty()));
    ASSERT_THAT(fake_->Requests(), SizeIs(1));
    EXPECT_EQ(fake_->Requests()[0].operation, "conformance");
    EXPECT_FALSE(fake_->Requests()[0].stream);
  }
}

TEST_P(ConformanceTest, StreamedCompletion) {
  const Streamed streamed =
      StreamThrough(*client_, kConformanceProfile, UserAsks(kPlainPrompt), Context());
  ASSERT_TRUE(streamed.response.ok()) << streamed.response.status();
  const ChatResponse& response = *streamed.response;
  EXPECT_THAT(response.content, Not(IsEmpty()));
  EXPECT_EQ(streamed.text, response.content);
  EXPECT_THAT(streamed.tool_calls, IsEmpty());
  EXPECT_GE(response.time_to_first_token_us, 0);
  EXPECT_EQ(response.finish_reason, FinishReason::kStop);
  CheckOnlyRecord(response, /*streamed=*/true);
  if (!live_) {
    EXPECT_EQ(response.content, kPlainAnswer);
    // The fake sends 4-character pieces; each reaches the caller once.
    EXPECT_THAT(streamed.deltas, SizeIs((std::string_view(kPlainAnswer).size() + 3) / 4));
    ASSERT_THAT(fake_->Requests(), SizeIs(1));
    EXPECT_TRUE(fake_->Requests()[0].stream);
  }
}

ChatRequest WeatherRequest() {
  ChatRequest request = UserAsks(kWeatherPrompt);
  request.tools.push_back(ToolSpec{.name = "get_weather",
                                   .description = "The current weather in a city.",
                                   .parameters_schema = kWeatherSchema});
  request.tool_choice.mode = ToolChoiceMode::kRequired;
  return request;
}

// Checks the model's turn asking for get_weather. Live, the finish reason is
// left alone: OpenAI reports "stop" for some forced tool calls.
void CheckWeatherCall(const ChatResponse& response, bool live) {
  if (!live) {
    EXPECT_EQ(response.finish_reason, FinishReason::kToolCalls);
  }
  ASSERT_THAT(response.tool_calls, Not(IsEmpty()));
  const ToolCall& call = response.tool_calls.front();
  EXPECT_THAT(call.id, Not(IsEmpty()));
  EXPECT_EQ(call.name, "get_weather");
  const Json arguments = Json::parse(call.arguments, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(arguments.is_object()) << call.arguments;
  ASSERT_TRUE(arguments.contains("city")) << call.arguments;
  EXPECT_TRUE(arguments["city"].is_string()) << call.arguments;
}

// The request that sends the tool's result back.
ChatRequest WithToolResults(ChatRequest request, const ChatResponse& call_turn) {
  request.messages.push_back(ChatMessage{
      .role = Role::kAssistant, .content = call_turn.content, .tool_calls = call_turn.tool_calls});
  for (const ToolCall& call : call_turn.tool_calls) {
    request.messages.push_back(
        ChatMessage{.role = Role::kTool, .content = kWeatherResult, .tool_call_id = call.id});
  }
  request.tool_choice.mode = ToolChoiceMode::kAuto;
  return request;
}

TEST_P(ConformanceTest, ToolCallRoundTrip) {
  const ChatRequest request = WeatherRequest();
  absl::StatusOr<ChatResponse> call_turn =
      client_->Complete(kConformanceProfile, request, Context());
  ASSERT_TRUE(call_turn.ok()) << call_turn.status();
  CheckWeatherCall(*call_turn, live_);
  if (HasFailure()) return;

  absl::StatusOr<ChatResponse> answer =
      client_->Complete(kConformanceProfile, WithToolResults(request, *call_turn), Context());
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_THAT(answer->content, Not(IsEmpty()));
  EXPECT_EQ(answer->finish_reason, FinishReason::kStop);
  EXPECT_THAT(sink_->records(), SizeIs(2));
  if (!live_) {
    EXPECT_EQ(call_turn->tool_calls.size(), 1u);
    EXPECT_EQ(call_turn->tool_calls[0].arguments, R"({"city":"Paris"})");
    EXPECT_EQ(answer->content, kWeatherAnswer);
    // The tool result went back under the id the model gave its call.
    ASSERT_THAT(fake_->Requests(), SizeIs(2));
    EXPECT_THAT(fake_->Requests()[1].body, HasSubstr(call_turn->tool_calls[0].id));
  }
}

TEST_P(ConformanceTest, StreamedToolCallRoundTrip) {
  const ChatRequest request = WeatherRequest();
  const Streamed call_turn = StreamThrough(*client_, kConformanceProfile, request, Context());
  ASSERT_TRUE(call_turn.response.ok()) << call_turn.response.status();
  CheckWeatherCall(*call_turn.response, live_);
  if (HasFailure()) return;
  // The deltas reassemble into exactly the calls of the final answer.
  ASSERT_EQ(call_turn.tool_calls.size(), call_turn.response->tool_calls.size());
  for (const auto& [index, call] : call_turn.tool_calls) {
    ASSERT_LT(static_cast<size_t>(index), call_turn.response->tool_calls.size());
    EXPECT_EQ(call, call_turn.response->tool_calls[index]);
  }
  EXPECT_EQ(call_turn.text, call_turn.response->content);

  const Streamed answer = StreamThrough(*client_, kConformanceProfile,
                                        WithToolResults(request, *call_turn.response), Context());
  ASSERT_TRUE(answer.response.ok()) << answer.response.status();
  EXPECT_THAT(answer.response->content, Not(IsEmpty()));
  EXPECT_EQ(answer.text, answer.response->content);
  EXPECT_EQ(answer.response->finish_reason, FinishReason::kStop);
  EXPECT_THAT(sink_->records(), SizeIs(2));
  if (!live_) {
    EXPECT_EQ(call_turn.response->tool_calls[0].arguments, R"({"city":"Paris"})");
    // Arguments arrive in several fragments, split inside keys and strings.
    EXPECT_GT(call_turn.deltas.size(), 3u);
    EXPECT_EQ(answer.response->content, kWeatherAnswer);
  }
}

TEST_P(ConformanceTest, StructuredOutput) {
  ChatRequest request = UserAsks(kCityPrompt);
  request.response_format = ResponseFormat{.name = "city", .schema = kCitySchema};
  const std::unique_ptr<ChatModel> model = client_->ForProfile(kConformanceProfile);
  absl::StatusOr<StructuredResult> result = CompleteStructured(*model, request, Context());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(ValidateJsonAgainstSchema(result->json, kCitySchema).ok()) << result->json;
  const Json city = Json::parse(result->json, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(city.is_object()) << result->json;
  EXPECT_TRUE(city.contains("city"));
  // One usage record per model call: two when a repair was needed.
  EXPECT_THAT(sink_->records(), SizeIs(result->repaired ? 2 : 1));
  for (const UsageRecord& record : sink_->records()) EXPECT_TRUE(record.ok);
  if (!live_) {
    EXPECT_FALSE(result->repaired);
    EXPECT_EQ(Json::parse(result->json), Json::parse(kCityJson));
  }
}

// The same tokens cost the same whether the answer was streamed or not, and
// both forms give an answer of the same shape.
TEST_P(ConformanceTest, CompleteAndStreamAgree) {
  absl::StatusOr<ChatResponse> completed =
      client_->Complete(kConformanceProfile, UserAsks(kPlainPrompt), Context());
  ASSERT_TRUE(completed.ok()) << completed.status();
  const Streamed streamed =
      StreamThrough(*client_, kConformanceProfile, UserAsks(kPlainPrompt), Context());
  ASSERT_TRUE(streamed.response.ok()) << streamed.response.status();

  EXPECT_EQ(completed->finish_reason, streamed.response->finish_reason);
  EXPECT_EQ(completed->tool_calls.empty(), streamed.response->tool_calls.empty());
  EXPECT_THAT(completed->content, Not(IsEmpty()));
  EXPECT_THAT(streamed.response->content, Not(IsEmpty()));

  const std::vector<UsageRecord> records = sink_->records();
  ASSERT_THAT(records, SizeIs(2));
  const UsageRecord& plain = records[0];
  const UsageRecord& stream = records[1];
  EXPECT_FALSE(plain.streamed);
  EXPECT_TRUE(stream.streamed);
  EXPECT_EQ(plain.time_to_first_token_us, -1);
  EXPECT_GE(stream.time_to_first_token_us, 0);
  for (const UsageRecord* record : {&plain, &stream}) {
    EXPECT_TRUE(record->ok);
    EXPECT_GT(record->tokens.prompt_tokens, 0);
    EXPECT_GT(record->tokens.completion_tokens, 0);
    EXPECT_DOUBLE_EQ(record->cost_usd, ExpectedCost(kConformancePrice, record->tokens));
  }
  if (!live_) {
    const TokenUsage expected{.prompt_tokens = kPlainUsage.prompt_tokens,
                              .completion_tokens = kPlainUsage.completion_tokens,
                              .cached_tokens = kPlainUsage.cached_tokens};
    EXPECT_EQ(plain.tokens, expected);
    EXPECT_EQ(stream.tokens, expected);
    EXPECT_EQ(completed->content, streamed.response->content);
    // 1000 uncached at 3, 200 cached at 0.3, 300 out at 15 USD per Mtok.
    EXPECT_DOUBLE_EQ(plain.cost_usd, 0.00756);
    EXPECT_DOUBLE_EQ(stream.cost_usd, plain.cost_usd);
  }
}

INSTANTIATE_TEST_SUITE_P(Conformance, ConformanceTest, ::testing::ValuesIn(ConformanceApis()),
                         [](const auto& info) { return info.param; });

// --- Faults -----------------------------------------------------------------

constexpr char kPrimaryKey[] = "sk-omniforge-primary-7Qx2vZ9kLm4w";
constexpr char kBackupKey[] = "sk-omniforge-backup-Hh3pW8rT1nY6";
constexpr char kPrimaryText[] = "The primary model answers in quite a few small pieces.";
constexpr char kBackupText[] = "The backup model answers.";
constexpr FakeUsage kPrimaryUsage{
    .prompt_tokens = 100, .completion_tokens = 20, .cached_tokens = 0};
constexpr FakeUsage kBackupUsage{.prompt_tokens = 50, .completion_tokens = 10, .cached_tokens = 0};
constexpr Price kPrimaryPrice{2.0, 0.5, 8.0};
constexpr Price kBackupPrice{1.0, 0.25, 4.0};

// Generous enough for a loaded CI machine, far below every timeout that
// would apply if the bounded behaviour were missing.
constexpr int64_t kSlackMs = 700;

std::string OtherApi(const std::string& api) { return api == "openai" ? "anthropic" : "openai"; }

FakeRule ReplyRule(std::string text, FakeUsage usage) {
  FakeRule rule;
  rule.reply.text = std::move(text);
  rule.reply.usage = usage;
  return rule;
}

// The primary's answer with `fault` injected, for `times` requests (-1: all).
// Stream faults place themselves among the answer's pieces.
FakeRule FaultRule(FakeFault fault, int times = -1) {
  FakeRule rule = ReplyRule(kPrimaryText, kPrimaryUsage);
  rule.times = times;
  rule.fault = std::move(fault);
  return rule;
}

FakeFault StatusFault(int status, std::string retry_after = "") {
  return FakeFault{
      .kind = FakeFault::Kind::kStatus, .status = status, .retry_after = std::move(retry_after)};
}

// A loopback port that refuses connections: bound, so nobody else gets it,
// but not listening.
class RefusingPort final {
 public:
  RefusingPort() : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof(address);
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&address), size) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
      return;
    }
    port_ = ntohs(address.sin_port);
  }
  ~RefusingPort() {
    if (fd_ >= 0) close(fd_);
  }
  RefusingPort(const RefusingPort&) = delete;
  RefusingPort& operator=(const RefusingPort&) = delete;

  int port() const { return port_; }

 private:
  int fd_;
  int port_ = 0;
};

// Two fakes: the primary speaking the parameter's API and a backup speaking
// the other one, each requiring its own key. Profiles:
//   main:   primary/primary-model -> backup/backup-model
//   single: primary/primary-model
// The primary answers kPrimaryText after whatever faults a test scripts.
class FaultsTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    primary_ = StartFake(kPrimaryKey, {});
    backup_ = StartFake(kBackupKey, {ReplyRule(kBackupText, kBackupUsage)});
    ASSERT_NE(primary_, nullptr);
    ASSERT_NE(backup_, nullptr);
    setup_.providers = {ProviderSetup{.name = "primary",
                                      .api = api(),
                                      .base_url = BaseUrl(*primary_, api()),
                                      .model = "primary-model",
                                      .api_key = kPrimaryKey,
                                      .price = kPrimaryPrice},
                        ProviderSetup{.name = "backup",
                                      .api = OtherApi(api()),
                                      .base_url = BaseUrl(*backup_, OtherApi(api())),
                                      .model = "backup-model",
                                      .api_key = kBackupKey,
                                      .price = kBackupPrice}};
    setup_.profiles = {{"main", {"primary/primary-model", "backup/backup-model"}},
                       {"single", {"primary/primary-model"}}};
    SetPrimaryFaults({});
  }

  // No credential ever reaches an error message or a usage record.
  void TearDown() override {
    std::vector<std::string> keys = {kPrimaryKey, kBackupKey};
    for (const ProviderSetup& provider : setup_.providers) keys.push_back(provider.api_key);
    for (const UsageRecord& record : sink_->records()) {
      for (const std::string* field : {&record.error_message, &record.provider, &record.model,
                                       &record.profile, &record.operation_type}) {
        for (const std::string& key : keys) EXPECT_THAT(*field, Not(HasSubstr(key)));
      }
    }
  }

  const std::string& api() const { return GetParam(); }

  static std::unique_ptr<FakeLlmServer> StartFake(std::string key, std::vector<FakeRule> rules,
                                                  FakeOptions options = {}) {
    options.api_key = std::move(key);
    absl::StatusOr<std::unique_ptr<FakeLlmServer>> fake =
        FakeLlmServer::Start(std::move(rules), std::move(options));
    EXPECT_TRUE(fake.ok()) << fake.status();
    return fake.ok() ? *std::move(fake) : nullptr;
  }

  // The primary's script: `faults` (in order, each until used up), then
  // kPrimaryText.
  void SetPrimaryFaults(std::vector<FakeRule> faults) {
    faults.push_back(ReplyRule(kPrimaryText, kPrimaryUsage));
    ASSERT_TRUE(primary_->SetRules(std::move(faults)).ok());
  }

  ProviderSetup& primary_setup() { return setup_.providers[0]; }

  // Built on first use from setup_, which tests may change before. A setup
  // the configuration rejects fails the test (gtest reports the exception).
  LlmClient& Client() {
    if (client_ == nullptr) {
      absl::StatusOr<std::unique_ptr<LlmClient>> client = ClientFromYaml(setup_, sink_);
      if (!client.ok()) throw std::runtime_error(client.status().ToString());
      client_ = *std::move(client);
    }
    return *client_;
  }

  static CallContext Context() { return ContextWithBudget(std::chrono::seconds(5)); }

  UsageRecord OnlyRecord() {
    const std::vector<UsageRecord> records = sink_->records();
    EXPECT_THAT(records, SizeIs(1));
    return records.empty() ? UsageRecord{} : records.back();
  }

  // What an attempt that failed after the stream began was billed: Anthropic
  // reports the input (and one output token) in message_start, OpenAI only
  // at the end of a stream.
  TokenUsage BilledAtStreamStart() const {
    if (api() != "anthropic") return {};
    return {.prompt_tokens = kPrimaryUsage.prompt_tokens,
            .completion_tokens = 1,
            .cached_tokens = kPrimaryUsage.cached_tokens};
  }

  // The record of a call the primary answered after `attempts` requests, of
  // which `billed_failures` failed after their stream began.
  void ExpectPrimaryAnswered(int attempts, int billed_failures = 0) {
    const UsageRecord record = OnlyRecord();
    EXPECT_TRUE(record.ok) << record.error_message;
    EXPECT_EQ(record.provider, "primary");
    EXPECT_FALSE(record.fallback_used);
    EXPECT_EQ(record.attempts, attempts);
    EXPECT_EQ(primary_->RequestCount(), static_cast<size_t>(attempts));
    EXPECT_EQ(backup_->RequestCount(), 0u);
    const TokenUsage answer{.prompt_tokens = kPrimaryUsage.prompt_tokens,
                            .completion_tokens = kPrimaryUsage.completion_tokens};
    const TokenUsage failed = BilledAtStreamStart();
    const TokenUsage tokens{
        .prompt_tokens = answer.prompt_tokens + billed_failures * failed.prompt_tokens,
        .completion_tokens = answer.completion_tokens + billed_failures * failed.completion_tokens,
        .cached_tokens = billed_failures * failed.cached_tokens};
    EXPECT_EQ(record.tokens, tokens);
    EXPECT_DOUBLE_EQ(record.cost_usd, ExpectedCost(kPrimaryPrice, tokens));
  }

  // The record of a failed call; `billed` is what its attempts were billed.
  void ExpectFailedRecord(LlmErrorKind kind, int attempts, const TokenUsage& billed = {}) {
    const UsageRecord record = OnlyRecord();
    EXPECT_FALSE(record.ok);
    EXPECT_EQ(record.error_kind, kind);
    EXPECT_THAT(record.error_message, Not(IsEmpty()));
    EXPECT_EQ(record.attempts, attempts);
    EXPECT_EQ(record.tokens, billed);
    EXPECT_DOUBLE_EQ(record.cost_usd, ExpectedCost(kPrimaryPrice, billed));
  }

  std::unique_ptr<FakeLlmServer> primary_;
  std::unique_ptr<FakeLlmServer> backup_;
  ClientSetup setup_;
  std::shared_ptr<RecordingUsageSink> sink_ = std::make_shared<RecordingUsageSink>();
  std::unique_ptr<LlmClient> client_;
};

TEST_P(FaultsTest, RateLimitWaitsForRetryAfterThenSucceeds) {
  SetPrimaryFaults({FaultRule(StatusFault(429, "0.3"), 1)});
  const Stopwatch stopwatch;
  absl::StatusOr<ChatResponse> response = Client().Complete("main", UserAsks("hi"), Context());
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->content, kPrimaryText);
  ExpectPrimaryAnswered(2);
  const std::vector<RecordedRequest> requests = primary_->Requests();
  ASSERT_THAT(requests, SizeIs(2));
  // The retry came no sooner than the server asked (backoff is at most 5 ms).
  EXPECT_GE(requests[1].time_micros - requests[0].time_micros, 300'000);
  EXPECT_GE(stopwatch.ElapsedMs(), 300);
  EXPECT_LT(stopwatch.ElapsedMs(), 300 + kSlackMs);
}

TEST_P(FaultsTest, ServerErrorIsRetriedOnTheSameProvider) {
  SetPrimaryFaults({FaultRule(StatusFault(500), 1)});
  absl::StatusOr<ChatResponse> response = Client().Complete("main", UserAsks("hi"), Context());
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->content, kPrimaryText);
  ExpectPrimaryAnswered(2);
}

// 529 is Anthropic's "overloaded"; it is a server error like any 5xx.
TEST_P(FaultsTest, OverloadedIsRetried) {
  SetPrimaryFaults({FaultRule(StatusFault(529), 2)});
  const Streamed streamed = StreamThrough(Client(), "main", UserAsks("hi"), Context());
  ASSERT_TRUE(streamed.response.ok()) << streamed.response.status();
  EXPECT_EQ(streamed.text, kPrimaryText);
  ExpectPrimaryAnswered(3);
}

TEST_P(FaultsTest, ExhaustedRetriesFallBackToTheNextProvider) {
  SetPrimaryFaults({FaultRule(StatusFault(503))});
  absl::StatusOr<ChatResponse> response = Client().Complete("main", UserAsks("hi"), Context());
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->content, kBackupText);
  EXPECT_EQ(primary_->RequestCount(), 3u);
  EXPECT_EQ(backup_->RequestCount(), 1u);
  ASSERT_THAT(backup_->Requests(), SizeIs(1));
  EXPECT_EQ(backup_->Requests()[0].api, OtherApi(api()));
  EXPECT_THAT(backup_->Requests()[0].body, HasSubstr("\"backup-model\""));
  const UsageRecord record = OnlyRecord();
  EXPECT_TRUE(record.ok);
  EXPECT_TRUE(record.fallback_used);
  EXPECT_EQ(record.attempts, 4);
  EXPECT_EQ(record.provider, "backup");
  EXPECT_EQ(record.model, "backup-model");
  const TokenUsage tokens{.prompt_tokens = kBackupUsage.prompt_tokens,
                          .completion_tokens = kBackupUsage.completion_tokens};
  EXPECT_EQ(record.tokens, tokens);
  EXPECT_DOUBLE_EQ(record.cost_usd, ExpectedCost(kBackupPrice, tokens));
}

TEST_P(FaultsTest, ExhaustedRetriesWithoutFallbackEndInTheLastError) {
  SetPrimaryFaults({FaultRule(StatusFault(503))});
  absl::StatusOr<ChatResponse> response = Client().Complete("single", UserAsks("hi"), Context());
  EXPECT_EQ(ErrorKindOf(response.status()), LlmErrorKind::kServerError) << response.status();
  EXPECT_THAT(response.status().message(), HasSubstr("503"));
  EXPECT_EQ(primary_->RequestCount(), 3u);
  ExpectFailedRecord(LlmErrorKind::kServerError, 3);
}

TEST_P(FaultsTest, HangPastTheDeadlineTimesOutAtTheDeadline) {
  SetPrimaryFaults({FaultRule(FakeFault{.kind = FakeFault::Kind::kHang})});
  const Stopwatch stopwatch;
  absl::StatusOr<ChatResponse> response =
      Client().Complete("main", UserAsks("hi"), ContextWithBudget(std::chrono::milliseconds(300)));
  EXPECT_EQ(ErrorKindOf(response.status()), LlmErrorKind::kTimeout) << response.status();
  EXPECT_GE(stopwatch.ElapsedMs(), 290);
  EXPECT_LT(stopwatch.ElapsedMs(), 300 + kSlackMs);
  // The deadline covers the whole chain: no time was left for the backup.
  EXPECT_EQ(primary_->RequestCount(), 1u);
  EXPECT_EQ(backup_->RequestCount(), 0u);
  ExpectFailedRecord(LlmErrorKind::kTimeout, 1);
}

TEST_P(FaultsTest, HangingAttemptIsCutByRequestTimeoutAndRetried) {
  primary_setup().request_timeout_ms = 200;
  SetPrimaryFaults({FaultRule(FakeFault{.kind = FakeFault::Kind::kHang}, 1)});
  const Stopwatch stopwatch;
  const Streamed streamed = StreamThrough(Client(), "main", UserAsks("hi"), Context());
  ASSERT_TRUE(streamed.response.ok()) << streamed.response.status();
  EXPECT_EQ(streamed.text, kPrimaryText);
  EXPECT_GE(stopwatch.ElapsedMs(), 190);
  EXPECT_LT(stopwatch.ElapsedMs(), 200 + kSlackMs);
  ExpectPrimaryAnswered(2);
}

TEST_P(FaultsTest, MalformedAnswerIsRetried) {
  SetPrimaryFaults({FaultRule(FakeFault{.kind = FakeFault::Kind::kMalformedJson}, 1)});
  absl::StatusOr<ChatResponse> response = Client().Complete("main", UserAsks("hi"), Context());
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->content, kPrimaryText);
  ExpectPrimaryAnswered(2);
}

TEST_P(FaultsTest, PersistentlyMalformedAnswerIsBadResponse) {
  SetPrimaryFaults({FaultRule(FakeFault{.kind = FakeFault::Kind::kMalformedJson})});
  absl::StatusOr<ChatResponse> response = Client().Complete("single", UserAsks("hi"), Context());
  EXPECT_EQ(ErrorKindOf(response.status()), LlmErrorKind::kBadResponse) << response.status();
  EXPECT_EQ(primary_->RequestCount(), 3u);
  ExpectFailedRecord(LlmErrorKind::kBadResponse, 3);
}

TEST_P(FaultsTest, MalformedStreamEventBeforeOutputIsRetried) {
  SetPrimaryFaults(
      {FaultRule(FakeFault{.kind = FakeFault::Kind::kMalformedJson, .after_deltas = 0}, 1)});
  const Streamed streamed = StreamThrough(Client(), "main", UserAsks("hi"), Context());
  ASSERT_TRUE(streamed.response.ok()) << streamed.response.status();
  EXPECT_EQ(streamed.text, kPrimaryText);
  ExpectPrimaryAnswered(2, /*billed_failures=*/1);
}

TEST_P(FaultsTest, MalformedStreamEventAfterOutputBreaksTheStream) {
  SetPrimaryFaults(
      {FaultRule(FakeFault{.kind = FakeFault::Kind::kMalformedJson, .after_deltas = 2})});
  const Streamed streamed = StreamThrough(Client(), "main", UserAsks("hi"), Context());
  EXPECT_EQ(ErrorKindOf(streamed.response.status()), LlmErrorKind::kStreamBroken)
      << streamed.response.status();
  EXPECT_EQ(streamed.text, std::string_view(kPrimaryText).substr(0, 8));
  EXPECT_EQ(primary_->RequestCount(), 1u);
  EXPECT_EQ(backup_->RequestCount(), 0u);
  ExpectFailedRecord(LlmErrorKind::kStreamBroken, 1, BilledAtStreamStart());
}

TEST_P(FaultsTest, StreamCutBeforeOutputIsRetriedTransparently) {
  SetPrimaryFaults(
      {FaultRule(FakeFault{.kind = FakeFault::Kind::kCutStream, .after_deltas = 0}, 2)});
  const Streamed streamed = StreamThrough(Client(), "main", UserAsks("hi"), Context());
  ASSERT_TRUE(streamed.response.ok()) << streamed.response.status();
  // Every piece reached the caller exactly once.
  EXPECT_EQ(streamed.text, kPrimaryText);
  EXPECT_THAT(streamed.deltas, SizeIs((std::string_view(kPrimaryText).size() + 3) / 4));
  EXPECT_EQ(streamed.response->content, kPrimaryText);
  ExpectPrimaryAnswered(3, /*billed_failures=*/2);
  EXPECT_GE(OnlyRecord().time_to_first_token_us, 0);
}

TEST_P(FaultsTest, StreamCutAfterOutputIsBrokenWithoutRetryOrFallback) {
  SetPrimaryFaults({FaultRule(FakeFault{.kind = FakeFault::Kind::kCutStream, .after_deltas = 3})});
  const Streamed streamed = StreamThrough(Client(), "main", UserAsks("hi"), Context());
  EXPECT_EQ(ErrorKindOf(streamed.response.status()), LlmErrorKind::kStreamBroken)
      << streamed.response.status();
  // The caller keeps what it saw, and was told it is incomplete.
  EXPECT_THAT(streamed.deltas, SizeIs(3));
  EXPECT_EQ(streamed.text, std::string_view(kPrimaryText).substr(0, 12));
  EXPECT_EQ(primary_->RequestCount(), 1u);
  EXPECT_EQ(backup_->RequestCount(), 0u);
  ExpectFailedRecord(LlmErrorKind::kStreamBroken, 1, BilledAtStreamStart());
  const UsageRecord record = OnlyRecord();
  EXPECT_FALSE(record.fallback_used);
  EXPECT_GE(record.time_to_first_token_us, 0);
}

TEST_P(FaultsTest, CutNonStreamedAnswerIsRetried) {
  SetPrimaryFaults({FaultRule(FakeFault{.kind = FakeFault::Kind::kCutStream}, 1)});
  absl::StatusOr<ChatResponse> response = Client().Complete("main", UserAsks("hi"), Context());
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->content, kPrimaryText);
  ExpectPrimaryAnswered(2);
}

TEST_P(FaultsTest, StreamErrorEventBeforeOutputIsRetried) {
  SetPrimaryFaults(
      {FaultRule(FakeFault{.kind = FakeFault::Kind::kStreamError, .after_deltas = 0}, 1)});
  const Streamed streamed = StreamThrough(Client(), "main", UserAsks("hi"), Context());
  ASSERT_TRUE(streamed.response.ok()) << streamed.response.status();
  EXPECT_EQ(streamed.text, kPrimaryText);
  ExpectPrimaryAnswered(2, /*billed_failures=*/1);
}

TEST_P(FaultsTest, StreamErrorEventAfterOutputBreaksTheStream) {
  SetPrimaryFaults(
      {FaultRule(FakeFault{.kind = FakeFault::Kind::kStreamError, .after_deltas = 1})});
  const Streamed streamed = StreamThrough(Client(), "main", UserAsks("hi"), Context());
  EXPECT_EQ(ErrorKindOf(streamed.response.status()), LlmErrorKind::kStreamBroken)
      << streamed.response.status();
  EXPECT_EQ(streamed.text, std::string_view(kPrimaryText).substr(0, 4));
  EXPECT_EQ(primary_->RequestCount(), 1u);
  EXPECT_EQ(backup_->RequestCount(), 0u);
  ExpectFailedRecord(LlmErrorKind::kStreamBroken, 1, BilledAtStreamStart());
}

// Not streamed, the stream-error fault is a plain error status.
TEST_P(FaultsTest, StreamErrorFaultOnACompleteIsAServerError) {
  SetPrimaryFaults({FaultRule(FakeFault{.kind = FakeFault::Kind::kStreamError, .status = 503}, 1)});
  absl::StatusOr<ChatResponse> response = Client().Complete("main", UserAsks("hi"), Context());
  ASSERT_TRUE(response.ok()) << response.status();
  ExpectPrimaryAnswered(2);
}

ChatRequest CityRequest() {
  ChatRequest request = UserAsks(kCityPrompt);
  request.response_format = ResponseFormat{.name = "city", .schema = kCitySchema};
  return request;
}

// The city's JSON, broken (its first required property left out) in the
// first `invalid_answers` answers (-1: all).
std::vector<FakeRule> CityRules(int invalid_answers) {
  std::vector<FakeRule> rules(2);
  rules[0].times = invalid_answers;
  rules[0].fault.kind = FakeFault::Kind::kInvalidStructuredOutput;
  for (FakeRule& rule : rules) rule.reply.json = kCityJson;
  return rules;
}

TEST_P(FaultsTest, InvalidStructuredOutputIsRepairedOnce) {
  ASSERT_TRUE(primary_->SetRules(CityRules(1)).ok());
  const std::unique_ptr<ChatModel> model = Client().ForProfile("main");
  absl::StatusOr<StructuredResult> result = CompleteStructured(*model, CityRequest(), Context());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->repaired);
  EXPECT_EQ(Json::parse(result->json), Json::parse(kCityJson));
  const std::vector<RecordedRequest> requests = primary_->Requests();
  ASSERT_THAT(requests, SizeIs(2));
  // The fake dropped the first required property; the repair request says so.
  EXPECT_THAT(requests[0].body, Not(HasSubstr("missing required property")));
  EXPECT_THAT(requests[1].body, HasSubstr(R"(missing required property \"city\")"));
  const std::vector<UsageRecord> records = sink_->records();
  ASSERT_THAT(records, SizeIs(2));
  for (const UsageRecord& record : records) EXPECT_TRUE(record.ok);
  EXPECT_EQ(backup_->RequestCount(), 0u);
}

TEST_P(FaultsTest, StructuredOutputStillInvalidAfterRepairIsInvalidOutput) {
  ASSERT_TRUE(primary_->SetRules(CityRules(-1)).ok());
  const std::unique_ptr<ChatModel> model = Client().ForProfile("main");
  absl::StatusOr<StructuredResult> result = CompleteStructured(*model, CityRequest(), Context());
  EXPECT_EQ(ErrorKindOf(result.status()), LlmErrorKind::kInvalidOutput) << result.status();
  EXPECT_THAT(result.status().message(), HasSubstr("city"));
  EXPECT_EQ(primary_->RequestCount(), 2u);
  EXPECT_EQ(backup_->RequestCount(), 0u);
}

constexpr char kWrongKey[] = "sk-omniforge-wrong-Zk81QpA0vX";

TEST_P(FaultsTest, WrongKeyIsAuthAndNotRetried) {
  primary_setup().api_key = kWrongKey;
  absl::StatusOr<ChatResponse> completed = Client().Complete("single", UserAsks("hi"), Context());
  const Streamed streamed = StreamThrough(Client(), "single", UserAsks("hi"), Context());
  for (const absl::Status& status : {completed.status(), streamed.response.status()}) {
    EXPECT_EQ(ErrorKindOf(status), LlmErrorKind::kAuth) << status;
    EXPECT_THAT(status.ToString(), Not(HasSubstr(kWrongKey)));
  }
  EXPECT_THAT(streamed.deltas, IsEmpty());
  EXPECT_EQ(primary_->RequestCount(), 2u);  // one per call
  const std::vector<UsageRecord> records = sink_->records();
  ASSERT_THAT(records, SizeIs(2));
  for (const UsageRecord& record : records) {
    EXPECT_EQ(record.error_kind, LlmErrorKind::kAuth);
    EXPECT_EQ(record.attempts, 1);
  }
}

TEST_P(FaultsTest, WrongKeyFallsBackWithoutRetrying) {
  primary_setup().api_key = kWrongKey;
  absl::StatusOr<ChatResponse> response = Client().Complete("main", UserAsks("hi"), Context());
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->content, kBackupText);
  EXPECT_EQ(primary_->RequestCount(), 1u);
  EXPECT_EQ(backup_->RequestCount(), 1u);
  const UsageRecord record = OnlyRecord();
  EXPECT_TRUE(record.fallback_used);
  EXPECT_EQ(record.attempts, 2);
}

// A provider that echoes the key back ("Incorrect API key provided: ...", as
// OpenAI does) must not get it into the error or the usage record.
TEST_P(FaultsTest, EchoedApiKeyIsRedacted) {
  SetPrimaryFaults({FaultRule(
      FakeFault{.kind = FakeFault::Kind::kStatus,
                .status = 401,
                .body = absl::StrCat(R"({"error":{"message":"Incorrect API key provided: )",
                                     kPrimaryKey, R"(","type":"invalid_request_error"}})")})});
  absl::StatusOr<ChatResponse> completed = Client().Complete("single", UserAsks("hi"), Context());
  const Streamed streamed = StreamThrough(Client(), "single", UserAsks("hi"), Context());
  for (const absl::Status& status : {completed.status(), streamed.response.status()}) {
    EXPECT_EQ(ErrorKindOf(status), LlmErrorKind::kAuth) << status;
    EXPECT_THAT(status.message(), HasSubstr("Incorrect API key provided"));
    EXPECT_THAT(status.ToString(), Not(HasSubstr(kPrimaryKey)));
  }
  // The key did go out, in the header the API expects.
  const std::vector<RecordedRequest> requests = primary_->Requests();
  ASSERT_THAT(requests, SizeIs(2));
  const std::string header = api() == "openai" ? "authorization" : "x-api-key";
  ASSERT_TRUE(requests[0].headers.contains(header));
  EXPECT_THAT(requests[0].headers.at(header), HasSubstr(kPrimaryKey));
  const std::vector<UsageRecord> records = sink_->records();
  ASSERT_THAT(records, SizeIs(2));
  for (const UsageRecord& record : records) {
    EXPECT_THAT(record.error_message, HasSubstr("Incorrect API key provided"));
    EXPECT_THAT(record.error_message, Not(HasSubstr(kPrimaryKey)));
  }
}

TEST_P(FaultsTest, CircuitBreakerSkipsAFailingPrimaryThenProbesIt) {
  setup_.failure_threshold = 3;
  setup_.open_ms = 300;
  SetPrimaryFaults({FaultRule(StatusFault(500))});

  // Three failed attempts open the primary's circuit; the backup answers.
  absl::StatusOr<ChatResponse> first = Client().Complete("main", UserAsks("hi"), Context());
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->content, kBackupText);
  EXPECT_EQ(primary_->RequestCount(), 3u);

  // While open, calls go straight to the backup.
  for (int call = 0; call < 3; ++call) {
    absl::StatusOr<ChatResponse> skipped = Client().Complete("main", UserAsks("hi"), Context());
    ASSERT_TRUE(skipped.ok()) << skipped.status();
    EXPECT_EQ(skipped->content, kBackupText);
  }
  EXPECT_EQ(primary_->RequestCount(), 3u);
  EXPECT_EQ(backup_->RequestCount(), 4u);
  const UsageRecord skipped = sink_->records().back();
  EXPECT_TRUE(skipped.fallback_used);
  EXPECT_EQ(skipped.attempts, 1);

  // Once open_ms passed, one probe goes to the (now healthy) primary and
  // closes the circuit. The wait is the breaker's own real-time period.
  SetPrimaryFaults({});
  std::this_thread::sleep_for(std::chrono::milliseconds(setup_.open_ms + 20));
  absl::StatusOr<ChatResponse> probed = Client().Complete("main", UserAsks("hi"), Context());
  ASSERT_TRUE(probed.ok()) << probed.status();
  EXPECT_EQ(probed->content, kPrimaryText);
  EXPECT_EQ(primary_->RequestCount(), 4u);
  EXPECT_FALSE(sink_->records().back().fallback_used);

  absl::StatusOr<ChatResponse> closed = Client().Complete("main", UserAsks("hi"), Context());
  ASSERT_TRUE(closed.ok()) << closed.status();
  EXPECT_EQ(closed->content, kPrimaryText);
  EXPECT_EQ(primary_->RequestCount(), 5u);
  EXPECT_EQ(backup_->RequestCount(), 4u);
}

TEST_P(FaultsTest, FailedProbeReopensTheCircuit) {
  setup_.failure_threshold = 2;
  setup_.open_ms = 200;
  setup_.max_attempts = 2;
  SetPrimaryFaults({FaultRule(StatusFault(503))});
  ASSERT_TRUE(Client().Complete("main", UserAsks("hi"), Context()).ok());
  EXPECT_EQ(primary_->RequestCount(), 2u);

  std::this_thread::sleep_for(std::chrono::milliseconds(setup_.open_ms + 20));
  // The probe fails: one request, then the circuit is open again and the
  // remaining attempt is refused without a request.
  ASSERT_TRUE(Client().Complete("main", UserAsks("hi"), Context()).ok());
  EXPECT_EQ(primary_->RequestCount(), 3u);
  ASSERT_TRUE(Client().Complete("main", UserAsks("hi"), Context()).ok());
  EXPECT_EQ(primary_->RequestCount(), 3u);
  EXPECT_EQ(backup_->RequestCount(), 3u);
}

TEST_P(FaultsTest, ConnectionRefusedIsAConnectionError) {
  const RefusingPort refusing;
  ASSERT_NE(refusing.port(), 0);
  primary_setup().base_url =
      absl::StrCat("http://127.0.0.1:", refusing.port(), api() == "openai" ? "/v1" : "");
  const Stopwatch stopwatch;
  absl::StatusOr<ChatResponse> response = Client().Complete("single", UserAsks("hi"), Context());
  EXPECT_EQ(ErrorKindOf(response.status()), LlmErrorKind::kConnection) << response.status();
  EXPECT_LT(stopwatch.ElapsedMs(), kSlackMs);
  ExpectFailedRecord(LlmErrorKind::kConnection, 3);
}

TEST_P(FaultsTest, ConnectionRefusedFallsBack) {
  const RefusingPort refusing;
  ASSERT_NE(refusing.port(), 0);
  primary_setup().base_url =
      absl::StrCat("http://127.0.0.1:", refusing.port(), api() == "openai" ? "/v1" : "");
  const Streamed streamed = StreamThrough(Client(), "main", UserAsks("hi"), Context());
  ASSERT_TRUE(streamed.response.ok()) << streamed.response.status();
  EXPECT_EQ(streamed.text, kBackupText);
  const UsageRecord record = OnlyRecord();
  EXPECT_TRUE(record.fallback_used);
  EXPECT_EQ(record.attempts, 4);
  EXPECT_EQ(record.provider, "backup");
}

// The caller gives up while the stream's head is in and its body seconds
// away (a model thinking): nothing arrives to look at the flag for, yet the
// call ends within about a second (curl polls it while idle).
TEST_P(FaultsTest, CancellationWhileTheStreamWaitsEndsTheCallPromptly) {
  FakeRule thinking = ReplyRule(kPrimaryText, kPrimaryUsage);
  thinking.first_byte_delay_ms = 5'000;
  ASSERT_TRUE(primary_->SetRules({thinking}).ok());
  std::atomic<bool> cancelled{false};
  CallContext context = ContextWithBudget(std::chrono::seconds(8));
  context.cancelled = [&cancelled] { return cancelled.load(); };
  std::optional<Stopwatch> since_cancel;
  std::thread canceller([&] {
    // Once the request is in, only the body can come, in 5 s.
    ASSERT_TRUE(primary_->WaitForRequests(1, 5'000));
    since_cancel.emplace();
    cancelled = true;
  });
  const Streamed streamed = StreamThrough(Client(), "main", UserAsks("hi"), context);
  canceller.join();
  EXPECT_EQ(ErrorKindOf(streamed.response.status()), LlmErrorKind::kCancelled)
      << streamed.response.status();
  ASSERT_TRUE(since_cancel.has_value());
  EXPECT_LT(since_cancel->ElapsedMs(), 1'000 + kSlackMs);
  EXPECT_THAT(streamed.deltas, IsEmpty());
  EXPECT_EQ(primary_->RequestCount(), 1u);
  EXPECT_EQ(backup_->RequestCount(), 0u);
  ExpectFailedRecord(LlmErrorKind::kCancelled, 1);
}

// Cancelled after output began: what the caller saw stays, nothing more
// comes, nothing is retried.
TEST_P(FaultsTest, CancellationAfterOutputBeganEndsTheStream) {
  FakeRule slow = ReplyRule(kPrimaryText, kPrimaryUsage);
  slow.chunk_delay_ms = 100;
  ASSERT_TRUE(primary_->SetRules({slow}).ok());
  std::atomic<bool> cancelled{false};
  CallContext context = Context();
  context.cancelled = [&cancelled] { return cancelled.load(); };
  std::optional<Stopwatch> since_cancel;
  const Streamed streamed =
      StreamThrough(Client(), "main", UserAsks("hi"), context, [&](const Streamed& so_far) {
        if (so_far.deltas.size() == 1) {
          since_cancel.emplace();
          cancelled = true;
        }
        return true;
      });
  EXPECT_EQ(ErrorKindOf(streamed.response.status()), LlmErrorKind::kCancelled)
      << streamed.response.status();
  ASSERT_TRUE(since_cancel.has_value());
  EXPECT_LT(since_cancel->ElapsedMs(), kSlackMs);
  EXPECT_THAT(streamed.deltas, SizeIs(1));
  EXPECT_EQ(streamed.text, std::string_view(kPrimaryText).substr(0, 4));
  EXPECT_EQ(primary_->RequestCount(), 1u);
  EXPECT_EQ(backup_->RequestCount(), 0u);
  ExpectFailedRecord(LlmErrorKind::kCancelled, 1, BilledAtStreamStart());
}

TEST_P(FaultsTest, CallbackReturningFalseCancels) {
  const Streamed streamed =
      StreamThrough(Client(), "main", UserAsks("hi"), Context(),
                    [](const Streamed& so_far) { return so_far.deltas.size() < 2; });
  EXPECT_EQ(ErrorKindOf(streamed.response.status()), LlmErrorKind::kCancelled)
      << streamed.response.status();
  EXPECT_THAT(streamed.deltas, SizeIs(2));
  EXPECT_EQ(primary_->RequestCount(), 1u);
  EXPECT_EQ(backup_->RequestCount(), 0u);
  ExpectFailedRecord(LlmErrorKind::kCancelled, 1, BilledAtStreamStart());
}

// A call without its own deadline ends when the call this thread serves
// does, long before the configured default timeout (10 s here).
TEST_P(FaultsTest, ServedCallDeadlineBoundsACallWithoutItsOwnDeadline) {
  SetPrimaryFaults({FaultRule(FakeFault{.kind = FakeFault::Kind::kHang})});
  const Stopwatch stopwatch;
  absl::StatusOr<ChatResponse> response;
  {
    const core::ScopedCallDeadline scope(std::chrono::system_clock::now() +
                                         std::chrono::milliseconds(300));
    response = Client().Complete("main", UserAsks("hi"), CallContext{});
  }
  EXPECT_EQ(ErrorKindOf(response.status()), LlmErrorKind::kTimeout) << response.status();
  EXPECT_GE(stopwatch.ElapsedMs(), 290);
  EXPECT_LT(stopwatch.ElapsedMs(), 300 + kSlackMs);
  EXPECT_EQ(backup_->RequestCount(), 0u);
  ExpectFailedRecord(LlmErrorKind::kTimeout, 1);
}

TEST_P(FaultsTest, ConcurrentStreamsThroughOneClientAllSucceed) {
  constexpr int kCalls = 64;
  ASSERT_TRUE(primary_->SetRules({}).ok());  // each answer echoes its prompt
  LlmClient& client = Client();
  std::vector<Streamed> results(kCalls);
  std::vector<std::thread> threads;
  threads.reserve(kCalls);
  for (int i = 0; i < kCalls; ++i) {
    threads.emplace_back([&client, &results, i] {
      results[i] = StreamThrough(client, "main", UserAsks(absl::StrCat("request number ", i)),
                                 ContextWithBudget(std::chrono::seconds(10)));
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int i = 0; i < kCalls; ++i) {
    SCOPED_TRACE(i);
    ASSERT_TRUE(results[i].response.ok()) << results[i].response.status();
    const std::string expected = absl::StrCat("echo: request number ", i);
    EXPECT_EQ(results[i].response->content, expected);
    EXPECT_EQ(results[i].text, expected);
  }
  EXPECT_EQ(primary_->RequestCount(), static_cast<size_t>(kCalls));
  EXPECT_EQ(backup_->RequestCount(), 0u);
  const std::vector<UsageRecord> records = sink_->records();
  ASSERT_THAT(records, SizeIs(kCalls));
  for (const UsageRecord& record : records) {
    EXPECT_TRUE(record.ok) << record.error_message;
    EXPECT_EQ(record.attempts, 1);
  }
}

// The local ports of this process's TCP connections to 127.0.0.1:`port`:
// a connection kept and reused keeps its port, a new one gets another.
std::vector<int> ClientPortsTo(int port) {
  std::vector<int> ports;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", error)) {
    int fd = -1;
    if (!absl::SimpleAtoi(entry.path().filename().string(), &fd)) continue;
    sockaddr_in peer{};
    sockaddr_in local{};
    socklen_t peer_size = sizeof(peer);
    socklen_t local_size = sizeof(local);
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_size) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_size) != 0 ||
        peer.sin_family != AF_INET || peer.sin_addr.s_addr != htonl(INADDR_LOOPBACK) ||
        ntohs(peer.sin_port) != port) {
      continue;
    }
    ports.push_back(ntohs(local.sin_port));
  }
  return ports;
}

// Calls one after the other, streamed or not, share one kept-alive
// connection. The fake has a single serving thread, so a second connection
// would not even be served in time.
TEST_P(FaultsTest, SequentialCallsReuseTheConnection) {
  std::unique_ptr<FakeLlmServer> single_threaded =
      StartFake(kPrimaryKey, {ReplyRule(kPrimaryText, kPrimaryUsage)},
                FakeOptions{.max_threads = 1, .keep_alive_timeout_s = 10});
  ASSERT_NE(single_threaded, nullptr);
  primary_setup().base_url = BaseUrl(*single_threaded, api());
  std::vector<int> first_ports;
  for (int call = 0; call < 10; ++call) {
    SCOPED_TRACE(call);
    const CallContext context = ContextWithBudget(std::chrono::seconds(2));
    if (call % 2 == 0) {
      absl::StatusOr<ChatResponse> response = Client().Complete("single", UserAsks("hi"), context);
      ASSERT_TRUE(response.ok()) << response.status();
    } else {
      const Streamed streamed = StreamThrough(Client(), "single", UserAsks("hi"), context);
      ASSERT_TRUE(streamed.response.ok()) << streamed.response.status();
    }
    const std::vector<int> ports = ClientPortsTo(single_threaded->port());
    ASSERT_THAT(ports, SizeIs(1));
    if (call == 0) first_ports = ports;
    EXPECT_EQ(ports, first_ports);
  }
  EXPECT_EQ(single_threaded->RequestCount(), 10u);
}

INSTANTIATE_TEST_SUITE_P(Faults, FaultsTest, ::testing::Values("openai", "anthropic"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace omniforge::llm
