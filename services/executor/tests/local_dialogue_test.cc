// The local executor agent (LocalDialogue) on the real platform tools and
// PostgreSQL: completion, several tools, a question answered by the
// planner, a name resolved on its own, max turns, a tool error,
// cancellation, unapproved writes, approved targets only, and a re-run step
// that repeats no write.
#include "services/executor/src/local_dialogue.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "libs/core/ids.h"
#include "libs/pg/migrate.h"
#include "libs/pg/pool.h"
#include "services/executor/src/pg_invocation_ledger.h"
#include "services/executor/src/platform_tools.h"
#include "services/executor/tests/platform_runtime.h"

namespace omniforge::executor {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Json = nlohmann::json;
using Kind = DialogueEvent::Kind;

class LocalDialogueTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { platform_ = new testing::PlatformRuntime(2); }
  static void TearDownTestSuite() { delete platform_; }

  void SetUp() override {
    who_ = {"acme", "user-" + core::NewUuid()};
    dialogue_ = std::make_unique<LocalDialogue>(
        platform_->runtime, who_, std::chrono::system_clock::now() + std::chrono::seconds(30),
        [this](DialogueEvent e) { events_.push_back(std::move(e)); });
  }

  Json Tool(const std::string& name, const Json& args) {
    auto out = platform_->runtime.Invoke(
        who_, {name, args.dump(), ""}, std::chrono::system_clock::now() + std::chrono::seconds(5));
    EXPECT_TRUE(out.ok() && !out->is_error) << name;
    return out.ok() ? Json::parse(out->result_json) : Json();
  }

  static Assignment Step(std::vector<PlannedCall> calls, bool writes = false) {
    Assignment a;
    a.task = "do the step";
    a.step_id = "step-1";
    a.tool_calls = std::move(calls);
    a.writes_approved = writes;
    if (writes) {
      for (const auto& call : a.tool_calls) a.allowed_tools.push_back(call.tool_name);
    }
    return a;
  }

  std::vector<Kind> Kinds() const {
    std::vector<Kind> kinds;
    for (const auto& e : events_) kinds.push_back(e.kind);
    return kinds;
  }
  const DialogueEvent& Last() const { return events_.back(); }

  static testing::PlatformRuntime* platform_;
  core::Identity who_;
  std::vector<DialogueEvent> events_;
  std::unique_ptr<LocalDialogue> dialogue_;
};

testing::PlatformRuntime* LocalDialogueTest::platform_ = nullptr;

TEST_F(LocalDialogueTest, OneCallCompletesInOneTurn) {
  Tool("create_agent", {{"name", "digest"}, {"description", "d"}});
  dialogue_->Start(Step({{"list_agents", "{}"}}));
  EXPECT_THAT(Kinds(), ElementsAre(Kind::kProgress, Kind::kPartialResult, Kind::kComplete));
  EXPECT_EQ(events_[0].tool_name, "list_agents");
  EXPECT_EQ(Json::parse(events_[1].partial.result_json)["count"], 1);
  const DialogueEvent& done = Last();
  EXPECT_EQ(done.turn, 1);
  EXPECT_EQ(done.confidence, 1.0);
  EXPECT_EQ(Json::parse(done.result_json)["results"][0]["tool"], "list_agents");
  ASSERT_EQ(done.tool_calls.size(), 1u);
  EXPECT_TRUE(dialogue_->finished());
}

TEST_F(LocalDialogueTest, SeveralToolsRunInOrderWithApprovedWrites) {
  dialogue_->Start(
      Step({{"create_project_template", R"({"name": "Launch", "tasks": [{"title": "Plan"}]})"},
            {"create_project", R"({"name": "Q3 launch", "template": "Launch"})"},
            {"create_context_document",
             R"({"project": "Q3 launch", "title": "Brief", "content": "EU first"})"}},
           /*writes=*/true));
  ASSERT_EQ(Last().kind, Kind::kComplete) << Last().message;
  EXPECT_EQ(Last().turn, 3);
  // The summary says what each call made, in order.
  EXPECT_THAT(Last().summary, HasSubstr("create_project_template: created template 'Launch'; "
                                        "create_project: created project 'Q3 launch', 1 task "
                                        "(Plan); create_context_document: created"));
  Json details = Tool("get_project_details", {{"project", "Q3 launch"}});
  EXPECT_EQ(details["tasks"][0]["title"], "Plan");
  EXPECT_EQ(details["context_documents"][0]["content"], "EU first");
}

