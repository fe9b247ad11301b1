// The model planner's loop driven by the assessment (planner/model_planner.h)
// on a scripted model: after an iteration whose tools ran, the next call
// carries the assessment and the next move as data; blocked work is revised
// kMaxRevisions times, then the model answers without tools; so it does at
// the iteration cap; an iteration without tool runs is not assessed.
#include "services/orchestrator/planner/model_planner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "services/orchestrator/testing/scripted_model.h"

namespace omniforge::orchestrator {
namespace {

namespace execpb = ::omniforge::executor::v1;
using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::ScriptedModel;

// A turn whose tools answer from a table (a tool not in it fails), and
// which records what the planner assessed.
class TableIo final : public PlannerIo {
 public:
  void Text(const std::string& delta) override { shown += delta; }
  void RestartText(const std::string& kept) override { shown = kept; }
  std::optional<ToolRun> RunTool(const ToolStep& step) override {
    ran.push_back(step.tool);
    auto it = results.find(step.tool);
    if (it == results.end()) {
      return ToolRun{json{{"error", step.tool + " failed: the service is down"}}.dump(), true};
    }
    return ToolRun{it->second, false};
  }
  std::optional<ToolRun> CreatePlan(const std::string&) override { return std::nullopt; }
  bool Stopped() override { return false; }
  void Assessed(int iteration, const Assessment& assessment, const Decision& decision) override {
    assessed.push_back(absl::StrCat(iteration, ":", VerdictName(assessment.verdict), ":",
                                    NextMoveName(decision.move)));
  }

