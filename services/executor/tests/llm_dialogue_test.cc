// The LLM executor agent (LlmDialogue) with a scripted model on the real
// platform tools and PostgreSQL: what the model is offered and shown, one-
// turn completion, several tools, a question answered by the planner, a
// correctable bad call, read-only steps, max turns, model failure, cancel.
#include "services/executor/src/llm_dialogue.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>

#include "libs/core/config.h"
#include "libs/core/ids.h"
#include "libs/llm/errors.h"
#include "libs/llm/llm_config.h"
#include "libs/llm/llm_factory.h"
#include "libs/llm/testing/fake_provider.h"
#include "libs/llm/usage_collection.h"
#include "libs/pg/migrate.h"
#include "libs/pg/pool.h"
#include "services/executor/src/platform_tools.h"
#include "tests/support/test_database.h"

namespace omniforge::pg {
const std::vector<Migration>& ExecutorMigrations();
}

namespace omniforge::executor {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::json;
using Kind = DialogueEvent::Kind;

// Answers each Complete with the next scripted response; keeps the requests.
class ScriptedModel final : public llm::ChatModel {
 public:
  using Step = std::function<absl::StatusOr<llm::ChatResponse>(const llm::ChatRequest&)>;
  void Then(Step step) { steps_.push_back(std::move(step)); }
  void ThenCall(std::vector<std::pair<std::string, Json>> calls) {
    Then([calls](const llm::ChatRequest&) {
      llm::ChatResponse r;
      int i = 0;
      for (const auto& [name, args] : calls) {
        r.tool_calls.push_back({"call_" + std::to_string(++i), name, args.dump()});
      }
      return r;
    });
  }

  absl::StatusOr<llm::ChatResponse> Complete(const llm::ChatRequest& request,
                                             const llm::CallContext& context) override {
    requests.push_back(request);
    operations.push_back(context.operation_type);
    if (steps_.empty()) return llm::LlmError(llm::LlmErrorKind::kInvalidOutput, "script ended");
    Step step = std::move(steps_.front());
    steps_.pop_front();
    return step(request);
  }
  absl::StatusOr<llm::ChatResponse> Stream(const llm::ChatRequest& request,
                                           const llm::CallContext& context,
                                           const llm::StreamCallback&) override {
    return Complete(request, context);
  }

  std::vector<llm::ChatRequest> requests;
  std::vector<std::string> operations;

 private:
  std::deque<Step> steps_;
};

class LlmDialogueTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    database_ = new testing::TestDatabase();
    ASSERT_TRUE(pg::ApplyMigrations(database_->dsn(), "executor", pg::ExecutorMigrations()).ok());
    pool_ = pg::PgPool::Create({.dsn = database_->dsn(), .pool_size = 2})->release();
    tools_ = new PlatformTools(*pool_);
    catalog_ = new ToolCatalog();
    ASSERT_TRUE(catalog_->AddProvider(*tools_).ok());
    runtime_ = new ToolRuntime(*catalog_, nullptr);
  }
  static void TearDownTestSuite() {
    delete runtime_;
    delete catalog_;
    delete tools_;
    delete pool_;
    delete database_;
  }

  void SetUp() override {
    who_ = {"acme", "user-" + core::NewUuid()};
    dialogue_ = std::make_unique<LlmDialogue>(
        model_, *runtime_, who_, std::chrono::system_clock::now() + std::chrono::seconds(30),
        [this](DialogueEvent e) { events_.push_back(std::move(e)); });
  }

  Json Tool(const std::string& name, const Json& args) {
    auto out = runtime_->Invoke(who_, {name, args.dump(), ""},
                                std::chrono::system_clock::now() + std::chrono::seconds(5));
    EXPECT_TRUE(out.ok() && !out->is_error) << name;
    return out.ok() ? Json::parse(out->result_json) : Json();
  }

  static Assignment Step(bool writes = false, std::vector<std::string> allowed = {}) {
    Assignment a;
    a.task = "find the marketing projects and report their open tasks";
    a.goal = "a quarterly review";
    a.step_id = "s1";
    a.writes_approved = writes;
    a.allowed_tools = std::move(allowed);
    return a;
  }

  static std::vector<std::string> Offered(const llm::ChatRequest& r) {
    std::vector<std::string> names;
    for (const auto& t : r.tools) names.push_back(t.name);
    return names;
  }

  const DialogueEvent& Last() const { return events_.back(); }

  static testing::TestDatabase* database_;
  static pg::PgPool* pool_;
  static PlatformTools* tools_;
  static ToolCatalog* catalog_;
  static ToolRuntime* runtime_;
  core::Identity who_;
  ScriptedModel model_;
  std::vector<DialogueEvent> events_;
  std::unique_ptr<LlmDialogue> dialogue_;
};

