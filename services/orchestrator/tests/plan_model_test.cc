// Plans as data: agent_create_plan's arguments, the rules a plan keeps and
// the local templates.
#include "services/orchestrator/plans/plan_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "libs/llm/structured_output.h"
#include "services/orchestrator/plans/plan_engine.h"
#include "services/orchestrator/plans/plan_generator.h"

namespace omniforge::orchestrator {
namespace {

namespace intentpb = ::omniforge::intent::v1;
using ::testing::HasSubstr;

PlanStep Step(std::string id, std::vector<std::string> tools, std::vector<std::string> deps = {}) {
  PlanStep step;
  step.id = std::move(id);
  step.description = "do " + step.id;
  step.tools = std::move(tools);
  step.depends_on = std::move(deps);
  return step;
}

TEST(CreatePlanTool, ItsSchemaAcceptsTheDocumentedArguments) {
  const llm::ToolSpec spec = CreatePlanToolSpec();
  EXPECT_EQ(spec.name, "agent_create_plan");
  EXPECT_TRUE(llm::ValidateJsonAgainstSchema(
                  R"({"objective": "x", "execution_mode": "agent_review",
                      "requested_outputs": ["a"], "priority_entities": ["b"]})",
                  spec.parameters_schema)
                  .ok());
  EXPECT_FALSE(
      llm::ValidateJsonAgainstSchema(R"({"execution_mode": "draft_only"})", spec.parameters_schema)
          .ok());
}

TEST(ParsePlanRequest, ArgumentsNestedTooDeepAreRefusedNamingTheLimit) {
  const std::string deep =
      R"({"objective":"x","steps":)" + std::string(30000, '[') + std::string(30000, ']') + "}";
  const auto parsed = ParsePlanRequest(deep);
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(),
            "agent_create_plan: JSON nested more than 64 levels deep (the limit)");
}

TEST(ParsePlanRequest, ReadsTheModesAndTheLegacyFlag) {
  auto plain = ParsePlanRequest(R"({"objective": "Set up the launch"})");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->mode, ExecutionMode::kAutoExecute);
  auto legacy = ParsePlanRequest(R"({"objective": "x", "auto_execute": false})");
  ASSERT_TRUE(legacy.ok());
  EXPECT_EQ(legacy->mode, ExecutionMode::kDraftOnly);
  auto review = ParsePlanRequest(
      R"({"objective": "x", "execution_mode": "agent_review", "priority_entities": ["Acme"]})");
  ASSERT_TRUE(review.ok());
  EXPECT_EQ(review->mode, ExecutionMode::kAgentReview);
  EXPECT_EQ(review->priority_entities, std::vector<std::string>{"Acme"});
}

TEST(ParsePlanRequest, BadArgumentsNameTheField) {
  EXPECT_THAT(ParsePlanRequest("[]").status().message(), HasSubstr("JSON object"));
  EXPECT_THAT(ParsePlanRequest(R"({"objective": "  "})").status().message(),
              HasSubstr("objective"));
  EXPECT_THAT(ParsePlanRequest(R"({"objective": "x", "execution_mode": "now"})").status().message(),
              HasSubstr("execution_mode"));
  EXPECT_THAT(
      ParsePlanRequest(R"({"objective": "x", "requested_outputs": [1]})").status().message(),
      HasSubstr("requested_outputs"));
  EXPECT_THAT(ParsePlanRequest(R"({"objective": "x", "auto_execute": "no"})").status().message(),
              HasSubstr("auto_execute"));
}

