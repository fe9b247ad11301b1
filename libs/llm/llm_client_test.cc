#include "libs/llm/llm_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "libs/core/call_deadline.h"
#include "libs/core/logging.h"
#include "libs/llm/client_test_fakes.h"

namespace omniforge::llm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr int64_t kSecond = 1'000'000;

std::vector<std::string>& LogLines() {
  static std::vector<std::string> lines;
  return lines;
}

std::vector<std::string> Texts(const std::vector<StreamDelta>& deltas) {
  std::vector<std::string> texts;
  texts.reserve(deltas.size());
  for (const StreamDelta& delta : deltas) texts.push_back(delta.text);
  return texts;
}

ChatRequest Hello() {
  ChatRequest request;
  request.messages.push_back(ChatMessage{.role = Role::kUser, .content = "hello"});
  return request;
}

// A client over two fake providers, "a" and "b", with profiles
//   main:   a/model-1 -> b/model-2
//   single: a/model-1
class LlmClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.retry.max_attempts = 3;
    options_.breaker.failure_threshold = 100;
    options_.default_timeout_micros = 60 * kSecond;
    options_.prices.Set("a", "model-1", Price{2.0, 0.5, 8.0});
    options_.prices.Set("b", "model-2", Price{1.0, 0.25, 4.0});
  }

  LlmClient& Client() {
    if (client_ == nullptr) {
      options_.providers = {{"a", a_}, {"b", b_}};
      options_.profiles = {{"main", {{"a", "model-1"}, {"b", "model-2"}}},
                           {"single", {{"a", "model-1"}}}};
      options_.usage_sink = sink_;
      options_.clock = &clock_;
      options_.random = &random_;
      options_.metrics = &metrics_;
      absl::StatusOr<std::unique_ptr<LlmClient>> client = LlmClient::Create(std::move(options_));
      EXPECT_TRUE(client.ok()) << client.status();
      client_ = *std::move(client);
    }
    return *client_;
  }

  CallContext Context() {
    CallContext context;
    context.operation_type = "plan_generation";
    context.deadline_micros = clock_.NowMicros() + 60 * kSecond;
    return context;
  }

  UsageRecord OnlyRecord() {
    const std::vector<UsageRecord> records = sink_->records();
    EXPECT_EQ(records.size(), 1u);
    return records.empty() ? UsageRecord{} : records.back();
  }

  double CounterValue(const std::string& name, const core::Labels& labels) {
    return metrics_.GetCounter(name, "", labels).Value();
  }

  FakeClock clock_;
  FixedRandom random_{0.5};
  core::MetricsRegistry metrics_;
  std::shared_ptr<FakeChatModel> a_ = std::make_shared<FakeChatModel>(&clock_);
  std::shared_ptr<FakeChatModel> b_ = std::make_shared<FakeChatModel>(&clock_);
  std::shared_ptr<RecordingUsageSink> sink_ = std::make_shared<RecordingUsageSink>();
  LlmClientOptions options_;
  std::unique_ptr<LlmClient> client_;
};

TEST_F(LlmClientTest, RetriesRetryableErrorsWithJitteredBackoff) {
  a_->PushError(LlmErrorKind::kServerError);
  a_->PushError(LlmErrorKind::kConnection);
  a_->PushAnswer("hi");
  absl::StatusOr<ChatResponse> response = Client().Complete("main", Hello(), Context());
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->content, "hi");
  // Uniform 0.5 of the 200 ms and 400 ms ceilings.
  EXPECT_THAT(clock_.sleeps(), ElementsAre(100'000, 200'000));
  EXPECT_EQ(b_->calls(), 0u);
  for (const CallContext& context : a_->contexts()) EXPECT_EQ(context.model, "model-1");
  EXPECT_EQ(OnlyRecord().attempts, 3);
  EXPECT_EQ(CounterValue("omniforge_llm_retries_total",
                         {{"provider", "a"}, {"model", "model-1"}, {"reason", "server_error"}}),
            1);
}