testing::TestDatabase* LlmDialogueTest::database_ = nullptr;
pg::PgPool* LlmDialogueTest::pool_ = nullptr;
PlatformTools* LlmDialogueTest::tools_ = nullptr;
ToolCatalog* LlmDialogueTest::catalog_ = nullptr;
ToolRuntime* LlmDialogueTest::runtime_ = nullptr;

TEST_F(LlmDialogueTest, OneTurnCompletion) {
  model_.ThenCall(
      {{"complete_task",
        {{"summary", "Nothing to do"}, {"result", {{"ok", true}}}, {"confidence", 0.8}}}});
  dialogue_->Start(Step());
  ASSERT_EQ(Last().kind, Kind::kComplete) << Last().message;
  EXPECT_EQ(Last().summary, "Nothing to do");
  EXPECT_EQ(Json::parse(Last().result_json)["ok"], true);
  EXPECT_EQ(Last().confidence, 0.8);
  EXPECT_EQ(Last().turn, 1);
  ASSERT_EQ(model_.requests.size(), 1u);
  EXPECT_EQ(model_.operations[0], "executor_turn");
  const auto& request = model_.requests[0];
  EXPECT_EQ(request.messages[0].role, llm::Role::kSystem);
  EXPECT_THAT(request.messages[1].content, HasSubstr("find the marketing projects"));
  EXPECT_THAT(request.messages[1].content, HasSubstr("only read-only tools"));
  // Read-only step: every READ tool and the protocol tools, no writes.
  EXPECT_THAT(Offered(request), Contains("search_projects"));
  EXPECT_THAT(Offered(request), Contains("ask_planner"));
  EXPECT_THAT(Offered(request), Not(Contains("create_agent")));
  EXPECT_THAT(Offered(request), Not(Contains("delete_agent")));
}

// The model writes complete_task's arguments: fields of other types than
// asked end the step all the same, never the executor.
TEST_F(LlmDialogueTest, ACompletionWithFieldsOfOtherTypesStillCompletes) {
  model_.ThenCall({{"complete_task",
                    {{"summary", {{"projects", 2}}},
                     {"confidence", "high"},
                     {"status", 1},
                     {"limitations", "none"}}}});
  dialogue_->Start(Step());
  ASSERT_EQ(Last().kind, Kind::kComplete) << Last().message;
  EXPECT_EQ(Last().summary, R"({"projects":2})");
  EXPECT_EQ(Last().confidence, 0.7);
  EXPECT_FALSE(Last().partial_success);
  EXPECT_TRUE(Last().limitations.empty());
  EXPECT_EQ(Json::parse(Last().result_json), Json::object());
}

TEST_F(LlmDialogueTest, SeveralToolsTheirResultsGoBackToTheModel) {
  Tool("create_project", {{"name", "Spring marketing"}});
  model_.ThenCall({{"search_projects", {{"query", "marketing"}}}, {"list_agents", Json::object()}});
  model_.ThenCall({{"complete_task", {{"summary", "Found one project"}}}});
  dialogue_->Start(Step());
  ASSERT_EQ(Last().kind, Kind::kComplete) << Last().message;
  ASSERT_EQ(Last().tool_calls.size(), 2u);
  const auto& second = model_.requests[1].messages;
  ASSERT_GE(second.size(), 5u);
  EXPECT_EQ(second[2].role, llm::Role::kAssistant);
  EXPECT_EQ(second[3].role, llm::Role::kTool);
  EXPECT_EQ(second[3].tool_call_id, "call_1");
  EXPECT_EQ(Json::parse(second[3].content)["count"], 1);
  EXPECT_EQ(second[4].tool_call_id, "call_2");
  int partials = 0;
  for (const auto& e : events_) partials += e.kind == Kind::kPartialResult;
  EXPECT_EQ(partials, 2);
}

