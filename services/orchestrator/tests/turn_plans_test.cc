// Plans in the turn, on fakes (testing/turn_harness.h): the local policy's
// plan templates kept in a FakePlanStore and carried out by
// FakeStepExecutors. A plan is offered for review, approved or dropped, an
// audit runs at once, a step's question goes to the user and their answer
// lets the plan go on, and "continue" finishes a plan left unfinished.
// Steps, plans and turns are assessed, and a blocked step of a model's plan
// is re-planned with its assessment.
#include <map>

#include "absl/strings/str_cat.h"
#include "libs/core/ids.h"
#include "services/orchestrator/flow/routing.h"
#include "services/orchestrator/testing/turn_test_names.h"

namespace omniforge::orchestrator {
namespace {

TurnHarness::Setup WithPlans() { return {{}, nullptr, true}; }

FakeUnderstanding::Answer Projects() {
  return FakeUnderstanding::Always(intentpb::ACTION_TYPE_MANAGE_PLATFORM);
}

std::vector<std::string> StepsStarted(const RecordingSink& sink) {
  std::vector<std::string> steps;
  for (const pb::ChatEvent& e : sink.Of(pb::ChatEvent::kStepStart)) {
    steps.push_back(e.step_start().step_id());
  }
  return steps;
}

TEST(TurnPlanTest, AProjectPlanIsOfferedForReviewAndRunsInOrderOnceApproved) {
  TurnHarness h(Projects(), WithPlans());
  RecordingSink draft;
  ASSERT_TRUE(h.TurnIn(pb::CONTEXT_TYPE_PROJECT_CREATE,
                       "Set up a project for the spring campaign launch", draft)
                  .ok());
  const std::string conversation = ConversationOf(draft);
  ASSERT_EQ(draft.Of(pb::ChatEvent::kPlanCreated).size(), 1u);
  ASSERT_EQ(draft.Of(pb::ChatEvent::kPlanReadyForReview).size(), 1u);
  const pb::Plan plan =
      draft.Of(pb::ChatEvent::kPlanReadyForReview)[0].plan_ready_for_review().plan();
  EXPECT_EQ(plan.status(), pb::PLAN_STATUS_PENDING_REVIEW);
  ASSERT_EQ(plan.steps_size(), 3);
  EXPECT_TRUE(StepsStarted(draft).empty()) << "nothing runs before the review";
  EXPECT_TRUE(h.executors.assignments().empty());
  EXPECT_THAT(draft.Text(), HasSubstr("Here is the plan"));
  EXPECT_THAT(draft.Text(), HasSubstr(plan.steps(1).description()));
  EXPECT_FALSE(draft.events.back().done().is_final());
  EXPECT_EQ(draft.States().back(), pb::AGENT_STATE_WAITING_ON_USER);
  ASSERT_TRUE(h.LastFlow(conversation).plan.has_value());
  EXPECT_EQ(h.LastFlow(conversation).plan->plan_id, plan.plan_id());
  EXPECT_EQ(h.plan_store.Stored(plan.plan_id())->status, PlanStatus::kPendingReview);

  RecordingSink run;
  ASSERT_TRUE(h.Turn("looks good, run it", run, conversation).ok());
  EXPECT_EQ(run.events.front().session().flow_id(), draft.events.front().session().flow_id());
  EXPECT_TRUE(run.Of(pb::ChatEvent::kPlanCreated).empty()) << "the reviewed plan runs";
  EXPECT_THAT(StepsStarted(run), ElementsAre("s1", "s2", "s3"));
  for (const pb::ChatEvent& e : run.Of(pb::ChatEvent::kStepComplete)) {
    EXPECT_EQ(e.step_complete().plan_id(), plan.plan_id());
    EXPECT_EQ(e.step_complete().status(), pb::STEP_STATUS_COMPLETED);
  }
  ASSERT_EQ(h.executors.assignments().size(), 3u);
  EXPECT_EQ(h.executors.assignments()[1].tool_calls(0).tool_name(), "create_project");
  EXPECT_TRUE(h.executors.assignments()[1].writes_approved());
  EXPECT_THAT(run.Text(), HasSubstr("Done:"));
  EXPECT_TRUE(run.events.back().done().is_final());
  EXPECT_FALSE(h.LastFlow(conversation).plan.has_value()) << "nothing waits any more";
  EXPECT_EQ(h.plan_store.Stored(plan.plan_id())->status, PlanStatus::kCompleted);
}

TEST(TurnPlanTest, ADraftPlanTheUserDropsNeverRuns) {
  TurnHarness h(Projects(), WithPlans());
  RecordingSink draft;
  ASSERT_TRUE(
      h.TurnIn(pb::CONTEXT_TYPE_PROJECT_CREATE, "Create a project for the Q4 audit", draft).ok());
  const std::string conversation = ConversationOf(draft);
  const std::string plan_id =
      draft.Of(pb::ChatEvent::kPlanReadyForReview)[0].plan_ready_for_review().plan().plan_id();
  RecordingSink drop;
  ASSERT_TRUE(h.Turn("cancel", drop, conversation).ok());
  EXPECT_TRUE(StepsStarted(drop).empty());
  EXPECT_THAT(drop.Text(), HasSubstr("dropped the plan"));
  EXPECT_TRUE(drop.events.back().done().is_final());
  EXPECT_FALSE(h.LastFlow(conversation).plan.has_value());
  EXPECT_EQ(h.plan_store.Stored(plan_id)->status, PlanStatus::kRejected);
  // A later "run it" is a new request, not the dropped plan.
  RecordingSink later;
  ASSERT_TRUE(h.Turn("looks good, run it", later, conversation).ok());
  EXPECT_TRUE(StepsStarted(later).empty());
  EXPECT_TRUE(h.executors.assignments().empty());
}

TEST(TurnPlanTest, AnAuditPlanOnlyReadsAndRunsAtOnce) {
  TurnHarness h(Projects(), WithPlans());
  RecordingSink audit;
  ASSERT_TRUE(
      h.TurnIn(pb::CONTEXT_TYPE_PROJECT_AUDIT, "how is this project doing?", audit, "", "Harbor")
          .ok());
  ASSERT_EQ(audit.Of(pb::ChatEvent::kPlanCreated).size(), 1u);
  EXPECT_TRUE(audit.Of(pb::ChatEvent::kPlanReadyForReview).empty()) << "reads need no review";
  EXPECT_EQ(audit.Of(pb::ChatEvent::kStepComplete).size(), 3u);
  EXPECT_THAT(audit.Text(), HasSubstr("Done:"));
  EXPECT_THAT(audit.Text(), HasSubstr("get_project_details: done"));
  EXPECT_TRUE(audit.events.back().done().is_final());
  // Every step, and the turn, judged from what they produced.
  for (const pb::ChatEvent& e : audit.Of(pb::ChatEvent::kStepComplete)) {
    EXPECT_EQ(e.step_complete().assessment().verdict(), pb::ASSESSMENT_VERDICT_COMPLETE);
  }
  const pb::Assessment& turn = audit.events.back().done().assessment();
  EXPECT_EQ(turn.verdict(), pb::ASSESSMENT_VERDICT_COMPLETE);
  EXPECT_EQ(turn.score(), 99) << "the request was understood with 95% confidence";
}

// A step the executor did only in part: the step and the turn are PARTIAL
// with the executor's own words among the reasons, the step keeps its
// assessment in the store, and the reply says the plan is done with its
// limitations.
TEST(TurnPlanTest, AnAuditThatGotOnlyPartOfItsDataIsDoneWithItsLimitations) {
  TurnHarness h(Projects(), WithPlans());
  h.executors.PartialWhen("list_tasks", "only the first 50 tasks were read", 0.5);
  RecordingSink audit;
  ASSERT_TRUE(
      h.TurnIn(pb::CONTEXT_TYPE_PROJECT_AUDIT, "how is this project doing?", audit, "", "Harbor")
          .ok());
  const std::vector<pb::ChatEvent> steps = audit.Of(pb::ChatEvent::kStepComplete);
  ASSERT_EQ(steps.size(), 3u);
  int partial = 0;
  for (const pb::ChatEvent& e : steps) {
    const pb::Assessment& step = e.step_complete().assessment();
    EXPECT_EQ(e.step_complete().status(), pb::STEP_STATUS_COMPLETED);
    if (step.verdict() != pb::ASSESSMENT_VERDICT_PARTIAL) continue;
    ++partial;
    EXPECT_THAT(step.reasons(), Contains("only the first 50 tasks were read"));
    EXPECT_THAT(step.reasons(), Contains("the executor was 50% sure of its result"));
  }
  EXPECT_EQ(partial, 2) << "the two steps that list tasks";

  const pb::Assessment& turn = audit.events.back().done().assessment();
  EXPECT_EQ(turn.verdict(), pb::ASSESSMENT_VERDICT_PARTIAL);
  EXPECT_EQ(turn.score(), 27 + 20 + 13 + 19);
  EXPECT_THAT(turn.reasons(), Contains(HasSubstr("only the first 50 tasks were read")));
  EXPECT_THAT(audit.Text(), HasSubstr(absl::StrCat("Done, with ", turn.reasons_size(),
                                                   " limitations: only part of: ")));
  EXPECT_THAT(audit.Text(), HasSubstr("scored 79/100"));
  EXPECT_TRUE(audit.events.back().done().is_final());

  const std::string plan_id =
      audit.Of(pb::ChatEvent::kPlanCreated)[0].plan_created().plan().plan_id();
  const std::optional<Plan> stored = h.plan_store.Stored(plan_id);
  ASSERT_TRUE(stored.has_value());
  for (const PlanStep& step : stored->steps) {
    ASSERT_TRUE(step.assessment.has_value()) << step.id;
    EXPECT_EQ(step.assessment->evidence.work.size(), 1u);
  }
}

// A turn without a plan is judged by its tool calls and what waits.
TEST(TurnPlanTest, ATurnWithoutAPlanIsJudgedByItsToolCalls) {
  TurnHarness h(FakeUnderstanding::Always(intentpb::ACTION_TYPE_QUERY_INFO), WithPlans());
  RecordingSink ask;
  ASSERT_TRUE(h.Turn("what agents do I have?", ask).ok());
  ASSERT_FALSE(ask.Of(pb::ChatEvent::kToolResult).empty());
  const pb::Assessment& turn = ask.events.back().done().assessment();
  EXPECT_EQ(turn.verdict(), pb::ASSESSMENT_VERDICT_COMPLETE);
  EXPECT_EQ(turn.score(), 99);
}

// The engine keeps the turn's time: each step's dialogue ends a step's time
// after the turn's clock says it opened (the fake clock stands still, two
// months before the machine's own).
TEST(TurnPlanTest, AStepsDialogueEndsAStepsTimeAfterTheTurnsClock) {
  TurnHarness h(Projects(), WithPlans());
  RecordingSink audit;
  ASSERT_TRUE(
      h.TurnIn(pb::CONTEXT_TYPE_PROJECT_AUDIT, "how is this project doing?", audit, "", "Harbor")
          .ok());
  const std::vector<core::TimePoint> deadlines = h.executors.deadlines();
  ASSERT_EQ(deadlines.size(), 3u);
  for (const core::TimePoint deadline : deadlines) {
    EXPECT_EQ(deadline, h.clock.Now() + PlanEngineOptions{}.step_timeout);
  }
}

TEST(TurnPlanTest, AStepsQuestionGoesToTheUserWhoseAnswerLetsThePlanGoOn) {
  TurnHarness h(Projects(), WithPlans());
  h.executors.AskWhen("get_project_details", "Which project do you mean?",
                      {"Harbor north", "Harbor south"});
  RecordingSink audit;
  ASSERT_TRUE(
      h.TurnIn(pb::CONTEXT_TYPE_PROJECT_AUDIT, "how is this project doing?", audit, "", "Harbor")
          .ok());
  const std::string conversation = ConversationOf(audit);
  EXPECT_THAT(audit.Text(), HasSubstr("needs your answer"));
  EXPECT_THAT(audit.Text(), HasSubstr("Harbor north"));
  EXPECT_FALSE(audit.events.back().done().is_final());
  EXPECT_EQ(audit.States().back(), pb::AGENT_STATE_WAITING_ON_USER);
  ASSERT_TRUE(h.LastFlow(conversation).plan.has_value());
  EXPECT_EQ(h.LastFlow(conversation).plan->status, "waiting_on_user");

  // A question of the user's own is answered; the step keeps waiting.
  RecordingSink question;
  ASSERT_TRUE(h.Turn("what agents do I have?", question, conversation).ok());
  EXPECT_TRUE(StepsStarted(question).empty());
  EXPECT_EQ(h.LastFlow(conversation).plan->status, "waiting_on_user");

  RecordingSink answer;
  ASSERT_TRUE(h.Turn("Harbor north", answer, conversation).ok());
  EXPECT_THAT(h.executors.answers(), Contains("Harbor north"));
  EXPECT_TRUE(answer.events.back().done().is_final()) << answer.Text();
  EXPECT_THAT(answer.Text(), HasSubstr("Done:"));
  EXPECT_FALSE(h.LastFlow(conversation).plan.has_value());
}

execpb::ExecutorError StepError(bool retryable) {
  execpb::ExecutorError error;
  error.set_code(execpb::ERROR_CODE_TOOL_FAILED);
  error.set_message(retryable ? "the project service answered 503" : "no such project");
  error.set_retryable(retryable);
  return error;
}

std::vector<std::string> Retries(const RecordingSink& sink) {
  std::vector<std::string> retries;
  for (const pb::ChatEvent& e : sink.Of(pb::ChatEvent::kExecutorMessage)) {
    if (e.executor_message().kind() == "retry") retries.push_back(e.executor_message().text());
  }
  return retries;
}

// The project audit's steps in `h`, run at once; the sink has its events.
std::string RunAudit(TurnHarness& h, RecordingSink& audit) {
  EXPECT_TRUE(
      h.TurnIn(pb::CONTEXT_TYPE_PROJECT_AUDIT, "how is this project doing?", audit, "", "Harbor")
          .ok());
  EXPECT_EQ(audit.Of(pb::ChatEvent::kPlanCreated).size(), 1u);
  return audit.Of(pb::ChatEvent::kPlanCreated)[0].plan_created().plan().plan_id();
}

TEST(TurnPlanRecoveryTest, AStepThatFailedForATemporaryReasonRunsAgainAndThePlanCompletes) {
  TurnHarness h(Projects(), WithPlans());
  h.executors.FailWhen("get_project_details", StepError(/*retryable=*/true), 1);
  RecordingSink audit;
  const std::string plan_id = RunAudit(h, audit);
  EXPECT_EQ(h.executors.assignments().size(), 4u) << "3 steps, one of them twice";
  const std::vector<std::string> retries = Retries(audit);
  ASSERT_EQ(retries.size(), 1u);
  EXPECT_THAT(retries[0], HasSubstr("(attempt 2 of 3): the project service answered 503"));
  for (const pb::ChatEvent& e : audit.Of(pb::ChatEvent::kStepComplete)) {
    EXPECT_EQ(e.step_complete().status(), pb::STEP_STATUS_COMPLETED) << e.step_complete().step_id();
  }
  EXPECT_EQ(audit.Of(pb::ChatEvent::kStepComplete).size(), 3u) << "one end per step";
  const std::optional<Plan> stored = h.plan_store.Stored(plan_id);
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->status, PlanStatus::kCompleted);
  int attempts = 0;
  for (const PlanStep& step : stored->steps) attempts += step.attempts;
  EXPECT_EQ(attempts, 4);
  EXPECT_THAT(audit.Text(), HasSubstr("Done:"));
}

TEST(TurnPlanRecoveryTest, AStepThatFailedForAPermanentReasonIsNotRunAgain) {
  TurnHarness h(Projects(), WithPlans());
  h.executors.FailWhen("get_project_details", StepError(/*retryable=*/false), 1);
  RecordingSink audit;
  const std::string plan_id = RunAudit(h, audit);
  EXPECT_TRUE(Retries(audit).empty());
  const std::optional<Plan> stored = h.plan_store.Stored(plan_id);
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->status, PlanStatus::kFailed);
  for (const PlanStep& step : stored->steps) EXPECT_LE(step.attempts, 1) << step.id;
}