TEST_F(LlmClientTest, HonoursRetryAfter) {
  a_->PushError(LlmErrorKind::kRateLimited, 7 * kSecond);
  a_->PushAnswer("hi");
  ASSERT_TRUE(Client().Complete("main", Hello(), Context()).ok());
  EXPECT_THAT(clock_.sleeps(), ElementsAre(7 * kSecond));
}

TEST_F(LlmClientTest, AWaitThatWouldCrossTheDeadlineFallsBackInstead) {
  a_->PushError(LlmErrorKind::kRateLimited, 30 * kSecond);
  b_->PushAnswer("from b");
  CallContext context = Context();
  context.deadline_micros = clock_.NowMicros() + 10 * kSecond;
  absl::StatusOr<ChatResponse> response = Client().Complete("main", Hello(), context);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->content, "from b");
  EXPECT_TRUE(clock_.sleeps().empty());
  EXPECT_EQ(a_->calls(), 1u);
}

TEST_F(LlmClientTest, AWaitThatWouldCrossTheDeadlineEndsWithTheLastError) {
  a_->PushError(LlmErrorKind::kRateLimited, 30 * kSecond);
  CallContext context = Context();
  context.deadline_micros = clock_.NowMicros() + 10 * kSecond;
  absl::StatusOr<ChatResponse> response = Client().Complete("single", Hello(), context);
  EXPECT_EQ(ErrorKindOf(response.status()), LlmErrorKind::kRateLimited);
  EXPECT_TRUE(clock_.sleeps().empty());
  EXPECT_LT(clock_.NowMicros(), context.deadline_micros);
}

TEST_F(LlmClientTest, RetriesNeverRunPastTheDeadline) {
  options_.retry.max_attempts = 10;
  const int64_t start = clock_.NowMicros();
  for (int i = 0; i < 10; ++i) {
    a_->Push({{}, LlmError(LlmErrorKind::kServerError, "busy"), 3 * kSecond});
  }
  CallContext context = Context();
  context.deadline_micros = start + 10 * kSecond;
  absl::StatusOr<ChatResponse> response = Client().Complete("single", Hello(), context);
  EXPECT_EQ(ErrorKindOf(response.status()), LlmErrorKind::kTimeout);
  EXPECT_LE(clock_.NowMicros(), context.deadline_micros);
  // Every attempt was given the call's own deadline, not a fresh budget.
  for (const CallContext& attempt : a_->contexts()) {
    EXPECT_EQ(attempt.deadline_micros, context.deadline_micros);
    EXPECT_EQ(attempt.operation_type, "plan_generation");
  }
  EXPECT_EQ(OnlyRecord().error_kind, LlmErrorKind::kTimeout);
}

TEST_F(LlmClientTest, NoDeadlineMeansTheDefaultTimeout) {
  a_->PushAnswer("hi");
  CallContext context = Context();
  context.deadline_micros = 0;
  const int64_t start = clock_.NowMicros();
  ASSERT_TRUE(Client().Complete("main", Hello(), context).ok());
  ASSERT_EQ(a_->contexts().size(), 1u);
  EXPECT_EQ(a_->contexts()[0].deadline_micros, start + 60 * kSecond);
}

TEST_F(LlmClientTest, NegativeDeadlineHasPassed) {
  a_->PushAnswer("too late");
  CallContext context = Context();
  context.deadline_micros = -1;
  absl::StatusOr<ChatResponse> response = Client().Complete("main", Hello(), context);
  EXPECT_EQ(ErrorKindOf(response.status()), LlmErrorKind::kTimeout);
  EXPECT_EQ(a_->calls(), 0u);
}

