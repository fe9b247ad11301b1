// One turn traced across the real stack: the four service binaries with
// tracing.otlp_endpoint pointing at a fake OTLP collector inside the test.
// A turn that runs a plan (whose steps call tools in the executor) is one
// trace, under the caller's traceparent, with the spans linked parent to
// child from the orchestrator's turn into the intent, conversation and
// executor services; and a model call (the intent service's, on a fake
// OpenAI-compatible provider) is a span of the turn's trace whose context
// the provider receives as `traceparent`.
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "libs/core/ids.h"
#include "libs/llm/testing/fake_provider.h"
#include "libs/trace/testing/fake_collector.h"
#include "omniforge/orchestrator/v1/chat_service.grpc.pb.h"
#include "tests/support/chat_turn.h"
#include "tests/support/service_stack.h"
#include "tests/support/test_database.h"

namespace omniforge::orchestrator {
namespace {

namespace pb = ::omniforge::orchestrator::v1;
using trace::testing::ReceivedSpan;
using Json = nlohmann::json;

constexpr char kCallerTrace[] = "0af7651916cd43dd8448eb211c80319c";
constexpr char kCallerSpan[] = "b7ad6b7169203331";

using Turn = testing::ChatTurn;

class TracingEndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("omniforge-tracing-" + core::NewUuid());
    std::filesystem::create_directories(dir_);
    const std::vector<core::Identity> users = {{"acme", "tracer"}};
    keys_ = testing::WriteApiKeyFile(dir_ / "api_keys", users, "tracing e2e");
    ASSERT_EQ(keys_.size(), 1u);
    const std::vector<std::string> tracing = {
        "OMNIFORGE_TRACING_OTLP_ENDPOINT=" + collector_.endpoint(),
        "OMNIFORGE_TRACING_FLUSH_INTERVAL_MS=50"};
    testing::ServiceStack::ExtraEnv extra{tracing, tracing, tracing, tracing};
    for (std::string& env : IntentEnv()) extra.intent.push_back(std::move(env));
    // Plans are kept in the orchestrator's database.
    for (const std::string& env : testing::DatabaseEnv(db_, "orchestrator")) {
      extra.orchestrator.push_back(env);
    }
    ASSERT_EQ(stack_.Start(db_, (dir_ / "api_keys").string(), extra), std::nullopt);
    stub_ = pb::ChatService::NewStub(
        grpc::CreateChannel(stack_.orchestrator().address(), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  // More environment for the intent service.
  virtual std::vector<std::string> IntentEnv() { return {}; }

  Turn Send(const pb::StreamChatRequest& request, const std::string& traceparent) {
    std::vector<std::pair<std::string, std::string>> metadata;
    if (!traceparent.empty()) metadata.emplace_back("traceparent", traceparent);
    return testing::StreamTurn(*stub_, request, keys_[0], metadata);
  }

  testing::TestDatabase db_;
  trace::testing::FakeCollector collector_;
  std::filesystem::path dir_;
  std::vector<std::string> keys_;
  testing::ServiceStack stack_{{OMNIFORGE_CONVERSATION_BIN, OMNIFORGE_INTENT_BIN,
                                OMNIFORGE_EXECUTOR_BIN, OMNIFORGE_ORCHESTRATOR_BIN}};
  std::unique_ptr<pb::ChatService::Stub> stub_;
};

// The spans of one trace, by id.
std::map<std::string, ReceivedSpan> ById(const std::vector<ReceivedSpan>& spans,
                                         const std::string& trace_id) {
  std::map<std::string, ReceivedSpan> out;
  for (const ReceivedSpan& s : spans) {
    if (s.trace_id == trace_id) out[s.span_id] = s;
  }
  return out;
}

// The first span named `name` (in `service`) whose chain of parents reaches
// `ancestor`; nullptr when there is none.
const ReceivedSpan* Under(const std::map<std::string, ReceivedSpan>& spans,
                          const std::string& ancestor, const std::string& service,
                          const std::string& name) {
  for (const auto& [id, span] : spans) {
    if (span.name != name || span.service != service) continue;
    for (std::string up = span.parent_span_id; !up.empty();) {
      if (up == ancestor) return &span;
      auto parent = spans.find(up);
      if (parent == spans.end()) break;
      up = parent->second.parent_span_id;
    }
  }
  return nullptr;
}

size_t Count(const std::vector<ReceivedSpan>& spans, const std::string& service,
             const std::string& name) {
  size_t n = 0;
  for (const ReceivedSpan& s : spans) n += s.service == service && s.name == name ? 1 : 0;
  return n;
}

TEST_F(TracingEndToEndTest, ATurnThatRunsAPlanIsOneTraceFromTheTurnToTheExecutorsTools) {
  pb::StreamChatRequest draft_request;
  draft_request.set_message("Set up a project for the spring campaign launch");
  draft_request.set_context_type(pb::CONTEXT_TYPE_PROJECT_CREATE);
  const Turn draft = Send(draft_request, "");
  ASSERT_TRUE(draft.status.ok()) << draft.status.error_message();
  ASSERT_FALSE(draft.events.empty());
  const std::string conversation = draft.events.front().session().conversation_id();

  // The approval runs the plan, under the caller's trace.
  pb::StreamChatRequest run_request;
  run_request.set_message("looks good, run it");
  run_request.set_conversation_id(conversation);
  const Turn run = Send(run_request, absl::StrCat("00-", kCallerTrace, "-", kCallerSpan, "-01"));
  ASSERT_TRUE(run.status.ok()) << run.status.error_message();
  size_t steps_completed = 0;
  for (const pb::ChatEvent& e : run.events) steps_completed += e.has_step_complete() ? 1 : 0;
  ASSERT_EQ(steps_completed, 3u) << "the plan ran its three steps";

  // Every service exports within its flush interval; wait for the tools,
  // both turns and the conversation service's side of every append.
  const auto spans = collector_.WaitFor(
      [](const std::vector<ReceivedSpan>& now) {
        return Count(now, "executor", "tool.call") >= 3 &&
               Count(now, "orchestrator", "StreamChat") >= 2 &&
               Count(now, "conversation", "AppendMessage") >=
                   Count(now, "orchestrator", "ConversationService/AppendMessage");
      },
      std::chrono::seconds(20));
  const auto trace = ById(spans, kCallerTrace);

  // The turn: a child of the caller's span.
  const ReceivedSpan* turn = nullptr;
  for (const auto& [id, span] : trace) {
    if (span.name == "StreamChat") turn = &span;
  }
  ASSERT_NE(turn, nullptr) << "the turn's span carries the caller's trace id";
  EXPECT_EQ(turn->parent_span_id, kCallerSpan);
  EXPECT_EQ(turn->service, "orchestrator");
  EXPECT_EQ(turn->kind, 2);
  EXPECT_EQ(turn->attributes.value("conversation_id", ""), conversation);
  EXPECT_EQ(turn->attributes.value("tenant", ""), "acme");

  // Each stage is a child of the turn.
  for (const char* stage : {"stage.store_message", "stage.load_history", "stage.analyze_intent",
                            "stage.plan", "stage.act", "stage.store"}) {
    const ReceivedSpan* span = Under(trace, turn->span_id, "orchestrator", stage);
    ASSERT_NE(span, nullptr) << stage;
    EXPECT_EQ(span->parent_span_id, turn->span_id) << stage;
  }

  // A stage's client call, and the callee's server span under it.
  const ReceivedSpan* store =
      Under(trace, turn->span_id, "orchestrator", "ConversationService/AppendMessage");
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->kind, 3);
  const ReceivedSpan* appended = Under(trace, store->span_id, "conversation", "AppendMessage");
  ASSERT_NE(appended, nullptr) << "the conversation service's span is the client span's child";
  EXPECT_EQ(appended->parent_span_id, store->span_id);
  EXPECT_EQ(appended->kind, 2);

  // The plan's steps: a span each, the executor's dialogue under it, the
  // tool calls under the executor's server span.
  const ReceivedSpan* step = Under(trace, turn->span_id, "orchestrator", "plan.step");
  ASSERT_NE(step, nullptr);
  const ReceivedSpan* converse =
      Under(trace, step->span_id, "orchestrator", "ExecutorService/Converse");
  ASSERT_NE(converse, nullptr);
  EXPECT_EQ(converse->parent_span_id, step->span_id);
  const ReceivedSpan* served = Under(trace, converse->span_id, "executor", "Converse");
  ASSERT_NE(served, nullptr);
  EXPECT_EQ(served->parent_span_id, converse->span_id);
  const ReceivedSpan* tool = Under(trace, served->span_id, "executor", "tool.call");
  ASSERT_NE(tool, nullptr) << "the step's tool call is in the executor's span";
  EXPECT_FALSE(tool->attributes.value("tool.name", "").empty());

  // The draft turn (no traceparent) was a trace of its own.
  size_t turns_in_trace = 0;
  for (const auto& [id, span] : trace) turns_in_trace += span.name == "StreamChat" ? 1 : 0;
  EXPECT_EQ(turns_in_trace, 1u);
}

TEST_F(TracingEndToEndTest, AMalformedTraceparentStartsANewTraceInsteadOfFailing) {
  pb::StreamChatRequest request;
  request.set_message("hello");
  const Turn turn = Send(request, "00-not-a-trace-01");
  ASSERT_TRUE(turn.status.ok()) << turn.status.error_message();
  const auto spans = collector_.WaitFor(
      [](const std::vector<ReceivedSpan>& now) {
        return Count(now, "orchestrator", "StreamChat") >= 1;
      },
      std::chrono::seconds(20));
  ASSERT_EQ(Count(spans, "orchestrator", "StreamChat"), 1u);
  for (const ReceivedSpan& s : spans) {
    if (s.name == "StreamChat") {
      EXPECT_TRUE(s.parent_span_id.empty()) << "a root span";
      EXPECT_EQ(s.trace_id.size(), 32u);
    }
  }
}

// The intent service on a fake model: every message it reads goes to the model.
class ModelTracingEndToEndTest : public TracingEndToEndTest {
 protected:
  void SetUp() override {
    auto fake = llm::testing::FakeLlmServer::Start({}, {.api_key = "fake-key"});
    ASSERT_TRUE(fake.ok()) << fake.status();
    fake_ = *std::move(fake);
    TracingEndToEndTest::SetUp();
  }
  std::vector<std::string> IntentEnv() override {
    const std::filesystem::path path = dir_ / "intent.yaml";
    std::ofstream(path) << "llm:\n  providers:\n    fake:\n      api: openai\n      base_url: "
                        << fake_->openai_base_url()
                        << "\n      api_key_env: FAKE_LLM_KEY\n  profiles:\n"
                           "    speed: [fake/intent-model]\n  retry: {max_attempts: 1}\n"
                           "intent:\n  llm_threshold: 1.0\n";
    return {"OMNIFORGE_CONFIG=" + path.string(), "FAKE_LLM_KEY=fake-key"};
  }