TEST(TurnPlanRecoveryTest, AStepThatKeepsFailingForATemporaryReasonFailsAfterItsAttempts) {
  TurnHarness h(Projects(), WithPlans());
  h.executors.FailWhen("get_project_details", StepError(/*retryable=*/true), 100);
  RecordingSink audit;
  const std::string plan_id = RunAudit(h, audit);
  EXPECT_EQ(Retries(audit).size(), 2u);
  const std::optional<Plan> stored = h.plan_store.Stored(plan_id);
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->status, PlanStatus::kFailed);
  int most = 0;
  for (const PlanStep& step : stored->steps) most = std::max(most, step.attempts);
  EXPECT_EQ(most, 3);
}

// Offers the project plan in `h` and says "looks good, run it" under
// `control`; returns the conversation.
std::string ApproveProjectPlan(TurnHarness& h, TurnControl& control, RecordingSink& run) {
  RecordingSink draft;
  EXPECT_TRUE(h.TurnIn(pb::CONTEXT_TYPE_PROJECT_CREATE,
                       "Set up a project for the spring campaign launch", draft)
                  .ok());
  std::string conversation = ConversationOf(draft);
  EXPECT_TRUE(
      h.runner->Run(kAlice, TurnHarness::Request("looks good, run it", conversation), control, run)
          .ok());
  return conversation;
}