TEST(ValidateStepGraph, RejectsUnknownDependenciesDuplicatesAndCycles) {
  EXPECT_TRUE(ValidateStepGraph({Step("a", {}), Step("b", {}, {"a"})}).ok());
  EXPECT_THAT(ValidateStepGraph({Step("a", {}, {"z"})}).message(), HasSubstr("'z'"));
  EXPECT_THAT(ValidateStepGraph({Step("a", {}), Step("a", {})}).message(), HasSubstr("twice"));
  EXPECT_THAT(ValidateStepGraph({Step("a", {}, {"c"}), Step("b", {}, {"a"}), Step("c", {}, {"b"})})
                  .message(),
              HasSubstr("cycle (a, b, c)"));
  EXPECT_FALSE(ValidateStepGraph({}).ok());
}

TEST(ProjectCreateOrder, NeedsDiscoveryThenProjectThenContextAsDependencies) {
  EXPECT_EQ(ProjectCreateOrderViolation({Step("s1", {"list_project_templates"}),
                                         Step("s2", {"create_project_template"}, {"s1"}),
                                         Step("s3", {"create_project"}, {"s2"}),
                                         Step("s4", {"create_context_document"}, {"s3"})}),
            std::nullopt);
  // In order by position, but the project does not wait for discovery.
  EXPECT_THAT(ProjectCreateOrderViolation({Step("s1", {"list_project_templates"}),
                                           Step("s2", {"create_project"}),
                                           Step("s3", {"create_context_document"}, {"s2"})})
                  .value_or(""),
              HasSubstr("step s2 (project creation (create_project)) must come after template "
                        "discovery"));
  EXPECT_THAT(ProjectCreateOrderViolation(
                  {Step("s1", {"create_project"}), Step("s2", {"create_context_document"}, {"s1"})})
                  .value_or(""),
              HasSubstr("must contain template discovery"));
}

TEST(LocalPlanTemplate, FillsAProjectCreatePlanFromTheRequest) {
  PlanRequest request;
  request.objective = "Launch the spring campaign";
  request.priority_entities = {"Spring campaign"};
  PlanContext context;
  context.context_type = intentpb::CONTEXT_TYPE_PROJECT_CREATE;
  auto steps = LocalPlanTemplate(request, context);
  ASSERT_TRUE(steps.ok());
  EXPECT_EQ(PlanRuleViolation(*steps, context), std::nullopt);
  ASSERT_EQ(steps->size(), 3u);
  EXPECT_EQ((*steps)[1].tool_calls[0].arguments["name"], "Spring campaign");
  EXPECT_EQ((*steps)[2].tool_calls[0].arguments["project"], "Spring campaign");
}

TEST(LocalPlanTemplate, AnAgentPlanUsesTheIntentsEntities) {
  PlanRequest request;
  request.objective = "Send the sales digest every Monday";
  PlanContext context;
  context.intent.emplace();
  context.intent->set_action_type(intentpb::ACTION_TYPE_CREATE_AGENT);
  (*context.intent->mutable_entities())["agent_name"] = "sales-digest";
  (*context.intent->mutable_entities())["schedule"] = "every monday at 9am";
  auto steps = LocalPlanTemplate(request, context);
  ASSERT_TRUE(steps.ok());
  ASSERT_EQ(steps->size(), 2u);
  const auto& draft = (*steps)[1].tool_calls[0];
  EXPECT_EQ(draft.tool, "create_agent");
  EXPECT_EQ(draft.arguments["name"], "sales-digest");
  EXPECT_EQ(draft.arguments["schedule"], "every monday at 9am");
  EXPECT_EQ((*steps)[1].depends_on, std::vector<std::string>{"s1"});
}

TEST(LocalPlanTemplate, AnAuditNeedsItsProject) {
  PlanRequest request;
  request.objective = "Audit the project";
  PlanContext context;
  context.context_type = intentpb::CONTEXT_TYPE_PROJECT_AUDIT;
  EXPECT_EQ(LocalPlanTemplate(request, context).status().code(),
            absl::StatusCode::kInvalidArgument);
  context.entity_id = "Website relaunch";
  auto steps = LocalPlanTemplate(request, context);
  ASSERT_TRUE(steps.ok());
  for (const PlanStep& step : *steps) EXPECT_TRUE(step.depends_on.empty());
}