TEST_F(LlmClientTest, FallsBackWhenRetriesAreExhausted) {
  for (int i = 0; i < 3; ++i) a_->PushError(LlmErrorKind::kServerError);
  b_->PushAnswer("from b", {.prompt_tokens = 100, .completion_tokens = 10, .cached_tokens = 0});
  absl::StatusOr<ChatResponse> response = Client().Complete("main", Hello(), Context());
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->content, "from b");
  ASSERT_EQ(b_->requests().size(), 1u);
  EXPECT_EQ(b_->contexts()[0].model, "model-2");
  const UsageRecord record = OnlyRecord();
  EXPECT_EQ(record.provider, "b");
  EXPECT_EQ(record.model, "model-2");
  EXPECT_TRUE(record.fallback_used);
  EXPECT_EQ(record.attempts, 4);
  EXPECT_EQ(CounterValue("omniforge_llm_fallbacks_total",
                         {{"provider", "a"}, {"model", "model-1"}, {"reason", "server_error"}}),
            1);
}

TEST_F(LlmClientTest, NonRetryableErrorMovesOnWithoutRetrying) {
  a_->PushError(LlmErrorKind::kInvalidRequest);
  b_->PushAnswer("from b");
  absl::StatusOr<ChatResponse> response = Client().Complete("main", Hello(), Context());
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(a_->calls(), 1u);
  EXPECT_TRUE(clock_.sleeps().empty());
}

TEST_F(LlmClientTest, LastTargetsErrorIsReturnedWhenTheChainIsExhausted) {
  a_->PushError(LlmErrorKind::kServerError);
  a_->PushError(LlmErrorKind::kServerError);
  a_->PushError(LlmErrorKind::kServerError);
  b_->PushError(LlmErrorKind::kAuth);
  absl::StatusOr<ChatResponse> response = Client().Complete("main", Hello(), Context());
  EXPECT_EQ(ErrorKindOf(response.status()), LlmErrorKind::kAuth);
  const UsageRecord record = OnlyRecord();
  EXPECT_FALSE(record.ok);
  EXPECT_EQ(record.error_kind, LlmErrorKind::kAuth);
  EXPECT_EQ(record.error_message, "scripted failure");
  EXPECT_EQ(record.provider, "b");
  EXPECT_TRUE(record.fallback_used);
  EXPECT_EQ(record.cost_usd, 0);
}

TEST_F(LlmClientTest, CancelledErrorEndsTheCallAtOnce) {
  a_->PushError(LlmErrorKind::kCancelled);
  absl::StatusOr<ChatResponse> response = Client().Complete("main", Hello(), Context());
  EXPECT_EQ(ErrorKindOf(response.status()), LlmErrorKind::kCancelled);
  EXPECT_EQ(a_->calls(), 1u);
  EXPECT_EQ(b_->calls(), 0u);
}

TEST_F(LlmClientTest, CancelledContextMakesNoAttempt) {
  CallContext context = Context();
  context.cancelled = [] { return true; };
  absl::StatusOr<ChatResponse> response = Client().Complete("main", Hello(), context);
  EXPECT_EQ(ErrorKindOf(response.status()), LlmErrorKind::kCancelled);
  EXPECT_EQ(a_->calls(), 0u);
  EXPECT_EQ(OnlyRecord().attempts, 0);
}

TEST_F(LlmClientTest, CancellationDuringBackoffEndsTheCall) {
  a_->PushError(LlmErrorKind::kServerError);
  a_->PushAnswer("never");
  CallContext context = Context();
  // Cancelled once the first attempt is under way: seen by the backoff sleep.
  context.cancelled = [this] { return a_->calls() > 0; };
  absl::StatusOr<ChatResponse> response = Client().Complete("main", Hello(), context);
  EXPECT_EQ(ErrorKindOf(response.status()), LlmErrorKind::kCancelled);
  EXPECT_EQ(a_->calls(), 1u);
  EXPECT_EQ(b_->calls(), 0u);
}

TEST_F(LlmClientTest, UntypedProviderErrorsAreRetriedAsServerErrors) {
  a_->Push({{}, absl::InternalError("oops"), 0});
  a_->PushAnswer("hi");
  EXPECT_TRUE(Client().Complete("single", Hello(), Context()).ok());
  EXPECT_EQ(a_->calls(), 2u);
}