TEST_F(LocalDialogueTest, AmbiguousNameBecomesAQuestionAndTheAnswerResolvesIt) {
  Tool("create_project", {{"name", "Spring marketing"}});
  const std::string autumn =
      Tool("create_project", {{"name", "Autumn marketing"}})["project"]["id"];
  dialogue_->Start(Step({{"list_tasks", R"({"project": "marketing"})"}}));
  ASSERT_EQ(Last().kind, Kind::kQuestion) << Last().message;
  EXPECT_THAT(Last().options, ElementsAre("Autumn marketing", "Spring marketing"));
  EXPECT_TRUE(dialogue_->waiting_for_answer());
  const std::string question = Last().question_id;

  dialogue_->Answer(question, "the big one");  // not an option: asked again
  ASSERT_EQ(Last().kind, Kind::kQuestion) << Last().message;
  dialogue_->Answer(Last().question_id, "autumn MARKETING");
  ASSERT_EQ(Last().kind, Kind::kComplete) << Last().message;
  EXPECT_EQ(Json::parse(Last().result_json)["results"][0]["result"]["project"]["id"], autumn);
  EXPECT_EQ(Last().confidence, 0.9);
  EXPECT_THAT(Last().summary, HasSubstr("clarification"));
}

TEST_F(LocalDialogueTest, AnswerByNumberAndASingleMatchNeedsNoQuestion) {
  Tool("create_project", {{"name", "Hiring 2027"}});
  dialogue_->Start(Step({{"get_project_details", R"({"project": "hiring"})"}}));
  ASSERT_EQ(Last().kind, Kind::kComplete) << Last().message;
  EXPECT_THAT(Last().limitations[0],
              HasSubstr("'hiring' was taken to mean the project 'Hiring 2027'"));

  Tool("create_agent", {{"name", "sales-digest"}, {"description", "d"}});
  Tool("create_agent", {{"name", "sales-alerts"}, {"description", "d"}});
  events_.clear();
  LocalDialogue second(platform_->runtime, who_,
                       std::chrono::system_clock::now() + std::chrono::seconds(30),
                       [this](DialogueEvent e) { events_.push_back(std::move(e)); });
  second.Start(Step({{"get_agent", R"({"agent": "sales"})"}}));
  ASSERT_EQ(Last().kind, Kind::kQuestion) << Last().message;
  second.Answer(Last().question_id, "2");
  ASSERT_EQ(Last().kind, Kind::kComplete);
  EXPECT_EQ(Json::parse(Last().result_json)["results"][0]["result"]["agent"]["name"],
            "sales-digest");
}

TEST_F(LocalDialogueTest, MaxTurnsEndsWithTheResultsSoFar) {
  Assignment a = Step({{"list_agents", "{}"}, {"list_skills", "{}"}, {"list_runs", "{}"}});
  a.max_turns = 2;
  dialogue_->Start(a);
  ASSERT_EQ(Last().kind, Kind::kError);
  EXPECT_EQ(Last().error, DialogueError::kMaxTurns);
  EXPECT_THAT(Last().message, HasSubstr("limit of 2 turns"));
  ASSERT_EQ(Last().partial_results.size(), 2u);
  EXPECT_EQ(Last().partial_results[1].tool_name, "list_skills");
}

TEST_F(LocalDialogueTest, ToolErrorEndsTheStepWithIt) {
  dialogue_->Start(
      Step({{"list_agents", "{}"}, {"get_run", Json({{"run_id", core::NewUuid()}}).dump()}}));
  ASSERT_EQ(Last().kind, Kind::kError);
  EXPECT_EQ(Last().error, DialogueError::kToolFailed);
  EXPECT_THAT(Last().message, HasSubstr("get_run: no run"));
  ASSERT_EQ(Last().partial_results.size(), 2u);
  EXPECT_TRUE(Last().partial_results[1].is_error);

  events_.clear();
  LocalDialogue bad(platform_->runtime, who_,
                    std::chrono::system_clock::now() + std::chrono::seconds(30),
                    [this](DialogueEvent e) { events_.push_back(std::move(e)); });
  bad.Start(Step({{"get_run", R"({"run_id": "nope"})"}}));
  EXPECT_EQ(Last().error, DialogueError::kToolFailed);
  EXPECT_THAT(Last().message, HasSubstr("$.run_id"));
  EXPECT_FALSE(Last().retryable);
}

TEST_F(LocalDialogueTest, CancelWhileWaitingForAnAnswer) {
  Tool("create_project", {{"name", "North sales"}});
  Tool("create_project", {{"name", "South sales"}});
  dialogue_->Start(Step({{"list_agents", "{}"}, {"list_tasks", R"({"project": "sales"})"}}));
  ASSERT_EQ(Last().kind, Kind::kQuestion) << Last().message;
  dialogue_->RequestCancel();
  EXPECT_TRUE(dialogue_->ApplyCancel());
  EXPECT_EQ(Last().error, DialogueError::kCancelled);
  ASSERT_EQ(Last().partial_results.size(), 1u);
  EXPECT_EQ(Last().partial_results[0].tool_name, "list_agents");
  EXPECT_TRUE(dialogue_->finished());
}