TEST_F(LlmDialogueTest, AQuestionIsAnsweredByThePlanner) {
  model_.ThenCall(
      {{"ask_planner", {{"question", "Spring or Autumn?"}, {"options", {"Spring", "Autumn"}}}}});
  model_.ThenCall({{"complete_task", {{"summary", "Used Autumn"}}}});
  dialogue_->Start(Step());
  ASSERT_EQ(Last().kind, Kind::kQuestion);
  EXPECT_EQ(Last().question, "Spring or Autumn?");
  EXPECT_THAT(Last().options, ::testing::ElementsAre("Spring", "Autumn"));
  dialogue_->Answer(Last().question_id, "Autumn");
  ASSERT_EQ(Last().kind, Kind::kComplete);
  const auto& answer = model_.requests[1].messages.back();
  EXPECT_EQ(answer.role, llm::Role::kTool);
  EXPECT_EQ(answer.tool_call_id, "call_1");
  EXPECT_EQ(Json::parse(answer.content)["answer"], "Autumn");
}

TEST_F(LlmDialogueTest, BadCallsAndUnofferedToolsAreErrorsTheModelCanRead) {
  model_.ThenCall({{"get_run", {{"run_id", "nope"}}}, {"create_agent", {{"name", "x"}}}});
  model_.ThenCall({{"complete_task", {{"summary", "gave up"}, {"status", "partial"}}}});
  dialogue_->Start(Step());
  ASSERT_EQ(Last().kind, Kind::kComplete);
  EXPECT_TRUE(Last().partial_success);
  const auto& messages = model_.requests[1].messages;
  EXPECT_THAT(messages[3].content, HasSubstr("$.run_id"));
  EXPECT_THAT(messages[4].content, HasSubstr("not one of this step's tools"));
  EXPECT_EQ(Tool("list_agents", Json::object())["count"], 0);
}

TEST_F(LlmDialogueTest, ApprovedWritesOfferOnlyTheAllowedTools) {
  model_.ThenCall({{"create_agent", {{"name", "digest"}, {"description", "weekly"}}}});
  model_.ThenCall({{"complete_task", {{"summary", "created"}}}});
  dialogue_->Start(Step(/*writes=*/true, {"create_agent", "list_agents"}));
  ASSERT_EQ(Last().kind, Kind::kComplete) << Last().message;
  EXPECT_THAT(Offered(model_.requests[0]),
              ::testing::UnorderedElementsAre("create_agent", "list_agents", "ask_planner",
                                              "complete_task"));
  EXPECT_EQ(Tool("list_agents", Json::object())["count"], 1);
}

TEST_F(LlmDialogueTest, MaxTurnsModelFailureAndCancel) {
  for (int i = 0; i < 5; ++i) model_.ThenCall({{"list_agents", Json::object()}});
  Assignment a = Step();
  a.max_turns = 3;
  dialogue_->Start(a);
  ASSERT_EQ(Last().kind, Kind::kError);
  EXPECT_EQ(Last().error, DialogueError::kMaxTurns);
  EXPECT_EQ(Last().partial_results.size(), 3u);

  ScriptedModel failing;
  failing.Then([](const llm::ChatRequest&) -> absl::StatusOr<llm::ChatResponse> {
    return llm::LlmError(llm::LlmErrorKind::kRateLimited, "slow down");
  });
  events_.clear();
  LlmDialogue broken(failing, *runtime_, who_,
                     std::chrono::system_clock::now() + std::chrono::seconds(30),
                     [this](DialogueEvent e) { events_.push_back(std::move(e)); });
  broken.Start(Step());
  EXPECT_EQ(Last().error, DialogueError::kModelFailed);
  EXPECT_TRUE(Last().retryable);

  ScriptedModel asking;
  asking.ThenCall({{"ask_planner", {{"question", "which?"}}}});
  events_.clear();
  LlmDialogue waiting(asking, *runtime_, who_,
                      std::chrono::system_clock::now() + std::chrono::seconds(30),
                      [this](DialogueEvent e) { events_.push_back(std::move(e)); });
  waiting.Start(Step());
  ASSERT_EQ(Last().kind, Kind::kQuestion);
  waiting.RequestCancel();
  EXPECT_TRUE(waiting.ApplyCancel());
  EXPECT_EQ(Last().error, DialogueError::kCancelled);
}