// A plan that failed at a step for good asks the user about the step: try
// it again (it runs again, the plan goes on), leave it out (the steps that
// depended on it run without it) or stop.
TEST(TurnPlanRecoveryTest, AStepThatFailedForGoodIsAskedAboutAndRunsAgainWhenTheUserSaysSo) {
  TurnHarness h(FakeUnderstanding::PicksOptions(Projects()), WithPlans());
  h.executors.FailWhen("get_project_details", StepError(/*retryable=*/false), 1);
  RecordingSink audit;
  const std::string plan_id = RunAudit(h, audit);
  const std::string conversation = ConversationOf(audit);
  EXPECT_THAT(audit.Text(), HasSubstr("This did not work: step s1 of the plan"));
  EXPECT_THAT(audit.Text(), HasSubstr("failed: no such project."));
  EXPECT_THAT(audit.Text(), HasSubstr("1. Try again\n2. Cancel")) << "nothing left to skip to";
  EXPECT_FALSE(audit.events.back().done().is_final());
  const FlowState asked = h.LastFlow(conversation);
  ASSERT_TRUE(asked.recovery.has_value());
  EXPECT_EQ(asked.recovery->plan_id, plan_id);
  EXPECT_EQ(asked.recovery->step_id, "s1");

  RecordingSink again;
  ASSERT_TRUE(h.Turn("try again", again, conversation).ok());
  EXPECT_THAT(StepsStarted(again), ElementsAre("s1")) << "the completed steps do not run again";
  EXPECT_EQ(h.executors.assignments().size(), 4u);
  const std::optional<Plan> stored = h.plan_store.Stored(plan_id);
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->status, PlanStatus::kCompleted) << stored->summary;
  EXPECT_THAT(again.Text(), HasSubstr("Done:"));
  EXPECT_TRUE(again.events.back().done().is_final());
  EXPECT_FALSE(h.LastFlow(conversation).recovery.has_value());
}