TEST_F(LlmClientTest, OpenCircuitSkipsToTheFallback) {
  options_.retry.max_attempts = 2;
  options_.breaker.failure_threshold = 2;
  options_.breaker.open_micros = 30 * kSecond;
  a_->PushError(LlmErrorKind::kServerError);
  a_->PushError(LlmErrorKind::kServerError);
  b_->PushAnswer("b1");
  ASSERT_TRUE(Client().Complete("main", Hello(), Context()).ok());
  ASSERT_EQ(a_->calls(), 2u);

  // Open: the primary is not called at all.
  b_->PushAnswer("b2");
  absl::StatusOr<ChatResponse> second = Client().Complete("main", Hello(), Context());
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->content, "b2");
  EXPECT_EQ(a_->calls(), 2u);
  EXPECT_EQ(sink_->records().back().attempts, 1);
  EXPECT_EQ(CounterValue("omniforge_llm_fallbacks_total",
                         {{"provider", "a"}, {"model", "model-1"}, {"reason", "circuit_open"}}),
            1);

  // After the open period one probe reaches the primary; its success closes
  // the circuit.
  clock_.Advance(30 * kSecond);
  a_->PushAnswer("a again");
  absl::StatusOr<ChatResponse> third = Client().Complete("main", Hello(), Context());
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_EQ(third->content, "a again");
  EXPECT_FALSE(sink_->records().back().fallback_used);
}

TEST_F(LlmClientTest, TimeoutsAtTheCallersDeadlineDoNotCountAgainstTheCircuit) {
  options_.retry.max_attempts = 1;
  options_.breaker.failure_threshold = 2;
  // The caller's own short deadline runs out, three times in a row: the
  // target is merely slower than the caller can wait.
  for (int i = 0; i < 3; ++i) {
    a_->Push({{}, Answer("too late"), 10 * kSecond});
    CallContext context = Context();
    context.deadline_micros = clock_.NowMicros() + kSecond;
    EXPECT_EQ(ErrorKindOf(Client().Complete("single", Hello(), context).status()),
              LlmErrorKind::kTimeout);
  }
  // So does the deadline of the gRPC call being served, when the caller
  // gives none.
  for (int i = 0; i < 3; ++i) {
    a_->Push({{}, Answer("too late"), 10 * kSecond});
    const core::ScopedCallDeadline served(std::chrono::system_clock::time_point(
        std::chrono::microseconds(clock_.NowMicros() + kSecond)));
    CallContext context = Context();
    context.deadline_micros = 0;
    EXPECT_EQ(ErrorKindOf(Client().Complete("single", Hello(), context).status()),
              LlmErrorKind::kTimeout);
  }
  a_->PushAnswer("still trusted");
  absl::StatusOr<ChatResponse> answer = Client().Complete("single", Hello(), Context());
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(a_->calls(), 7u);

  // Per-attempt timeouts well before the call's deadline do count.
  a_->PushError(LlmErrorKind::kTimeout);
  a_->PushError(LlmErrorKind::kTimeout);
  EXPECT_EQ(ErrorKindOf(Client().Complete("single", Hello(), Context()).status()),
            LlmErrorKind::kTimeout);
  EXPECT_EQ(ErrorKindOf(Client().Complete("single", Hello(), Context()).status()),
            LlmErrorKind::kTimeout);
  EXPECT_EQ(ErrorKindOf(Client().Complete("single", Hello(), Context()).status()),
            LlmErrorKind::kCircuitOpen);
  EXPECT_EQ(a_->calls(), 9u);
}