  // The model's reading of every message: a question.
  static llm::testing::FakeRule Understood() {
    llm::testing::FakeRule rule;
    rule.match.operation = "intent_analysis";
    rule.reply.json = Json{{"action_type", "QUERY_INFO"},
                           {"confidence", 0.9},
                           {"entities", Json::array()},
                           {"reasoning", "a question"},
                           {"is_ambiguous", false},
                           {"alternative_action", "NONE"},
                           {"clarifying_question", ""},
                           {"clarification", {{"needed", false}, {"missing", Json::array()}}}}
                          .dump();
    return rule;
  }

  // The intent service's model.call spans of trace `trace_id`, once `count`
  // of them and the turn's own span arrived.
  std::vector<ReceivedSpan> ModelCalls(const std::string& trace_id, size_t count) {
    auto calls = [&trace_id](const std::vector<ReceivedSpan>& now) {
      std::vector<ReceivedSpan> out;
      for (const ReceivedSpan& s : now) {
        if (s.trace_id == trace_id && s.service == "intent" && s.name == "model.call") {
          out.push_back(s);
        }
      }
      return out;
    };
    return calls(collector_.WaitFor(
        [&](const std::vector<ReceivedSpan>& now) {
          return calls(now).size() >= count &&
                 std::any_of(now.begin(), now.end(), [&trace_id](const ReceivedSpan& s) {
                   return s.trace_id == trace_id && s.name == "StreamChat";
                 });
        },
        std::chrono::seconds(20)));
  }