TEST(TurnPlanRecoveryTest, AStepLeftOutLetsTheStepsThatDependedOnItRun) {
  TurnHarness h(FakeUnderstanding::PicksOptions(Projects()), WithPlans());
  h.executors.FailWhen("create_project", StepError(/*retryable=*/false), 100);
  TurnControl control;
  RecordingSink run;
  const std::string conversation = ApproveProjectPlan(h, control, run);
  EXPECT_THAT(StepsStarted(run), ElementsAre("s1", "s2"));
  EXPECT_THAT(run.Text(), HasSubstr("This did not work: step s2 of the plan"));
  EXPECT_THAT(run.Text(), HasSubstr("1. Try again\n2. Skip it and continue\n3. Cancel"));
  const std::string plan_id = h.LastFlow(conversation).recovery->plan_id;

  RecordingSink skip;
  ASSERT_TRUE(h.Turn("skip it and continue", skip, conversation).ok());
  EXPECT_THAT(StepsStarted(skip), ElementsAre("s3"));
  const Plan stored = *h.plan_store.Stored(plan_id);
  EXPECT_EQ(stored.status, PlanStatus::kCompleted) << stored.summary;
  EXPECT_EQ(stored.FindStep("s2")->status, StepStatus::kSkipped);
  EXPECT_TRUE(LeftOutByUser(*stored.FindStep("s2")));
  EXPECT_THAT(stored.FindStep("s2")->error, HasSubstr("no such project"));
  EXPECT_TRUE(stored.FindStep("s3")->depends_on.empty());
  EXPECT_TRUE(skip.events.back().done().is_final());
}

TEST(TurnPlanRecoveryTest, CancelLeavesTheFailedPlanAsItIs) {
  TurnHarness h(FakeUnderstanding::PicksOptions(Projects()), WithPlans());
  h.executors.FailWhen("get_project_details", StepError(/*retryable=*/false), 1);
  RecordingSink audit;
  const std::string plan_id = RunAudit(h, audit);
  RecordingSink cancel;
  ASSERT_TRUE(h.Turn("cancel", cancel, ConversationOf(audit)).ok());
  EXPECT_TRUE(StepsStarted(cancel).empty());
  EXPECT_EQ(h.executors.assignments().size(), 3u);
  EXPECT_EQ(h.plan_store.Stored(plan_id)->status, PlanStatus::kFailed);
  EXPECT_THAT(cancel.Text(), HasSubstr("OK, I won't try step s1 of the plan"));
  EXPECT_TRUE(cancel.events.back().done().is_final());
}