// The same agent through the real LLM client and the fake provider speaking
// the OpenAI wire format: tools offered, a tool call, its result sent back,
// the final protocol call.
TEST_F(LlmDialogueTest, ThroughTheLlmClientAndTheFakeProvider) {
  using llm::testing::FakeRule;
  Tool("create_project", {{"name", "Spring marketing"}});
  FakeRule first;
  first.match.operation = "executor_turn";
  first.match.tool_offered = "search_projects";
  first.match.last_is_tool_result = false;
  first.reply.tool_calls = {{"call_a", "search_projects", R"({"query": "marketing"})"}};
  FakeRule second;
  second.match.operation = "executor_turn";
  second.match.last_is_tool_result = true;
  second.reply.tool_calls = {
      {"call_b", "complete_task",
       R"({"summary": "One marketing project", "result": {"projects": 1}, "confidence": 0.9})"}};
  auto fake = llm::testing::FakeLlmServer::Start({first, second});
  ASSERT_TRUE(fake.ok()) << fake.status();
  auto reader = core::ConfigReader::FromString(
      "llm:\n  retry:\n    max_attempts: 1\n  providers:\n    fake:\n      api: openai\n"
      "      base_url: " +
          (*fake)->openai_base_url() + "\n  profiles:\n    balanced: [fake/small]\n",
      [](const std::string&) { return std::optional<std::string>(); });
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto config = llm::ReadLlmConfig(*reader);
  ASSERT_TRUE(config.ok()) << config.status();
  // As the service runs: the agent collects its own model calls.
  auto client = llm::MakeLlmClient(*config, std::make_shared<llm::CollectingUsageSink>());
  ASSERT_TRUE(client.ok()) << client.status();
  auto model = (*client)->ForProfile("balanced");
  LlmDialogue dialogue(*model, *runtime_, who_,
                       std::chrono::system_clock::now() + std::chrono::seconds(30),
                       [this](DialogueEvent e) { events_.push_back(std::move(e)); });
  dialogue.Start(Step());
  ASSERT_EQ(Last().kind, Kind::kComplete) << Last().message;
  EXPECT_EQ(Last().summary, "One marketing project");
  EXPECT_EQ(Json::parse(Last().result_json)["projects"], 1);
  ASSERT_EQ(Last().tool_calls.size(), 1u);
  const auto requests = (*fake)->Requests();
  ASSERT_EQ(requests.size(), 2u);
  const Json body = Json::parse(requests[1].body);
  const Json& tool_message = body["messages"].back();
  EXPECT_EQ(tool_message["role"], "tool");
  EXPECT_EQ(tool_message["tool_call_id"], "call_a");
  EXPECT_EQ(Json::parse(tool_message["content"].get<std::string>())["count"], 1);
  // Each model call goes to the planner with the agent's next message: the
  // first with the tool call's progress, the second with the completion.
  ASSERT_GE(events_.size(), 2u);
  ASSERT_EQ(events_.front().model_calls.size(), 1u);
  EXPECT_EQ(events_.front().model_calls[0].operation_type, "executor_turn");
  EXPECT_EQ(events_.front().model_calls[0].profile, "balanced");
  EXPECT_EQ(events_.front().model_calls[0].model, "small");
  EXPECT_TRUE(events_.front().model_calls[0].ok);
  ASSERT_EQ(Last().model_calls.size(), 1u);
  size_t calls = 0;
  for (const DialogueEvent& e : events_) calls += e.model_calls.size();
  EXPECT_EQ(calls, 2u) << "each call handed on once";
}

}  // namespace
}  // namespace omniforge::executor