TEST_F(LocalDialogueTest, WritesNeedApprovalAndBadAssignmentsRunNothing) {
  Assignment unapproved = Step({{"create_agent", R"({"name": "x", "description": "d"})"}});
  unapproved.allowed_tools = {"create_agent"};
  dialogue_->Start(unapproved);
  EXPECT_EQ(Last().error, DialogueError::kWriteNotApproved);
  EXPECT_EQ(Tool("list_agents", Json::object())["count"], 0);

  struct Case {
    Assignment a;
    std::string message;
  };
  Assignment empty_task = Step({{"list_agents", "{}"}});
  empty_task.task = " ";
  Assignment too_many_turns = Step({{"list_agents", "{}"}});
  too_many_turns.max_turns = 51;
  Assignment not_allowed = Step({{"list_agents", "{}"}});
  not_allowed.allowed_tools = {"list_skills"};
  Assignment write_without_list = Step({{"delete_agent", R"({"agent": "x"})"}});
  write_without_list.writes_approved = true;
  const std::vector<Case> cases = {
      {empty_task, "task:"},
      {too_many_turns, "max_turns"},
      {Step({}), "tool_calls: without an LLM"},
      {Step({{"nope", "{}"}}), "no tool named 'nope'"},
      {not_allowed, "not among the allowed tools"},
      {write_without_list, "not among the allowed tools"},
      {Step({{"list_agents", "[1]"}}), "JSON object"},
  };
  for (const Case& c : cases) {
    events_.clear();
    LocalDialogue d(platform_->runtime, who_,
                    std::chrono::system_clock::now() + std::chrono::seconds(30),
                    [this](DialogueEvent e) { events_.push_back(std::move(e)); });
    d.Start(c.a);
    ASSERT_EQ(events_.size(), 1u) << c.message;
    EXPECT_EQ(Last().error, DialogueError::kInvalidAssignment) << c.message;
    EXPECT_THAT(Last().message, HasSubstr(c.message));
  }
}

TEST_F(LocalDialogueTest, AReRunStepWithItsKeyRepeatsNoWrite) {
  Tool("create_agent", {{"name", "reporter"}, {"description", "d"}});
  Assignment a = Step({{"run_agent", R"({"agent": "reporter"})"}}, /*writes=*/true);
  a.idempotency_key = "plan-1/step-2";
  dialogue_->Start(a);
  ASSERT_EQ(Last().kind, Kind::kComplete);
  const std::string first = Last().result_json;
  events_.clear();
  LocalDialogue again(platform_->runtime, who_,
                      std::chrono::system_clock::now() + std::chrono::seconds(30),
                      [this](DialogueEvent e) { events_.push_back(std::move(e)); });
  again.Start(a);
  ASSERT_EQ(Last().kind, Kind::kComplete);
  EXPECT_EQ(Last().result_json, first);
  EXPECT_EQ(Tool("list_runs", Json::object())["count"], 1);
  // The write's key is the step's and its place among the step's writes.
  auto replay =
      platform_->runtime.Invoke(who_, {"run_agent", R"({"agent": "reporter"})", "plan-1/step-2:w0"},
                                std::chrono::system_clock::now() + std::chrono::seconds(5));
  ASSERT_TRUE(replay.ok()) << replay.status();
  EXPECT_TRUE(replay->deduplicated);
}

// The user approved the writes as previewed: the planned ones run; a write
// whose name matches nothing exactly is not run on another target the
// executor would pick (as it does otherwise), while a read's name still is
// resolved.
TEST_F(LocalDialogueTest, ApprovedTargetsOnlyRunsThePlannedWritesOnTheirNames) {
  Tool("create_agent", {{"name", "sales-digest"}, {"description", "d"}});
  Assignment a =
      Step({{"get_agent", R"({"agent": "sales"})"}, {"run_agent", R"({"agent": "sales-digest"})"}},
           /*writes=*/true);
  a.approved_targets_only = true;
  dialogue_->Start(a);
  ASSERT_EQ(Last().kind, Kind::kComplete) << Last().message;
  EXPECT_EQ(Tool("list_runs", Json::object())["count"], 1);

  for (bool targets_only : {true, false}) {
    SCOPED_TRACE(targets_only);
    Assignment guess = Step({{"run_agent", R"({"agent": "sales"})"}}, /*writes=*/true);
    guess.approved_targets_only = targets_only;
    events_.clear();
    LocalDialogue d(platform_->runtime, who_,
                    std::chrono::system_clock::now() + std::chrono::seconds(30),
                    [this](DialogueEvent e) { events_.push_back(std::move(e)); });
    d.Start(guess);
    if (targets_only) {
      ASSERT_EQ(Last().kind, Kind::kError);
      EXPECT_EQ(Last().error, DialogueError::kToolFailed);
      EXPECT_THAT(Last().message, HasSubstr("run_agent"));
      EXPECT_EQ(Tool("list_runs", Json::object())["count"], 1);
    } else {
      ASSERT_EQ(Last().kind, Kind::kComplete) << Last().message;
      EXPECT_THAT(Last().limitations[0], HasSubstr("'sales' was taken to mean"));
      EXPECT_EQ(Tool("list_runs", Json::object())["count"], 2);
    }
  }
}

TEST_F(LocalDialogueTest, ProtocolErrors) {
  dialogue_->Answer("q1", "yes");
  EXPECT_EQ(Last().error, DialogueError::kProtocol);
}

}  // namespace
}  // namespace omniforge::executor