TEST(TurnPlanTest, ACancelDuringAStepStopsThePlanWhichContinueFinishes) {
  TurnHarness h(Projects(), WithPlans());
  TurnControl control;
  h.executors.OnAssign([&control](const execpb::TaskAssignment& task) {
    if (task.step_id() == "s2") control.Cancel();
  });
  RecordingSink run;
  const std::string conversation = ApproveProjectPlan(h, control, run);
  h.executors.OnAssign(nullptr);
  EXPECT_THAT(StepsStarted(run), ElementsAre("s1", "s2")) << "s3 does not start";
  EXPECT_THAT(run.ErrorCodes(), ElementsAre(pb::CHAT_ERROR_CODE_CANCELLED));
  EXPECT_TRUE(h.errors.errors().empty()) << "a cancel is not a failure";
  ASSERT_TRUE(h.LastFlow(conversation).plan.has_value()) << "the plan waits to go on";

  RecordingSink resumed;
  ASSERT_TRUE(h.Turn("continue", resumed, conversation).ok());
  EXPECT_THAT(StepsStarted(resumed), ElementsAre("s3"));
  EXPECT_THAT(resumed.Text(), HasSubstr("Done:"));
  EXPECT_TRUE(resumed.events.back().done().is_final());
  EXPECT_EQ(h.executors.assignments().size(), 3u) << "each step ran once";
}

TEST(TurnPlanTest, APlanThatRunsOutOfTimeStopsAtItsNextStepAndContinueFinishesIt) {
  TurnOptions options;
  options.turn_timeout = std::chrono::seconds(30);
  TurnHarness h(Projects(), {options, nullptr, true});
  TurnControl control;
  h.executors.OnAssign([&h](const execpb::TaskAssignment& task) {
    if (task.step_id() == "s1") h.clock.Advance(std::chrono::seconds(31));
  });
  RecordingSink run;
  const std::string conversation = ApproveProjectPlan(h, control, run);
  h.executors.OnAssign(nullptr);
  EXPECT_THAT(StepsStarted(run), ElementsAre("s1"));
  EXPECT_THAT(run.ErrorCodes(), ElementsAre(pb::CHAT_ERROR_CODE_TIME_LIMIT));
  ASSERT_FALSE(h.errors.errors().empty());
  EXPECT_EQ(h.errors.errors()[0].kind, "time_limit");
  ASSERT_TRUE(h.LastFlow(conversation).plan.has_value());

  RecordingSink resumed;
  ASSERT_TRUE(h.Turn("continue", resumed, conversation).ok());
  EXPECT_THAT(StepsStarted(resumed), ElementsAre("s2", "s3"));
  EXPECT_TRUE(resumed.events.back().done().is_final());
}

TEST(TurnPlanTest, ANewerMessageDuringAStepSuspendsThePlanWhichContinueFinishes) {
  TurnHarness h(Projects(), WithPlans());
  TurnControl control;
  h.executors.OnAssign([&control](const execpb::TaskAssignment& task) {
    if (task.step_id() == "s2") control.RequestSuspend();
  });
  RecordingSink run;
  const std::string conversation = ApproveProjectPlan(h, control, run);
  h.executors.OnAssign(nullptr);
  EXPECT_THAT(StepsStarted(run), ElementsAre("s1", "s2")) << "s3 does not start";
  EXPECT_THAT(run.States(), Contains(pb::AGENT_STATE_SUSPENDED));
  EXPECT_TRUE(run.ErrorCodes().empty());
  ASSERT_TRUE(control.SuspendedState().has_value());
  const std::string flow_id = run.events.front().session().flow_id();
  EXPECT_EQ(control.SuspendedState()->flow_id, flow_id);

  RecordingSink resumed;
  ASSERT_TRUE(h.Turn("continue", resumed, conversation).ok());
  EXPECT_EQ(resumed.events.front().session().flow_id(), flow_id);
  EXPECT_THAT(StepsStarted(resumed), ElementsAre("s3"));
  EXPECT_TRUE(resumed.events.back().done().is_final()) << resumed.Text();
  EXPECT_EQ(h.executors.assignments().size(), 3u) << "each step ran once";
}

// The state an orchestrator leaves when it stops during a plan: the plan
// running, its first step done, the second not started, no reply stored.
Plan UnfinishedPlan(const std::string& conversation) {
  Plan plan;
  plan.id = core::NewUuid();
  plan.tenant_id = kAlice.tenant_id;
  plan.user_id = kAlice.user_id;
  plan.conversation_id = conversation;
  plan.objective = "Set up the harbor review";
  plan.status = PlanStatus::kRunning;
  plan.writes_approved = true;
  PlanStep first;
  first.id = "s1";
  first.description = "List the agents";
  first.tools = {"list_agents"};
  first.tool_calls = {{"list_agents", json::object()}};
  first.status = StepStatus::kCompleted;
  first.result_summary = "no agents yet";
  first.started_micros = first.finished_micros = 1;
  PlanStep second;
  second.id = "s2";
  second.description = "Create the review agent";
  second.tools = {"create_agent"};
  second.depends_on = {"s1"};
  second.tool_calls = {{"create_agent", {{"name", "harbor-review"}}}};
  plan.steps = {first, second};
  return plan;
}