  std::unique_ptr<llm::testing::FakeLlmServer> fake_;
};

TEST_F(ModelTracingEndToEndTest, AModelCallIsASpanOfTheTurnAndTheProviderGetsItsTraceparent) {
  ASSERT_TRUE(fake_->SetRules({Understood()}).ok());
  pb::StreamChatRequest request;
  request.set_message("how did the digest go this week?");
  const Turn turn = Send(request, absl::StrCat("00-", kCallerTrace, "-", kCallerSpan, "-01"));
  ASSERT_TRUE(turn.status.ok()) << turn.status.error_message();

  const std::vector<ReceivedSpan> calls = ModelCalls(kCallerTrace, 1);
  ASSERT_EQ(calls.size(), 1u) << "the intent service asked its model once";
  const ReceivedSpan& call = calls[0];
  EXPECT_EQ(call.kind, 3);
  EXPECT_EQ(call.status_code, 0) << "unset: the call succeeded";
  EXPECT_EQ(call.attributes.value("gen_ai.request.model", ""), "intent-model");
  // model.call → the intent service's AnalyzeIntent → the orchestrator's
  // client call → the stage that asked (the turn analyses a message early,
  // while its history loads) → the turn.
  const auto trace = ById(collector_.spans(), kCallerTrace);
  std::vector<std::string> chain;
  for (auto up = trace.find(call.parent_span_id); up != trace.end();
       up = trace.find(up->second.parent_span_id)) {
    chain.push_back(absl::StrCat(up->second.service, ":", up->second.name));
  }
  ASSERT_EQ(chain.size(), 4u) << absl::StrJoin(chain, " <- ");
  EXPECT_EQ(chain[0], "intent:AnalyzeIntent");
  EXPECT_EQ(chain[1], "orchestrator:IntentService/AnalyzeIntent");
  EXPECT_TRUE(absl::StartsWith(chain[2], "orchestrator:stage.")) << chain[2];
  EXPECT_EQ(chain[3], "orchestrator:StreamChat");
  EXPECT_EQ(call.attributes.value("omniforge.operation", ""), "intent_analysis");

  // The provider was sent the model call's own context.
  const std::vector<llm::testing::RecordedRequest> sent = fake_->Requests();
  ASSERT_FALSE(sent.empty());
  const auto header = sent.back().headers.find("traceparent");
  ASSERT_NE(header, sent.back().headers.end());
  EXPECT_EQ(header->second, absl::StrCat("00-", kCallerTrace, "-", call.span_id, "-01"));
}

TEST_F(ModelTracingEndToEndTest, AFailedModelCallIsAnErrorSpan) {
  llm::testing::FakeRule failing;
  failing.match.operation = "intent_analysis";
  failing.fault.kind = llm::testing::FakeFault::Kind::kStatus;
  failing.fault.status = 500;
  ASSERT_TRUE(fake_->SetRules({failing}).ok());
  pb::StreamChatRequest request;
  request.set_message("how did the digest go this week?");
  // The intent service falls back to its rules: the turn goes on.
  const Turn turn = Send(request, absl::StrCat("00-", kCallerTrace, "-", kCallerSpan, "-01"));
  ASSERT_TRUE(turn.status.ok()) << turn.status.error_message();

  const std::vector<ReceivedSpan> calls = ModelCalls(kCallerTrace, 1);
  ASSERT_FALSE(calls.empty());
  for (const ReceivedSpan& call : calls) {
    EXPECT_EQ(call.status_code, 2) << "ERROR";
  }
}

}  // namespace
}  // namespace omniforge::orchestrator
