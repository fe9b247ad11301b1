// The LLM executor agent (LlmDialogue) with a scripted model on the real
// platform tools and PostgreSQL: what the model is offered and shown, one-
// turn completion, several tools, a question answered by the planner, a
// correctable bad call, read-only steps, max turns, model failure, cancel;
// the step's bounds against a model that tries other writes (approved
// targets only, tools outside the step, unapproved writes), and a re-run
// step whose model uses other call ids repeating no write.
#include "services/executor/src/llm_dialogue.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <set>

#include "absl/strings/match.h"
#include "libs/core/config.h"
#include "libs/core/ids.h"
#include "libs/llm/errors.h"
#include "libs/llm/llm_config.h"
#include "libs/llm/llm_factory.h"
#include "libs/llm/testing/fake_provider.h"
#include "libs/pg/migrate.h"
#include "libs/pg/pool.h"
#include "services/executor/src/local_dialogue.h"
#include "services/executor/src/pg_invocation_ledger.h"
#include "services/executor/src/platform_tools.h"
#include "services/executor/tests/fake_model.h"
#include "services/executor/tests/platform_runtime.h"

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
  void ThenCall(const std::vector<std::pair<std::string, Json>>& calls) {
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
  static void SetUpTestSuite() { platform_ = new testing::PlatformRuntime(2); }
  static void TearDownTestSuite() { delete platform_; }

  void SetUp() override {
    who_ = {"acme", "user-" + core::NewUuid()};
    dialogue_ =
        std::make_unique<LlmDialogue>(model_, platform_->runtime, who_,
                                      std::chrono::system_clock::now() + std::chrono::seconds(30),
                                      [this](DialogueEvent e) { events_.push_back(std::move(e)); });
  }

  Json Tool(const std::string& name, const Json& args) {
    auto out = platform_->runtime.Invoke(
        who_, {name, args.dump(), ""}, std::chrono::system_clock::now() + std::chrono::seconds(5));
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

  std::unique_ptr<LlmDialogue> NewDialogue(llm::ChatModel& model) {
    return std::make_unique<LlmDialogue>(
        model, platform_->runtime, who_,
        std::chrono::system_clock::now() + std::chrono::seconds(30),
        [this](DialogueEvent e) { events_.push_back(std::move(e)); });
  }

  // The names of the user's agents.
  std::vector<std::string> AgentNames() {
    std::vector<std::string> names;
    const Json listed = Tool("list_agents", Json::object());
    for (const Json& agent : listed["agents"]) {
      names.push_back(agent["name"]);
    }
    return names;
  }

  using FakeModel = testing::FakeModel;
  static FakeModel OnFakeProvider(std::vector<llm::testing::FakeRule> rules) {
    return testing::OnFakeProvider(std::move(rules));
  }

  // A rule answering the executor's next turn with `calls` (used once).
  static llm::testing::FakeRule Turn(std::vector<llm::testing::FakeToolCall> calls) {
    llm::testing::FakeRule rule;
    rule.match.operation = "executor_turn";
    rule.times = 1;
    rule.reply.tool_calls = std::move(calls);
    return rule;
  }

  static testing::PlatformRuntime* platform_;
  core::Identity who_;
  ScriptedModel model_;
  std::vector<DialogueEvent> events_;
  std::unique_ptr<LlmDialogue> dialogue_;
};

testing::PlatformRuntime* LlmDialogueTest::platform_ = nullptr;

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
  LlmDialogue broken(failing, platform_->runtime, who_,
                     std::chrono::system_clock::now() + std::chrono::seconds(30),
                     [this](DialogueEvent e) { events_.push_back(std::move(e)); });
  broken.Start(Step());
  EXPECT_EQ(Last().error, DialogueError::kModelFailed);
  EXPECT_TRUE(Last().retryable);

  ScriptedModel asking;
  asking.ThenCall({{"ask_planner", {{"question", "which?"}}}});
  events_.clear();
  LlmDialogue waiting(asking, platform_->runtime, who_,
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
  // As the service runs: no sink of the client's own, the agent gives its
  // model calls their usage (llm::CallContext::usage).
  auto client = llm::MakeLlmClient(*config, nullptr);
  ASSERT_TRUE(client.ok()) << client.status();
  auto model = (*client)->ForProfile("balanced");
  LlmDialogue dialogue(*model, platform_->runtime, who_,
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

// A model turned attacker inside a step whose writes the user approved as
// previewed ("delete the agent 'target'"): its delete of another agent does
// not run, it reads why, and the planner sees the refusal; the approved
// delete runs. Through the real client and the fake provider.
TEST_F(LlmDialogueTest, AnAttackerInAnApprovedStepCannotWriteOtherTargets) {
  Tool("create_agent", {{"name", "victim"}, {"description", "keeps the books"}});
  Tool("create_agent", {{"name", "target"}, {"description", "old and unused"}});
  FakeModel fake =
      OnFakeProvider({Turn({{"call_evil", "delete_agent", R"({"agent": "victim"})"}}),
                      Turn({{"call_ok", "delete_agent", R"({"agent": "target"})"}}),
                      Turn({{"call_done", "complete_task", R"({"summary": "deleted target"})"}})});
  ASSERT_NE(fake.model, nullptr);
  Assignment a = Step(/*writes=*/true, {"delete_agent", "list_agents"});
  a.task = "delete the agent 'target'";
  a.approved_targets_only = true;
  a.tool_calls = {{"delete_agent", R"({"agent": "target"})"}};
  auto dialogue = NewDialogue(*fake.model);
  dialogue->Start(a);
  ASSERT_EQ(Last().kind, Kind::kComplete) << Last().message;
  EXPECT_THAT(AgentNames(), ::testing::ElementsAre("victim"));

  const auto requests = fake.server->Requests();
  ASSERT_EQ(requests.size(), 3u);
  // The model was told which writes the user approved...
  const Json first = Json::parse(requests[0].body);
  EXPECT_THAT(first["messages"][1]["content"].get<std::string>(),
              HasSubstr(R"(approved exactly these writes: delete_agent {"agent": "target"})"));
  // ... and read the refusal as its call's result.
  const Json refusal = Json::parse(requests[1].body)["messages"].back();
  EXPECT_EQ(refusal["role"], "tool");
  EXPECT_EQ(refusal["tool_call_id"], "call_evil");
  const Json error = Json::parse(refusal["content"].get<std::string>())["error"];
  EXPECT_EQ(error["code"], "write_not_approved");
  EXPECT_THAT(error["message"].get<std::string>(), HasSubstr("not approved by the user"));
  EXPECT_THAT(error["message"].get<std::string>(), HasSubstr("ask_planner"));

  // The planner saw what was tried and that it did not run.
  const auto refused = std::find_if(events_.begin(), events_.end(), [](const DialogueEvent& e) {
    return e.kind == Kind::kProgress && absl::StartsWith(e.message, "Refused delete_agent");
  });
  ASSERT_NE(refused, events_.end());
  EXPECT_THAT(refused->arguments_json, HasSubstr("victim"));
  const DialogueEvent& partial = *std::next(refused);
  ASSERT_EQ(partial.kind, Kind::kPartialResult);
  EXPECT_TRUE(partial.partial.is_error);
  EXPECT_EQ(partial.partial.risk, ToolRisk::kHigh);
  EXPECT_THAT(partial.partial.result_json, HasSubstr("write_not_approved"));
  ASSERT_EQ(Last().tool_calls.size(), 2u);
  EXPECT_TRUE(Last().tool_calls[0].is_error);
  EXPECT_FALSE(Last().tool_calls[1].is_error);
}

// A model that tries again after its refusal makes the agent ask the
// planner; the answer comes back to the model.
TEST_F(LlmDialogueTest, AModelThatKeepsTryingMakesTheAgentAskThePlanner) {
  Tool("create_agent", {{"name", "victim"}, {"description", "keeps the books"}});
  model_.ThenCall({{"delete_agent", {{"agent", "victim"}}}});
  model_.ThenCall({{"delete_agent", {{"agent", "victim"}, {"reason", "really"}}}});
  model_.ThenCall({{"complete_task", {{"summary", "left it"}, {"status", "partial"}}}});
  Assignment a = Step(/*writes=*/true, {"delete_agent"});
  a.approved_targets_only = true;
  a.tool_calls = {{"delete_agent", R"({"agent": "target"})"}};
  dialogue_->Start(a);
  ASSERT_EQ(Last().kind, Kind::kQuestion) << Last().message;
  EXPECT_THAT(Last().question, HasSubstr("did not approve"));
  EXPECT_THAT(Last().question, HasSubstr("victim"));
  EXPECT_EQ(model_.requests.size(), 2u);
  dialogue_->Answer(Last().question_id, "go on without it");
  ASSERT_EQ(Last().kind, Kind::kComplete) << Last().message;
  const auto& answer = model_.requests[2].messages.back();
  EXPECT_EQ(answer.role, llm::Role::kUser);
  EXPECT_THAT(answer.content, HasSubstr("go on without it"));
  EXPECT_THAT(AgentNames(), ::testing::ElementsAre("victim"));
}

// With or without approved_targets_only: a tool outside allowed_tools never
// runs, nor a WRITE or HIGH tool without writes_approved; READ calls are
// not bound by the planned calls. Every case allows list_agents (or every
// READ tool) and plans a call of it.
TEST_F(LlmDialogueTest, ToolsOutsideTheStepAndUnapprovedWritesNeverRun) {
  Tool("create_agent", {{"name", "victim"}, {"description", "keeps the books"}});
  struct Case {
    bool writes;
    bool targets_only;
    std::vector<std::string> allowed;
    std::string tool;
    Json args;
    std::string code;
  };
  const Json victim = {{"agent", "victim"}};
  const std::vector<Case> cases = {
      {true, false, {"list_agents", "create_agent"}, "delete_agent", victim, "not_available"},
      {true, true, {"list_agents", "create_agent"}, "delete_agent", victim, "not_available"},
      {true, true, {"list_agents"}, "pause_agent", victim, "not_available"},
      {true, true, {}, "delete_agent", victim, "not_available"},
      {false, false, {"delete_agent", "list_agents"}, "delete_agent", victim, "write_not_approved"},
      {false, true, {"delete_agent", "list_agents"}, "delete_agent", victim, "write_not_approved"},
      {false,
       false,
       {"create_agent", "list_agents"},
       "create_agent",
       {{"name", "x"}, {"description", "d"}},
       "write_not_approved"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.tool + (c.writes ? " writes approved" : " writes not approved") +
                 (c.targets_only ? ", approved targets only" : ""));
    ScriptedModel model;
    model.ThenCall({{c.tool, c.args}, {"list_agents", {{"status", "active"}}}});
    model.ThenCall({{"complete_task", {{"summary", "done"}}}});
    Assignment a = Step(c.writes, c.allowed);
    a.approved_targets_only = c.targets_only;
    a.tool_calls = {{"list_agents", R"({"status": "paused"})"}};
    events_.clear();
    auto dialogue = NewDialogue(model);
    dialogue->Start(a);
    ASSERT_EQ(Last().kind, Kind::kComplete) << Last().message;
    ASSERT_EQ(model.requests.size(), 2u);
    const auto& messages = model.requests[1].messages;
    const Json refused = Json::parse(messages[messages.size() - 2].content);
    EXPECT_EQ(refused["error"]["code"], c.code);
    EXPECT_EQ(Json::parse(messages.back().content)["count"], 1);
    EXPECT_THAT(AgentNames(), ::testing::ElementsAre("victim"));
    EXPECT_EQ(Tool("get_agent", victim)["agent"]["status"], "active");
  }
}

// The orchestrator restarted (or the step stopped for the user's answer) and
// runs the step again with the same key; the model, as models do, makes the
// same calls with new random ids. The writes are replayed, not repeated.
TEST_F(LlmDialogueTest, AReRunStepWithOtherCallIdsRepeatsNoWrite) {
  Assignment a = Step(/*writes=*/true, {"create_agent", "run_agent", "list_agents"});
  a.task = "create the digest agent and run it once";
  a.approved_targets_only = true;
  a.tool_calls = {{"create_agent", R"({"name": "digest", "description": "weekly digest"})"},
                  {"run_agent", R"({"agent": "digest", "input": {"week": 12}})"}};
  a.idempotency_key = "plan:" + core::NewUuid() + ":s1";
  std::vector<std::string> call_ids;
  std::vector<std::string> created;
  for (int run = 0; run < 2; ++run) {
    SCOPED_TRACE(run);
    auto id = [&call_ids] {
      call_ids.push_back("call_" + core::NewUuid());
      return call_ids.back();
    };
    FakeModel fake = OnFakeProvider(
        {Turn({{id(), "list_agents", "{}"},
               {id(), "create_agent", R"({"name": "digest", "description": "weekly digest"})"}}),
         Turn({{id(), "run_agent", R"({"agent": "digest", "input": {"week": 12}})"}}),
         Turn({{id(), "complete_task", R"({"summary": "created and ran digest"})"}})});
    ASSERT_NE(fake.model, nullptr);
    events_.clear();
    auto dialogue = NewDialogue(*fake.model);
    dialogue->Start(a);
    ASSERT_EQ(Last().kind, Kind::kComplete) << Last().message;
    ASSERT_EQ(Last().tool_calls.size(), 3u);
    for (const ToolCallRecord& call : Last().tool_calls) {
      EXPECT_FALSE(call.is_error) << call.tool_name;
    }
    for (const DialogueEvent& e : events_) {
      if (e.kind == Kind::kPartialResult && e.partial.tool_name == "create_agent") {
        created.push_back(e.partial.result_json);
      }
    }
  }
  EXPECT_EQ(std::set<std::string>(call_ids.begin(), call_ids.end()).size(), call_ids.size());
  // The second run got the first run's results: one agent, one run.
  ASSERT_EQ(created.size(), 2u);
  EXPECT_EQ(created[0], created[1]);
  EXPECT_THAT(AgentNames(), ::testing::ElementsAre("digest"));
  EXPECT_EQ(Tool("list_runs", Json::object())["count"], 1);
  // The keys are the step's and the writes' order: a direct call with the
  // second write's key is a replay.
  auto replay = platform_->runtime.Invoke(
      who_,
      {"run_agent", R"({"agent": "digest", "input": {"week": 12}})", a.idempotency_key + ":w1"},
      std::chrono::system_clock::now() + std::chrono::seconds(5));
  ASSERT_TRUE(replay.ok()) << replay.status();
  EXPECT_TRUE(replay->deduplicated);
}

// The local agent and the model's agent key writes the same way, so a step
// that ran without a model and runs again with one repeats no write.
TEST_F(LlmDialogueTest, TheLocalAndTheModelsAgentKeyWritesAlike) {
  Tool("create_agent", {{"name", "reporter"}, {"description", "d"}});
  Assignment a = Step(/*writes=*/true, {"run_agent", "list_agents"});
  a.approved_targets_only = true;
  a.tool_calls = {{"list_agents", "{}"}, {"run_agent", R"({"agent": "reporter"})"}};
  a.idempotency_key = "plan:" + core::NewUuid() + ":s2";
  LocalDialogue local(platform_->runtime, who_,
                      std::chrono::system_clock::now() + std::chrono::seconds(30),
                      [this](DialogueEvent e) { events_.push_back(std::move(e)); });
  local.Start(a);
  ASSERT_EQ(Last().kind, Kind::kComplete) << Last().message;
  model_.ThenCall({{"list_agents", Json::object()}, {"run_agent", {{"agent", "reporter"}}}});
  model_.ThenCall({{"complete_task", {{"summary", "ran reporter"}}}});
  dialogue_->Start(a);
  ASSERT_EQ(Last().kind, Kind::kComplete) << Last().message;
  EXPECT_EQ(Tool("list_runs", Json::object())["count"], 1);
}

}  // namespace
}  // namespace omniforge::executor