TEST(TurnPlanTest, ContinueFinishesAnUnfinishedPlanWithoutRepeatingFinishedSteps) {
  TurnHarness h(FakeUnderstanding::Always(intentpb::ACTION_TYPE_CONVERSATION), WithPlans());
  RecordingSink hello;
  ASSERT_TRUE(h.Turn("hello", hello).ok());
  const std::string conversation = ConversationOf(hello);
  const Plan plan = UnfinishedPlan(conversation);
  ASSERT_TRUE(h.plan_store.Create(plan).ok());

  RecordingSink resumed;
  ASSERT_TRUE(h.Turn("continue", resumed, conversation).ok());
  EXPECT_THAT(StepsStarted(resumed), ElementsAre("s2")) << "the finished step is not run again";
  ASSERT_EQ(h.executors.assignments().size(), 1u);
  EXPECT_EQ(h.executors.assignments()[0].tool_calls(0).tool_name(), "create_agent");
  EXPECT_THAT(resumed.Text(), HasSubstr("Done: the plan for \"Set up the harbor review\""));
  EXPECT_THAT(resumed.Text(), HasSubstr("List the agents: no agents yet"));
  EXPECT_TRUE(resumed.events.back().done().is_final());
  EXPECT_EQ(h.plan_store.Stored(plan.id)->status, PlanStatus::kCompleted);

  RecordingSink again;
  ASSERT_TRUE(h.Turn("continue", again, conversation).ok());
  EXPECT_TRUE(StepsStarted(again).empty()) << "a finished plan stays finished";
  EXPECT_EQ(h.executors.assignments().size(), 1u);
}

TEST(TurnPlanTest, AnotherUsersUnfinishedPlanIsNotContinued) {
  TurnHarness h(FakeUnderstanding::Always(intentpb::ACTION_TYPE_CONVERSATION), WithPlans());
  RecordingSink hello;
  ASSERT_TRUE(h.Turn("hello", hello).ok());
  Plan plan = UnfinishedPlan(ConversationOf(hello));
  plan.user_id = kBob.user_id;  // Bob's plan, filed under Alice's conversation
  ASSERT_TRUE(h.plan_store.Create(plan).ok());
  RecordingSink resumed;
  ASSERT_TRUE(h.Turn("continue", resumed, ConversationOf(hello)).ok());
  EXPECT_TRUE(StepsStarted(resumed).empty());
  EXPECT_TRUE(h.executors.assignments().empty());
  EXPECT_EQ(h.plan_store.Stored(plan.id)->status, PlanStatus::kRunning);
}

// A plan step the executor carries out with one call.
json PlannedStep(const std::string& id, const std::string& description, const std::string& tool) {
  return {{"id", id},
          {"description", description},
          {"tools", {tool}},
          {"needs_executor", true},
          {"depends_on", json::array()},
          {"expected_output", ""},
          {"tool_calls", json::array({{{"tool", tool}, {"arguments", json::object()}}})}};
}

// The model asks for a plan the reviewer sends back once with notes; the
// revised plan, approved, runs in the same turn, and every model call of it
// is in the turn's usage.
TEST(TurnPlanTest, AReviewedPlanIsRevisedWithTheReviewersNotesThenRuns) {
  ScriptedModel model;  // the planner, the plan's generator and its reviewer, in turn
  model.PushToolCall("agent_create_plan",
                     {{"objective", "Tidy up my agents"}, {"execution_mode", "agent_review"}});
  model.PushText(json{{"steps", {PlannedStep("s1", "List the agents", "list_agents")}}}.dump());
  model.PushText(json{{"verdict", "needs_changes"}, {"notes", "look at the projects too"}}.dump());
  model.PushText(json{{"steps",
                       {PlannedStep("s1", "List the agents", "list_agents"),
                        PlannedStep("s2", "Find the projects", "search_projects")}}}
                     .dump());
  model.PushText(json{{"verdict", "approved"}, {"notes", "complete"}}.dump());
  model.PushText("Your agents are tidy now.");
  TurnHarness h(FakeUnderstanding::Always(intentpb::ACTION_TYPE_MANAGE_PLATFORM),
                {{}, &model, true, &model});
  h.tools.AddTool("search_projects", execpb::TOOL_RISK_READ);
  model.ReportUsageTo(&h.usage);
  RecordingSink turn;
  ASSERT_TRUE(h.Turn("please tidy up my agents", turn).ok());
  const std::vector<pb::ChatEvent> reviews = turn.Of(pb::ChatEvent::kPlanReview);
  ASSERT_EQ(reviews.size(), 2u);
  EXPECT_EQ(reviews[0].plan_review().verdict(), pb::REVIEW_VERDICT_NEEDS_CHANGES);
  EXPECT_EQ(reviews[0].plan_review().notes(), "look at the projects too");
  EXPECT_EQ(reviews[1].plan_review().verdict(), pb::REVIEW_VERDICT_APPROVED);
  EXPECT_TRUE(turn.Of(pb::ChatEvent::kPlanReadyForReview).empty()) << "the reviewer, not the user";
  EXPECT_EQ(turn.Of(pb::ChatEvent::kStepComplete).size(), 2u) << "the revised plan ran";
  EXPECT_THAT(turn.Text(), HasSubstr("Your agents are tidy now."));
  EXPECT_TRUE(turn.events.back().done().is_final());
  // The planner's two calls, two generations and two reviews.
  EXPECT_EQ(model.requests().size(), 6u);
  EXPECT_EQ(turn.events.back().done().usage().llm_calls(), 6);
  std::map<std::string, int> stored;  // by operation
  for (const testing::UsageRow& row : h.usage.rows()) {
    EXPECT_EQ(row.who.conversation_id, ConversationOf(turn));
    EXPECT_EQ(row.who.execution_mode, "agent_review");
    for (const AttributedCall& call : row.calls) ++stored[call.record.operation_type];
  }
  EXPECT_EQ(stored, (std::map<std::string, int>{
                        {"planner_stream", 2}, {"plan_generation", 2}, {"plan_review", 2}}));
}