TEST_F(LlmClientTest, TokensBilledToFailedAttemptsAreRecordedAndPriced) {
  // A stream that broke after its usage arrived (before output reached the
  // caller, so it falls back), then a fallback that answers.
  a_->Push({{},
            WithBilledUsage(LlmError(LlmErrorKind::kConnection, "cut after usage"),
                            TokenUsage{.prompt_tokens = 1000, .completion_tokens = 100}),
            0});
  options_.retry.max_attempts = 1;
  b_->PushAnswer("b", TokenUsage{.prompt_tokens = 1000, .completion_tokens = 50});
  absl::StatusOr<ChatResponse> response =
      Client().Stream("main", Hello(), Context(), [](const StreamDelta&) { return true; });
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->usage, (TokenUsage{.prompt_tokens = 1000, .completion_tokens = 50}));
  UsageRecord record = OnlyRecord();
  EXPECT_EQ(record.tokens, (TokenUsage{.prompt_tokens = 2000, .completion_tokens = 150}));
  // a: 1000 * 2 + 100 * 8 = 2800; b: 1000 * 1 + 50 * 4 = 1200 micro-USD.
  EXPECT_DOUBLE_EQ(record.cost_usd, 0.004);
  EXPECT_DOUBLE_EQ(response->cost_usd, 0.004);

  // A call that fails outright still records what was billed.
  a_->Push({{TextDelta("partial")},
            WithBilledUsage(LlmError(LlmErrorKind::kStreamBroken, "broken"),
                            TokenUsage{.prompt_tokens = 10, .completion_tokens = 3}),
            0});
  EXPECT_EQ(
      ErrorKindOf(Client()
                      .Stream("main", Hello(), Context(), [](const StreamDelta&) { return true; })
                      .status()),
      LlmErrorKind::kStreamBroken);
  record = sink_->records().back();
  EXPECT_FALSE(record.ok);
  EXPECT_EQ(record.tokens, (TokenUsage{.prompt_tokens = 10, .completion_tokens = 3}));
  EXPECT_DOUBLE_EQ(record.cost_usd, (10 * 2.0 + 3 * 8.0) / 1e6);
  // Metrics count tokens by the target that billed them.
  EXPECT_EQ(CounterValue("omniforge_llm_tokens_total",
                         {{"provider", "a"}, {"model", "model-1"}, {"kind", "completion"}}),
            103);
  EXPECT_EQ(CounterValue("omniforge_llm_tokens_total",
                         {{"provider", "b"}, {"model", "model-2"}, {"kind", "completion"}}),
            50);
}

TEST_F(LlmClientTest, AProbeEndedByAThrowingCallbackFreesTheProbeSlot) {
  options_.retry.max_attempts = 1;
  options_.breaker.failure_threshold = 1;
  options_.breaker.open_micros = 30 * kSecond;
  a_->PushError(LlmErrorKind::kServerError);
  EXPECT_FALSE(Client().Complete("single", Hello(), Context()).ok());

  // The half-open probe ends with the caller's callback throwing: the call
  // still has its record, and the slot is free for the next probe.
  clock_.Advance(30 * kSecond);
  a_->Push({{TextDelta("boom")}, Answer("never"), 0});
  EXPECT_THROW(
      (void)Client().Stream("single", Hello(), Context(),
                            [](const StreamDelta&) -> bool { throw std::runtime_error("x"); }),
      std::runtime_error);
  ASSERT_EQ(sink_->records().size(), 2u);
  EXPECT_EQ(sink_->records().back().error_kind, LlmErrorKind::kCancelled);

  a_->PushAnswer("probe");
  absl::StatusOr<ChatResponse> response = Client().Complete("single", Hello(), Context());
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->content, "probe");
}

TEST_F(LlmClientTest, EveryCircuitOpenIsCircuitOpen) {
  options_.retry.max_attempts = 1;
  options_.breaker.failure_threshold = 1;
  a_->PushError(LlmErrorKind::kServerError);
  EXPECT_EQ(ErrorKindOf(Client().Complete("single", Hello(), Context()).status()),
            LlmErrorKind::kServerError);
  absl::StatusOr<ChatResponse> response = Client().Complete("single", Hello(), Context());
  EXPECT_EQ(ErrorKindOf(response.status()), LlmErrorKind::kCircuitOpen);
  EXPECT_EQ(a_->calls(), 1u);
  EXPECT_EQ(sink_->records().back().attempts, 0);
}