TEST(PlanToolResult, ShortensLongResultsAndCarriesTheQuestion) {
  Plan plan;
  plan.id = "p";
  plan.objective = "o";
  plan.status = PlanStatus::kWaitingOnUser;
  plan.steps = {Step("s1", {}), Step("s2", {})};
  plan.steps[0].status = StepStatus::kCompleted;
  plan.steps[0].result = {{"text", std::string(10000, 'x')}};
  plan.pending_question = PendingQuestion{"s2", "Which one?", {"A", "B"}};
  const auto result = nlohmann::json::parse(PlanToolResult(plan));
  EXPECT_EQ(result["status"], "waiting_on_user");
  EXPECT_EQ(result["steps"][0]["result"]["truncated"], true);
  EXPECT_LT(result.dump().size(), 5000u);
  EXPECT_EQ(result["question"]["options"], nlohmann::json({"A", "B"}));
}

TEST(PlanReplyText, SaysWhereThePlanStandsAndWhatTheUserCanAnswer) {
  Plan plan;
  plan.objective = "launch the site";
  plan.status = PlanStatus::kPendingReview;
  plan.steps = {Step("s1", {"list_project_templates"}), Step("s2", {"create_project"}, {"s1"})};
  std::string text = PlanReplyText(plan);
  EXPECT_THAT(text, HasSubstr("Here is the plan for \"launch the site\":"));
  EXPECT_THAT(text, HasSubstr("\n1. do s1"));
  EXPECT_THAT(text, HasSubstr("\n2. do s2 (after 1)"));
  EXPECT_THAT(text, HasSubstr(kPlanReviewQuestion));

  plan.status = PlanStatus::kFailed;
  plan.summary = "step s2 failed";
  plan.steps[0].status = StepStatus::kCompleted;
  plan.steps[0].result_summary = "found 2 templates";
  plan.steps[1].status = StepStatus::kFailed;
  plan.steps[1].error = "name taken";
  text = PlanReplyText(plan);
  EXPECT_THAT(text, HasSubstr("\"launch the site\" failed: step s2 failed."));
  EXPECT_THAT(text, HasSubstr("1. do s1: found 2 templates"));
  EXPECT_THAT(text, HasSubstr("2. do s2: failed (name taken)"));

  plan.status = PlanStatus::kWaitingOnUser;
  plan.pending_question = PendingQuestion{"s2", "Which name?", {"Apollo", "Artemis"}};
  EXPECT_THAT(PlanReplyText(plan), HasSubstr("Which name? (Apollo / Artemis)"));
  plan.status = PlanStatus::kRunning;
  EXPECT_THAT(PlanReplyText(plan), HasSubstr("Say \"continue\" to finish it"));
  plan.status = PlanStatus::kRejected;
  EXPECT_THAT(PlanReplyText(plan), HasSubstr("dropped the plan"));
}

TEST(LocalPlanTemplate, AProjectIsNamedFromTheRequestNotAfterTheWholeSentence) {
  PlanContext context;
  context.context_type = intentpb::CONTEXT_TYPE_PROJECT_CREATE;
  PlanRequest request;
  request.objective = "Could you set up a new project for the spring campaign launch?";
  auto steps = LocalPlanTemplate(request, context);
  ASSERT_TRUE(steps.ok()) << steps.status();
  ASSERT_EQ(steps->size(), 3u);
  EXPECT_EQ((*steps)[1].tool_calls.at(0).arguments["name"], "Spring campaign launch");
  request.objective = "set up a project";
  steps = LocalPlanTemplate(request, context);
  ASSERT_TRUE(steps.ok());
  EXPECT_EQ((*steps)[1].tool_calls.at(0).arguments["name"], "set up a project")
      << "nothing but request words: the request itself";
}

}  // namespace
}  // namespace omniforge::orchestrator