  std::map<std::string, std::string> results;
  std::vector<std::string> ran;
  std::vector<std::string> assessed;
  std::string shown;
};

PlannerRequest ReadTools(std::initializer_list<const char*> names) {
  PlannerRequest request;
  request.message = "what ran today?";
  for (const char* name : names) {
    execpb::ToolDescriptor tool;
    tool.set_name(name);
    tool.set_risk(execpb::TOOL_RISK_READ);
    request.tools.push_back(tool);
  }
  return request;
}

// The loop_assessment note the platform added to `request` last, parsed;
// null when the request ends otherwise.
json LastNote(const llm::ChatRequest& request) {
  const std::vector<llm::ChatMessage>& m = request.messages;
  if (m.size() < 2 || m.back().role != llm::Role::kTool) return nullptr;
  const llm::ChatMessage& call = m[m.size() - 2];
  if (call.tool_calls.size() != 1 || call.tool_calls[0].name != "loop_assessment") return nullptr;
  return json::parse(m.back().content);
}

// Partial work (one of two lookups failed) is assessed after the first
// iteration, and the second call carries the assessment and the next move
// (REVISE_PLAN: an output is missing) as a tool result, not in the system
// prompt; the failure's words stay out of the system prompt.
TEST(ModelPlannerLoopTest, TheSecondCallCarriesTheAssessmentAndTheNextMove) {
  ScriptedModel model;
  model.PushToolCalls({{"list_agents", json::object()}, {"list_runs", json::object()}});
  model.PushText("You have one agent; I could not read its runs.");
  PlannerRequest request = ReadTools({"list_agents", "list_runs"});
  TableIo io;
  io.results["list_agents"] = R"({"agents":[{"name":"weekly-digest"}]})";
  const PlannerResult result = RunModelPlanner(model, request, io);

  const std::vector<llm::ChatRequest> asked = model.requests();
  ASSERT_EQ(asked.size(), 2u);
  EXPECT_TRUE(LastNote(asked[0]).is_null()) << "nothing ran before the first call";
  const json note = LastNote(asked[1]);
  ASSERT_TRUE(note.is_object()) << asked[1].messages.back().content;
  EXPECT_EQ(note["after_iteration"], 1);
  EXPECT_EQ(note["next"], "REVISE_PLAN");
  EXPECT_THAT(note["next_means"].get<std::string>(), HasSubstr("try another approach"));
  EXPECT_EQ(note["assessment"]["verdict"], "partial");
  EXPECT_EQ(note["assessment"]["score"], 70);
  EXPECT_THAT(note["assessment"]["reasons"].dump(),
              HasSubstr("list_runs: list_runs failed: the service is down"));
  const std::string& system = asked[1].messages.front().content;
  EXPECT_THAT(system, HasSubstr("loop_assessment"));
  EXPECT_THAT(system, Not(HasSubstr("the service is down")));
  EXPECT_EQ(asked[1].tool_choice.mode, llm::ToolChoiceMode::kAuto) << "the loop goes on";

  EXPECT_THAT(io.assessed, ElementsAre("1:partial:revise_plan"));
  ASSERT_TRUE(result.assessment.has_value());
  EXPECT_EQ(result.assessment->score, 70);
  EXPECT_EQ(result.revisions, 1);
  EXPECT_FALSE(result.exited);
  EXPECT_EQ(result.text, "You have one agent; I could not read its runs.");
}

// Work that stays blocked is revised twice (kMaxRevisions), then the loop
// exits: the model is asked for its answer with no tool call allowed.
TEST(ModelPlannerLoopTest, BlockedWorkIsRevisedTwiceThenAnsweredWithoutTools) {
  ScriptedModel model;
  for (int i = 0; i < 3; ++i) model.PushToolCall("list_runs", {{"page", i}});
  model.PushText("The runs service is down; I could not read today's runs.");
  PlannerRequest request = ReadTools({"list_runs"});
  TableIo io;
  const PlannerResult result = RunModelPlanner(model, request, io);

  EXPECT_THAT(io.ran, ElementsAre("list_runs", "list_runs", "list_runs"));
  EXPECT_THAT(io.assessed,
              ElementsAre("1:blocked:revise_plan", "2:blocked:revise_plan", "3:blocked:exit"));
  const std::vector<llm::ChatRequest> asked = model.requests();
  ASSERT_EQ(asked.size(), 4u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(asked[i].tool_choice.mode, llm::ToolChoiceMode::kAuto) << i;
  }
  EXPECT_EQ(asked[3].tool_choice.mode, llm::ToolChoiceMode::kNone);
  const json exit = LastNote(asked[3]);
  EXPECT_EQ(exit["next"], "EXIT");
  EXPECT_THAT(exit["why"].get<std::string>(), HasSubstr("still blocked after 2 re-plans"));
  EXPECT_THAT(exit["next_means"].get<std::string>(), HasSubstr("no more tool calls"));
  EXPECT_TRUE(result.exited);
  EXPECT_FALSE(result.iteration_limit);
  EXPECT_EQ(result.revisions, kMaxRevisions);
  ASSERT_TRUE(result.decision.has_value());
  EXPECT_EQ(result.decision->move, NextMove::kExit);
  EXPECT_EQ(result.text, "The runs service is down; I could not read today's runs.");
}

// A model that still writes tool calls after the exit: none runs, and the
// answer says why the work stopped.
TEST(ModelPlannerLoopTest, CallsWrittenAfterTheExitAreDroppedAndTheStopIsSaid) {
  ScriptedModel model;
  for (int i = 0; i < 4; ++i) model.PushToolCall("list_runs", json::object());
  PlannerRequest request = ReadTools({"list_runs"});
  TableIo io;
  const PlannerResult result = RunModelPlanner(model, request, io);
  EXPECT_EQ(io.ran.size(), 3u);
  EXPECT_EQ(model.requests().size(), 4u);
  EXPECT_THAT(result.text, HasSubstr("I stopped here: still blocked after 2 re-plans"));
  EXPECT_EQ(io.shown, result.text);
}

// At the iteration cap the loop exits however well the work went: the
// model answers without tools, and the result says the cap was reached.
TEST(ModelPlannerLoopTest, AtTheCapTheModelAnswersWithoutTools) {
  ScriptedModel model;
  for (int i = 0; i < 3; ++i) model.PushToolCall("list_runs", {{"page", i}});
  model.PushText("Here are the runs of the first three pages.");
  PlannerRequest request = ReadTools({"list_runs"});
  request.max_iterations = 3;
  TableIo io;
  io.results["list_runs"] = R"({"runs":[{"id":"r1"}]})";
  const PlannerResult result = RunModelPlanner(model, request, io);

  EXPECT_THAT(io.assessed,
              ElementsAre("1:complete:continue", "2:complete:continue", "3:complete:exit"));
  const std::vector<llm::ChatRequest> asked = model.requests();
  ASSERT_EQ(asked.size(), 4u);
  EXPECT_EQ(asked[3].tool_choice.mode, llm::ToolChoiceMode::kNone);
  EXPECT_THAT(LastNote(asked[3])["why"].get<std::string>(),
              HasSubstr("reached the limit of 3 iterations"));
  EXPECT_TRUE(result.iteration_limit);
  EXPECT_TRUE(result.exited);
  EXPECT_EQ(result.text, "Here are the runs of the first three pages.");
}

// The hot path stays cheap: calls that run nothing (a tool not offered)
// are not assessed, and an answer without tools adds no note; at the cap
// such iterations end the loop all the same.
TEST(ModelPlannerLoopTest, IterationsWithoutToolRunsAreNotAssessed) {
  ScriptedModel model;
  model.PushToolCall("no_such_tool", json::object());
  model.PushText("I cannot do that here.");
  PlannerRequest request = ReadTools({"list_runs"});
  TableIo io;
  PlannerResult result = RunModelPlanner(model, request, io);
  EXPECT_TRUE(io.assessed.empty());
  EXPECT_TRUE(LastNote(model.requests()[1]).is_null());
  EXPECT_FALSE(result.assessment.has_value());

  ScriptedModel capped;
  capped.PushToolCall("no_such_tool", json::object());
  capped.PushText("I cannot do that here.");
  request.max_iterations = 1;
  result = RunModelPlanner(capped, request, io);
  ASSERT_EQ(capped.requests().size(), 2u);
  EXPECT_EQ(capped.requests()[1].tool_choice.mode, llm::ToolChoiceMode::kNone);
  EXPECT_EQ(LastNote(capped.requests()[1])["next"], "EXIT");
  EXPECT_TRUE(result.iteration_limit);
  EXPECT_TRUE(io.assessed.empty());
}

}  // namespace
}  // namespace omniforge::orchestrator