// A reviewer that keeps asking for changes has its notes go back to the
// planner model twice (plans.max_review_rounds); the third critique leaves
// the plan to the user, who sees it for review. The turn's usage row says
// the plan's execution mode.
TEST(TurnPlanTest, AReviewersCritiqueGoesBackToThePlannerAtMostTwiceThenTheUserDecides) {
  ScriptedModel model;  // the planner, the plan's generator and its reviewer, in turn
  model.PushToolCall("agent_create_plan",
                     {{"objective", "Tidy up my agents"}, {"execution_mode", "agent_review"}});
  const std::string steps =
      json{{"steps", {PlannedStep("s1", "List the agents", "list_agents")}}}.dump();
  const std::string critique =
      json{{"verdict", "needs_changes"}, {"notes", "look at the paused agents too"}}.dump();
  for (int round = 0; round < 3; ++round) {
    model.PushText(steps);
    model.PushText(critique);
  }
  model.PushText("The reviewer still wants changes: have a look.");
  TurnHarness h(FakeUnderstanding::Always(intentpb::ACTION_TYPE_MANAGE_PLATFORM),
                {{}, &model, true, &model});
  model.ReportUsageTo(&h.usage);
  RecordingSink turn;
  ASSERT_TRUE(h.Turn("please tidy up my agents", turn).ok());
  EXPECT_EQ(turn.Of(pb::ChatEvent::kPlanReview).size(), 3u);
  EXPECT_EQ(turn.Of(pb::ChatEvent::kPlanReadyForReview).size(), 1u);
  EXPECT_TRUE(turn.Of(pb::ChatEvent::kStepStart).empty());
  EXPECT_FALSE(turn.events.back().done().is_final());
  const std::vector<llm::ChatRequest> asked = model.requests();
  ASSERT_EQ(asked.size(), 8u);
  // The second and third generations are revisions with the critique.
  for (size_t revision : {3u, 5u}) {
    EXPECT_THAT(asked[revision].messages.back().content,
                HasSubstr("Revise the plan: look at the paused agents too"));
  }
  ASSERT_EQ(h.usage.rows().size(), 1u);
  EXPECT_EQ(h.usage.rows()[0].who.execution_mode, "agent_review");
}

// The executor's error of a step whose tool failed for good.
execpb::ExecutorError ToolFailedForGood(const std::string& message) {
  execpb::ExecutorError error = StepError(/*retryable=*/false);
  error.set_message(message);
  return error;
}

// A model-made plan whose step is blocked: the assessment's decision
// (REVISE_PLAN) has the generator's model re-plan what did not complete with
// the assessment in its context; the new steps run, the completed one does
// not run again, and the model sums up a plan that is complete after all.
TEST(TurnPlanTest, ABlockedStepIsRePlannedWithItsAssessmentAndThePlanGoesOn) {
  ScriptedModel model;  // the planner and the plan's generator, in turn
  model.PushToolCall("agent_create_plan",
                     {{"objective", "Find my projects"}, {"execution_mode", "auto_execute"}});
  // One after another, so that the steps start in a known order.
  json searched = PlannedStep("s2", "Search the projects", "search_projects");
  searched["depends_on"] = json::array({"s1"});
  json summed = PlannedStep("s3", "Sum up the projects found", "list_agents");
  summed["depends_on"] = json::array({"s2"});
  model.PushText(
      json{{"steps", {PlannedStep("s1", "List the agents", "list_agents"), searched, summed}}}
          .dump());
  json listed = PlannedStep("s5", "Sum up the projects listed", "list_agents");
  listed["depends_on"] = json::array({"s4"});
  model.PushText(json{
      {"steps",
       {PlannedStep("s1", "List the agents", "list_agents"),
        PlannedStep("s4", "List the projects", "list_projects"),
        listed}}}.dump());
  model.PushText("Here are your projects.");
  TurnHarness h(FakeUnderstanding::Always(intentpb::ACTION_TYPE_MANAGE_PLATFORM),
                {{}, &model, true});
  h.tools.AddTool("search_projects", execpb::TOOL_RISK_READ);
  h.tools.AddTool("list_projects", execpb::TOOL_RISK_READ);
  h.executors.FailWhen("search_projects",
                       ToolFailedForGood("search_projects failed: the search index is down"), 100);
  RecordingSink turn;
  ASSERT_TRUE(h.Turn("find my projects", turn).ok());

  EXPECT_THAT(StepsStarted(turn), ElementsAre("s1", "s2", "s4", "s5"));
  std::map<std::string, pb::Assessment> assessed;
  for (const pb::ChatEvent& e : turn.Of(pb::ChatEvent::kStepComplete)) {
    assessed[e.step_complete().step_id()] = e.step_complete().assessment();
  }
  EXPECT_EQ(assessed["s2"].verdict(), pb::ASSESSMENT_VERDICT_BLOCKED);
  EXPECT_THAT(assessed["s2"].reasons(),
              Contains("search_projects failed: the search index is down"));
  EXPECT_EQ(assessed["s3"].verdict(), pb::ASSESSMENT_VERDICT_BLOCKED) << "not run: s2 failed";
  EXPECT_EQ(assessed["s5"].verdict(), pb::ASSESSMENT_VERDICT_COMPLETE);
  std::vector<std::string> decisions;
  for (const pb::ChatEvent& e : turn.Of(pb::ChatEvent::kExecutorMessage)) {
    if (e.executor_message().sender() == pb::DIALOGUE_PARTY_PLANNER &&
        e.executor_message().kind() != "task_assignment") {
      decisions.push_back(e.executor_message().kind());
    }
  }
  EXPECT_THAT(decisions, ElementsAre("revise_plan"));
  EXPECT_EQ(turn.Of(pb::ChatEvent::kPlanCreated).size(), 2u) << "the re-planned steps shown";

  // The generator's model re-planned with the assessment in its context.
  const std::vector<llm::ChatRequest> asked = model.requests();
  ASSERT_EQ(asked.size(), 4u);
  const std::string revision = asked[2].messages.back().content;
  EXPECT_THAT(revision, HasSubstr("was assessed blocked"));
  EXPECT_THAT(revision, HasSubstr("Step s2 (Search the projects) failed: search_projects failed: "
                                  "the search index is down"));
  EXPECT_THAT(revision, HasSubstr("Context box: BLOCKERS: step s2 failed; PROGRESS: s1: "));
  EXPECT_THAT(revision, HasSubstr("Steps s1 completed"));
  // The planner read the plan's assessment in its tool result.
  EXPECT_THAT(asked[3].messages.back().content, HasSubstr("\"assessment\""));

  const std::string plan_id =
      turn.Of(pb::ChatEvent::kPlanCreated)[0].plan_created().plan().plan_id();
  const Plan stored = *h.plan_store.Stored(plan_id);
  EXPECT_EQ(stored.status, PlanStatus::kCompleted) << stored.summary;
  EXPECT_THAT(stored.summary, HasSubstr("Re-planned 1 time"));
  EXPECT_EQ(stored.FindStep("s1")->attempts, 1) << "the completed step did not run again";
  EXPECT_EQ(stored.FindStep("s2"), nullptr);
  EXPECT_EQ(turn.events.back().done().assessment().verdict(), pb::ASSESSMENT_VERDICT_COMPLETE);
  EXPECT_THAT(turn.Text(), HasSubstr("Here are your projects."));
}