TEST_F(LlmClientTest, StreamFailingBeforeItsFirstDeltaFallsBack) {
  options_.retry.max_attempts = 1;
  a_->PushError(LlmErrorKind::kConnection);
  b_->Push({{TextDelta("from "), TextDelta("b")}, Answer("from b"), 0});
  std::vector<StreamDelta> seen;
  absl::StatusOr<ChatResponse> response =
      Client().Stream("main", Hello(), Context(), [&](const StreamDelta& delta) {
        seen.push_back(delta);
        return true;
      });
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_THAT(Texts(seen), ElementsAre("from ", "b"));
  EXPECT_TRUE(OnlyRecord().streamed);
  EXPECT_TRUE(OnlyRecord().fallback_used);
}

TEST_F(LlmClientTest, StreamBrokenAfterOutputIsNeverRetriedOrRerouted) {
  a_->Push({{TextDelta("partial ")}, LlmError(LlmErrorKind::kConnection, "reset"), 0});
  a_->PushAnswer("must not be used");
  b_->PushAnswer("must not be used");
  std::vector<StreamDelta> seen;
  absl::StatusOr<ChatResponse> response =
      Client().Stream("main", Hello(), Context(), [&](const StreamDelta& delta) {
        seen.push_back(delta);
        return true;
      });
  EXPECT_EQ(ErrorKindOf(response.status()), LlmErrorKind::kStreamBroken);
  EXPECT_THAT(Texts(seen), ElementsAre("partial "));
  EXPECT_EQ(a_->calls(), 1u);
  EXPECT_EQ(b_->calls(), 0u);
  const UsageRecord record = OnlyRecord();
  EXPECT_EQ(record.error_kind, LlmErrorKind::kStreamBroken);
  EXPECT_EQ(record.attempts, 1);
  EXPECT_GE(record.time_to_first_token_us, 0);
}

TEST_F(LlmClientTest, StreamBrokenFromTheProviderEndsTheCall) {
  a_->PushError(LlmErrorKind::kStreamBroken);
  absl::StatusOr<ChatResponse> response =
      Client().Stream("main", Hello(), Context(), [](const StreamDelta&) { return true; });
  EXPECT_EQ(ErrorKindOf(response.status()), LlmErrorKind::kStreamBroken);
  EXPECT_EQ(b_->calls(), 0u);
}

TEST_F(LlmClientTest, CallerStoppingTheStreamIsCancelled) {
  a_->Push({{TextDelta("one"), TextDelta("two")}, Answer("onetwo"), 0});
  std::vector<StreamDelta> seen;
  absl::StatusOr<ChatResponse> response =
      Client().Stream("main", Hello(), Context(), [&](const StreamDelta& delta) {
        seen.push_back(delta);
        return false;
      });
  EXPECT_EQ(ErrorKindOf(response.status()), LlmErrorKind::kCancelled);
  EXPECT_EQ(seen.size(), 1u);
  EXPECT_EQ(b_->calls(), 0u);
}

TEST_F(LlmClientTest, StreamTimeToFirstTokenIsMeasuredFromTheCallStart) {
  options_.retry.max_attempts = 2;
  a_->Push({{}, LlmError(LlmErrorKind::kServerError, "busy"), 2 * kSecond});
  ChatResponse answer = Answer("hi");
  answer.time_to_first_token_us = 300'000;
  a_->Push({{TextDelta("hi")}, answer, 0});
  ASSERT_TRUE(
      Client().Stream("main", Hello(), Context(), [](const StreamDelta&) { return true; }).ok());
  // 2 s failed attempt + 100 ms backoff + 300 ms to the first token.
  EXPECT_EQ(OnlyRecord().time_to_first_token_us, 2'400'000);
}

TEST_F(LlmClientTest, UnknownProfileIsNotConfigured) {
  EXPECT_FALSE(Client().HasProfile("nope"));
  EXPECT_TRUE(Client().HasProfile("main"));
  absl::StatusOr<ChatResponse> response = Client().Complete("nope", Hello(), Context());
  EXPECT_EQ(ErrorKindOf(response.status()), LlmErrorKind::kNotConfigured);
  EXPECT_THAT(response.status().message(), HasSubstr("nope"));
  const UsageRecord record = OnlyRecord();
  EXPECT_EQ(record.profile, "nope");
  EXPECT_EQ(record.error_kind, LlmErrorKind::kNotConfigured);
  EXPECT_EQ(record.attempts, 0);
}

