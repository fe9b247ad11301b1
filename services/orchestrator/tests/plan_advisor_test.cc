// The planner's answers to executor questions (plans/plan_advisor.h) are
// asked of the planner model of the plan's context type (planner.profiles:
// project_audit → quality, task → speed), as the rest of the turn; a
// context type without a profile of its own uses planner.profile.
#include "services/orchestrator/plans/plan_advisor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "services/orchestrator/testing/scripted_model.h"

namespace omniforge::orchestrator {
namespace {

namespace intentpb = ::omniforge::intent::v1;
using testing::ScriptedModel;

Plan PlanIn(intentpb::ContextType context) {
  Plan plan;
  plan.id = "plan-1";
  plan.objective = "Audit the spring campaign project";
  plan.context_type = context;
  PlanStep step;
  step.id = "s1";
  step.description = "Read the project's tasks";
  plan.steps.push_back(step);
  return plan;
}

void ScriptAnswer(ScriptedModel& model, const std::string& answer) {
  model.PushText(nlohmann::json{{"answered", true}, {"answer", answer}, {"reason", ""}}.dump());
}

TEST(PlanAdvisorTest, AnExecutorsQuestionIsAnsweredByTheContextTypesPlanner) {
  ScriptedModel balanced, quality, speed;
  ScriptAnswer(quality, "the open tasks");
  ScriptAnswer(speed, "this task only");
  ScriptAnswer(balanced, "all of them");
  const PlanAdvisor advisor(
      nullptr, &balanced,
      {{intentpb::CONTEXT_TYPE_PROJECT_AUDIT, &quality}, {intentpb::CONTEXT_TYPE_TASK, &speed}});
  const core::TimePoint deadline = core::SystemClock().Now() + std::chrono::seconds(5);

  Plan audit = PlanIn(intentpb::CONTEXT_TYPE_PROJECT_AUDIT);
  QuestionAnswer answer =
      advisor.AnswerQuestion(audit, audit.steps[0], "Which tasks?", {}, deadline);
  EXPECT_TRUE(answer.answered);
  EXPECT_EQ(answer.answer, "the open tasks");
  ASSERT_EQ(quality.requests().size(), 1u);
  EXPECT_TRUE(balanced.requests().empty());

  Plan task = PlanIn(intentpb::CONTEXT_TYPE_TASK);
  answer = advisor.AnswerQuestion(task, task.steps[0], "Which tasks?", {}, deadline);
  EXPECT_EQ(answer.answer, "this task only");
  EXPECT_EQ(speed.requests().size(), 1u);

  Plan global = PlanIn(intentpb::CONTEXT_TYPE_GLOBAL);
  answer = advisor.AnswerQuestion(global, global.steps[0], "Which tasks?", {}, deadline);
  EXPECT_EQ(answer.answer, "all of them");
  EXPECT_EQ(balanced.requests().size(), 1u);
  EXPECT_EQ(quality.requests().size(), 1u) << "asked once, for the audit only";
}

// Without any planner model the question goes to the user, whatever the
// context type.
TEST(PlanAdvisorTest, WithoutAPlannerModelTheQuestionGoesToTheUser) {
  const PlanAdvisor advisor(nullptr, nullptr);
  Plan audit = PlanIn(intentpb::CONTEXT_TYPE_PROJECT_AUDIT);
  const QuestionAnswer answer =
      advisor.AnswerQuestion(audit, audit.steps[0], "Which tasks?", {},
                             core::SystemClock().Now() + std::chrono::seconds(5));
  EXPECT_FALSE(answer.answered);
  EXPECT_THAT(answer.reason, ::testing::HasSubstr("no model"));
}

}  // namespace
}  // namespace omniforge::orchestrator