// A step that stays blocked is re-planned twice, then the plan stops with
// the reasons.
TEST(TurnPlanTest, AStepStillBlockedAfterTwoRePlansStopsThePlan) {
  ScriptedModel model;
  model.PushToolCall("agent_create_plan",
                     {{"objective", "Find my projects"}, {"execution_mode", "auto_execute"}});
  for (int i = 0; i < 3; ++i) {
    model.PushText(
        json{{"steps",
              {PlannedStep("s" + std::to_string(i + 1), "Search the projects", "search_projects")}}}
            .dump());
  }
  model.PushText("The search is down; I could not find your projects.");
  TurnHarness h(FakeUnderstanding::Always(intentpb::ACTION_TYPE_MANAGE_PLATFORM),
                {{}, &model, true});
  h.tools.AddTool("search_projects", execpb::TOOL_RISK_READ);
  h.executors.FailWhen("search_projects",
                       ToolFailedForGood("search_projects failed: the search index is down"), 100);
  RecordingSink turn;
  ASSERT_TRUE(h.Turn("find my projects", turn).ok());
  EXPECT_THAT(StepsStarted(turn), ElementsAre("s1", "s2", "s3"));
  std::vector<std::string> decisions;
  for (const pb::ChatEvent& e : turn.Of(pb::ChatEvent::kExecutorMessage)) {
    const std::string& kind = e.executor_message().kind();
    if (kind == "revise_plan" || kind == "exit" || kind == "continue") decisions.push_back(kind);
  }
  EXPECT_THAT(decisions, ElementsAre("revise_plan", "revise_plan", "exit"));
  const std::string plan_id =
      turn.Of(pb::ChatEvent::kPlanCreated)[0].plan_created().plan().plan_id();
  const Plan stored = *h.plan_store.Stored(plan_id);
  EXPECT_EQ(stored.status, PlanStatus::kFailed);
  EXPECT_THAT(stored.summary, HasSubstr("Re-planned 2 times"));
  EXPECT_THAT(stored.summary, HasSubstr("Stopped: still blocked after 2 re-plans"));
  EXPECT_EQ(turn.events.back().done().assessment().verdict(), pb::ASSESSMENT_VERDICT_BLOCKED);
  // The re-plans could not go on: the user is asked about the step.
  EXPECT_THAT(turn.Text(), HasSubstr("This did not work: step s3 of the plan (Search the projects) "
                                     "failed: search_projects failed: the search index is down."));
  EXPECT_FALSE(turn.events.back().done().is_final());
}

// What the turn relies on from every plan store, held by the fake as by
// PgPlanStore (storage tests check the latter).
TEST(FakePlanStoreTest, PlansAreTheirOwnersAndUpdatesKeepTheirPreconditions) {
  FakePlanStore store;
  Plan plan = UnfinishedPlan(core::NewUuid());
  plan.status = PlanStatus::kPendingReview;
  ASSERT_TRUE(store.Create(plan).ok());
  EXPECT_TRUE(store.Get(kAlice, plan.id).ok());
  EXPECT_EQ(store.Get(kBob, plan.id).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store.Get(kAlice, "not-a-uuid").status().code(), absl::StatusCode::kNotFound);

  Plan approved = plan;
  approved.status = PlanStatus::kApproved;
  EXPECT_EQ(store.Update(approved, {PlanStatus::kDraft}).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store.Stored(plan.id)->status, PlanStatus::kPendingReview) << "nothing changed";
  ASSERT_TRUE(store.Update(approved, {PlanStatus::kPendingReview}).ok());
  EXPECT_EQ(*store.LatestUnfinished(kAlice, plan.conversation_id), plan.id);
  EXPECT_FALSE(store.LatestUnfinished(kBob, plan.conversation_id)->has_value());
  Plan bobs = approved;
  bobs.user_id = kBob.user_id;
  EXPECT_EQ(store.Update(bobs, {PlanStatus::kApproved}).code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace omniforge::orchestrator