TEST_F(LlmClientTest, OneUsageRecordWithEveryFieldForASuccess) {
  a_->PushError(LlmErrorKind::kServerError);
  a_->PushAnswer("hi", {.prompt_tokens = 1000, .completion_tokens = 500, .cached_tokens = 200},
                 2 * kSecond);
  ASSERT_TRUE(Client().Complete("main", Hello(), Context()).ok());
  const UsageRecord record = OnlyRecord();
  EXPECT_EQ(record.operation_type, "plan_generation");
  EXPECT_EQ(record.profile, "main");
  EXPECT_EQ(record.provider, "a");
  EXPECT_EQ(record.model, "model-1");
  EXPECT_EQ(record.tokens,
            (TokenUsage{.prompt_tokens = 1000, .completion_tokens = 500, .cached_tokens = 200}));
  EXPECT_DOUBLE_EQ(record.cost_usd, 0.0057);
  EXPECT_EQ(record.latency_us, 100'000 + 2 * kSecond);
  EXPECT_EQ(record.time_to_first_token_us, -1);
  EXPECT_FALSE(record.streamed);
  EXPECT_EQ(record.attempts, 2);
  EXPECT_FALSE(record.fallback_used);
  EXPECT_TRUE(record.ok);
  EXPECT_EQ(record.error_kind, LlmErrorKind::kNone);
  EXPECT_EQ(record.error_message, "");
}

// A call given its own usage (a chat turn's) reports its record there, and
// only there; the client's sink gets the calls made without one.
TEST_F(LlmClientTest, ACallsOwnUsageTakesItsRecordInPlaceOfTheClientsSink) {
  class TurnUsage final : public CallUsage {
   public:
    void Record(const UsageRecord& record) override { records.push_back(record); }
    void Answered(const absl::StatusOr<ChatResponse>&) override {}
    std::vector<UsageRecord> records;
  } turn;
  a_->PushAnswer("hi", {.prompt_tokens = 10, .completion_tokens = 5});
  a_->PushAnswer("again");
  CallContext context = Context();
  context.usage = &turn;
  ASSERT_TRUE(Client().Complete("main", Hello(), context).ok());
  ASSERT_EQ(turn.records.size(), 1u);
  EXPECT_EQ(turn.records[0].operation_type, "plan_generation");
  EXPECT_EQ(turn.records[0].tokens.prompt_tokens, 10);
  EXPECT_TRUE(sink_->records().empty());
  ASSERT_TRUE(Client().Complete("main", Hello(), Context()).ok());
  EXPECT_EQ(turn.records.size(), 1u);
  EXPECT_EQ(sink_->records().size(), 1u);
}

TEST_F(LlmClientTest, StreamedAndNonStreamedCallsCostTheSame) {
  const TokenUsage usage{.prompt_tokens = 1234, .completion_tokens = 567, .cached_tokens = 89};
  a_->PushAnswer("hi", usage);
  a_->Push({{TextDelta("h"), TextDelta("i")}, Answer("hi", usage), 0});
  ASSERT_TRUE(Client().Complete("main", Hello(), Context()).ok());
  ASSERT_TRUE(
      Client().Stream("main", Hello(), Context(), [](const StreamDelta&) { return true; }).ok());
  const std::vector<UsageRecord> records = sink_->records();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_FALSE(records[0].streamed);
  EXPECT_TRUE(records[1].streamed);
  EXPECT_GT(records[0].cost_usd, 0);
  EXPECT_DOUBLE_EQ(records[0].cost_usd, records[1].cost_usd);
}

TEST_F(LlmClientTest, MetricsCountCallsTokensAndCost) {
  a_->PushAnswer("hi", {.prompt_tokens = 1000, .completion_tokens = 500, .cached_tokens = 200});
  ASSERT_TRUE(Client().Complete("main", Hello(), Context()).ok());
  EXPECT_FALSE(Client().Complete("nope", Hello(), Context()).ok());
  EXPECT_EQ(CounterValue("omniforge_llm_calls_total", {{"provider", "a"},
                                                       {"model", "model-1"},
                                                       {"operation", "plan_generation"},
                                                       {"outcome", "ok"}}),
            1);
  EXPECT_EQ(CounterValue("omniforge_llm_calls_total", {{"provider", ""},
                                                       {"model", ""},
                                                       {"operation", "plan_generation"},
                                                       {"outcome", "not_configured"}}),
            1);
  const core::Labels target = {{"provider", "a"}, {"model", "model-1"}};
  auto with_kind = [&](const char* kind) {
    core::Labels labels = target;
    labels.emplace_back("kind", kind);
    return labels;
  };
  EXPECT_EQ(CounterValue("omniforge_llm_tokens_total", with_kind("prompt")), 1000);
  EXPECT_EQ(CounterValue("omniforge_llm_tokens_total", with_kind("completion")), 500);
  EXPECT_EQ(CounterValue("omniforge_llm_tokens_total", with_kind("cached")), 200);
  EXPECT_DOUBLE_EQ(CounterValue("omniforge_llm_cost_usd_total", target), 0.0057);
  EXPECT_THAT(metrics_.Render(), HasSubstr("omniforge_llm_call_duration_seconds_count{"));
}

TEST_F(LlmClientTest, FailedAttemptsAreLoggedWithoutContent) {
  LogLines().clear();
  core::SetLogSinkForTesting([](const std::string& line) { LogLines().push_back(line); });
  a_->Push({{}, LlmError(LlmErrorKind::kBadResponse, "body: the secret plan"), 0});
  a_->PushAnswer("hi");
  ChatRequest request = Hello();
  request.messages[0].content = "the secret plan";
  EXPECT_TRUE(Client().Complete("main", request, Context()).ok());
  core::SetLogSinkForTesting(nullptr);
  ASSERT_EQ(LogLines().size(), 1u);
  const std::string& line = LogLines()[0];
  EXPECT_THAT(line, HasSubstr("\"provider\":\"a\""));
  EXPECT_THAT(line, HasSubstr("\"model\":\"model-1\""));
  EXPECT_THAT(line, HasSubstr("\"operation\":\"plan_generation\""));
  EXPECT_THAT(line, HasSubstr("\"error_kind\":\"bad_response\""));
  EXPECT_THAT(line, HasSubstr("\"attempt\":\"1\""));
  EXPECT_THAT(line, Not(HasSubstr("secret")));
}

TEST_F(LlmClientTest, ForProfileIsAChatModelBoundToTheProfile) {
  b_->PushAnswer("from b");
  options_.retry.max_attempts = 1;
  a_->PushError(LlmErrorKind::kAuth);
  std::unique_ptr<ChatModel> model = Client().ForProfile("main");
  absl::StatusOr<ChatResponse> response = model->Complete(Hello(), Context());
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->content, "from b");
  EXPECT_EQ(OnlyRecord().profile, "main");
  std::unique_ptr<ChatModel> missing = Client().ForProfile("missing");
  EXPECT_EQ(ErrorKindOf(missing->Complete(Hello(), Context()).status()),
            LlmErrorKind::kNotConfigured);
}

TEST(LlmClientCreateTest, RejectsUnknownProvidersAndEmptyChains) {
  FakeClock clock;
  LlmClientOptions unknown;
  unknown.providers = {{"a", std::make_shared<FakeChatModel>(&clock)}};
  unknown.profiles = {{"speed", {{"a", "m"}, {"zz", "m"}}}};
  absl::StatusOr<std::unique_ptr<LlmClient>> client = LlmClient::Create(std::move(unknown));
  EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(client.status().message(), HasSubstr("\"zz\""));

  LlmClientOptions empty;
  empty.profiles = {{"speed", {}}};
  EXPECT_EQ(LlmClient::Create(std::move(empty)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace omniforge::llm
