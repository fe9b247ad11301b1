// The assessment of a step, a plan or a turn (plans/assessment.h): each
// part's weight, the verdict's boundaries, the reasons in words, the next
// move with its iteration cap; and the evidence read from plan steps and
// plans (plans/plan_assessment.h), as the reply shows it.
#include "services/orchestrator/plans/assessment.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "services/orchestrator/plans/plan_assessment.h"
#include "services/orchestrator/plans/plan_model.h"

namespace omniforge::orchestrator {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

Evidence Perfect() { return {}; }

// Everything asked for is there, the request was understood with
// `confidence`: only clarity loses points (20 × confidence).
Evidence UnderstoodWith(double confidence) {
  Evidence e;
  e.intent_confidence = confidence;
  return e;
}

TEST(Assess, NothingAskedAndNothingFailedIsComplete) {
  const Assessment a = Assess(Perfect());
  EXPECT_EQ(a.score, 100);
  EXPECT_EQ(a.verdict, Verdict::kComplete);
  EXPECT_THAT(a.reasons, IsEmpty());
  EXPECT_EQ(a.parts.data, 40);
  EXPECT_EQ(a.parts.entities, 20);
  EXPECT_EQ(a.parts.tools, 20);
  EXPECT_EQ(a.parts.clarity, 20);
}

TEST(Assess, DataWeighsFortyAndAPartialOutputCountsHalf) {
  Evidence e;
  e.outputs = {{"the project brief", Presence::kFound}, {"the launch date", Presence::kMissing}};
  Assessment a = Assess(e);
  EXPECT_EQ(a.parts.data, 20);
  EXPECT_EQ(a.score, 80);
  EXPECT_EQ(a.verdict, Verdict::kPartial);
  EXPECT_THAT(a.reasons, ElementsAre("no result for: the launch date"));

  e.outputs = {{"the project brief", Presence::kPartial}};
  a = Assess(e);
  EXPECT_EQ(a.parts.data, 20);
  EXPECT_THAT(a.reasons, ElementsAre("only part of: the project brief"));

  e.outputs = {{"the project brief", Presence::kMissing}};
  EXPECT_EQ(Assess(e).score, 60);
}

TEST(Assess, EntitiesWeighTwenty) {
  Evidence e;
  e.entities = {{"Acme", Presence::kFound},
                {"Globex", Presence::kMissing},
                {"Initech", Presence::kMissing},
                {"Umbrella", Presence::kFound}};
  const Assessment a = Assess(e);
  EXPECT_EQ(a.parts.entities, 10);
  EXPECT_EQ(a.score, 90);
  EXPECT_EQ(a.verdict, Verdict::kComplete) << "entities alone cannot block";
  EXPECT_THAT(a.reasons, ElementsAre("nothing found about: Globex, Initech"));
}

TEST(Assess, ToolsWeighTwentyBySuccessTimesTheExecutorsConfidence) {
  Evidence e;
  e.work = {{"", 4, 1, "", std::nullopt}};
  Assessment a = Assess(e);
  EXPECT_EQ(a.parts.tools, 15);
  EXPECT_THAT(a.reasons, ElementsAre("1 of 4 tool calls failed"));

  e.work = {{"", 2, 0, "", 0.5}};
  a = Assess(e);
  EXPECT_EQ(a.parts.tools, 10);
  EXPECT_THAT(a.reasons, ElementsAre("the executor was 50% sure of its result"));

  e.work = {{"step 2", 3, 0, "create_project failed: the name is taken", 1.0}};
  a = Assess(e);
  EXPECT_EQ(a.parts.tools, 0) << "work that failed scores nothing, whatever its calls";
  EXPECT_THAT(a.reasons, ElementsAre("step 2: create_project failed: the name is taken"));

  // Several pieces of work: their mean.
  e.work = {{"step 1", 1, 0, "", 1.0}, {"step 2", 0, 0, "it timed out", std::nullopt}};
  EXPECT_EQ(Assess(e).parts.tools, 10);
}

TEST(Assess, ClarityWeighsTwenty) {
  Assessment a = Assess(UnderstoodWith(0.5));
  EXPECT_EQ(a.parts.clarity, 10);
  EXPECT_THAT(a.reasons, ElementsAre("the request was understood with 50% confidence"));

  Evidence ambiguous = UnderstoodWith(0.9);
  ambiguous.ambiguous = true;
  a = Assess(ambiguous);
  EXPECT_EQ(a.parts.clarity, 10) << "an ambiguous request keeps at most half";
  EXPECT_THAT(a.reasons, ElementsAre("the request could be read more than one way"));

  Evidence asked;
  asked.open_questions = {"Which marketing project?"};
  a = Assess(asked);
  EXPECT_EQ(a.parts.clarity, 0);
  EXPECT_THAT(a.reasons, ElementsAre("waiting for your answer: Which marketing project?"));
}

TEST(Assess, APartThatLostNoPointGivesNoReason) {
  // 0.98 rounds to the full 20 points: nothing to explain.
  EXPECT_THAT(Assess(UnderstoodWith(0.98)).reasons, IsEmpty());
}

TEST(Assess, TheVerdictsBoundariesAreFiftyAndNinety) {
  EXPECT_EQ(VerdictFor(100), Verdict::kComplete);
  EXPECT_EQ(VerdictFor(90), Verdict::kComplete);
  EXPECT_EQ(VerdictFor(89), Verdict::kPartial);
  EXPECT_EQ(VerdictFor(50), Verdict::kPartial);
  EXPECT_EQ(VerdictFor(49), Verdict::kBlocked);
  EXPECT_EQ(VerdictFor(0), Verdict::kBlocked);

  // The same from evidence: clarity 10 or 9, with and without the data.
  Assessment a = Assess(UnderstoodWith(0.5));
  EXPECT_EQ(a.score, 90);
  EXPECT_EQ(a.verdict, Verdict::kComplete);
  a = Assess(UnderstoodWith(0.45));
  EXPECT_EQ(a.score, 89);
  EXPECT_EQ(a.verdict, Verdict::kPartial);

  Evidence no_data = UnderstoodWith(0.5);
  no_data.outputs = {{"the report", Presence::kMissing}};
  a = Assess(no_data);
  EXPECT_EQ(a.score, 50);
  EXPECT_EQ(a.verdict, Verdict::kPartial);
  no_data.intent_confidence = 0.45;
  a = Assess(no_data);
  EXPECT_EQ(a.score, 49);
  EXPECT_EQ(a.verdict, Verdict::kBlocked);
}

TEST(Assess, ReasonsFollowThePartsThenTheExecutorsOwnLimitations) {
  Evidence e;
  e.outputs = {{"the report", Presence::kMissing}};
  e.entities = {{"Acme", Presence::kMissing}};
  e.work = {{"", 2, 1, "", std::nullopt}};
  e.open_questions = {"Which Acme?"};
  e.limitations = {"hiring was read as Hiring 2027"};
  const Assessment a = Assess(e);
  EXPECT_EQ(a.score, 0 + 0 + 10 + 0);
  EXPECT_EQ(a.verdict, Verdict::kBlocked);
  EXPECT_THAT(a.reasons,
              ElementsAre("no result for: the report", "nothing found about: Acme",
                          "1 of 2 tool calls failed", "waiting for your answer: Which Acme?",
                          "hiring was read as Hiring 2027"));

  // The executor's limitations are told even when nothing lost a point.
  Evidence said;
  said.limitations = {"only the first 50 tasks were read"};
  const Assessment complete = Assess(said);
  EXPECT_EQ(complete.verdict, Verdict::kComplete);
  EXPECT_THAT(complete.reasons, ElementsAre("only the first 50 tasks were read"));
}

TEST(Assess, ManyReasonsAreCappedWithACount) {
  Evidence e;
  for (int i = 0; i < 12; ++i)
    e.outputs.push_back({"output " + std::to_string(i), Presence::kMissing});
  const Assessment a = Assess(e);
  ASSERT_EQ(a.reasons.size(), kMaxReasons);
  EXPECT_EQ(a.reasons.back(), "and 5 more");
}

TEST(Decide, AQuestionForTheUserExits) {
  Evidence asked;
  asked.open_questions = {"Which project?"};
  const Decision d = Decide(Assess(asked), {1, 0, true});
  EXPECT_EQ(d.move, NextMove::kExit);
  EXPECT_THAT(d.reason, HasSubstr("Which project?"));
}

TEST(Decide, TheTenthIterationIsTheLast) {
  const Assessment fine = Assess(Perfect());
  EXPECT_EQ(Decide(fine, {9, 0, true}).move, NextMove::kContinue);
  const Decision capped = Decide(fine, {10, 0, true});
  EXPECT_EQ(capped.move, NextMove::kExit);
  EXPECT_THAT(capped.reason, HasSubstr("limit of 10 iterations"));
  EXPECT_EQ(Decide(fine, {3, 0, true}, /*max_iterations=*/3).move, NextMove::kExit);
  // Blocked work is not re-planned past the cap either.
  Evidence failed;
  failed.outputs = {{"the report", Presence::kMissing}};
  failed.work = {{"", 1, 1, "", std::nullopt}};
  EXPECT_EQ(Decide(Assess(failed), {10, 0, true}).move, NextMove::kExit);
}

TEST(Decide, BlockedWorkIsRePlannedTwiceThenGivenUp) {
  Evidence failed;
  failed.outputs = {{"the report", Presence::kMissing}};
  failed.work = {{"", 0, 0, "the executor's dialogue ended without a result", std::nullopt}};
  const Assessment blocked = Assess(failed);
  ASSERT_EQ(blocked.verdict, Verdict::kBlocked);
  Decision d = Decide(blocked, {1, 0, true});
  EXPECT_EQ(d.move, NextMove::kRevisePlan);
  EXPECT_THAT(d.reason, HasSubstr("no result for: the report"));
  EXPECT_EQ(Decide(blocked, {2, 1, false}).move, NextMove::kRevisePlan);
  d = Decide(blocked, {3, kMaxRevisions, true});
  EXPECT_EQ(d.move, NextMove::kExit);
  EXPECT_THAT(d.reason, HasSubstr("still blocked after 2 re-plans"));
}

TEST(Decide, CompleteOrPartialWorkGoesOnWhileWorkIsLeft) {
  Evidence partial;
  partial.outputs = {{"a", Presence::kFound}, {"b", Presence::kPartial}};
  partial.intent_confidence = 0.5;
  const Assessment a = Assess(partial);
  ASSERT_EQ(a.verdict, Verdict::kPartial);
  EXPECT_EQ(Decide(a, {1, 0, true}).move, NextMove::kContinue);
  const Decision done = Decide(a, {1, 0, false});
  EXPECT_EQ(done.move, NextMove::kExit);
  EXPECT_THAT(done.reason, HasSubstr("done"));
  EXPECT_EQ(Decide(Assess(Perfect()), {4, 0, true}).move, NextMove::kContinue);
}

// PARTIAL work with an output missing altogether could still be done: it
// is re-planned once, whether or not work is left, and only while no
// re-plan was made; then it goes on or is done as any partial work. A
// merely partial output, or low confidence, is not re-planned.
TEST(Decide, PartialWorkMissingAnOutputIsRePlannedOnce) {
  Evidence missing;
  missing.outputs = {{"a", Presence::kFound}, {"the blocked tasks", Presence::kMissing}};
  const Assessment a = Assess(missing);
  ASSERT_EQ(a.verdict, Verdict::kPartial);
  EXPECT_TRUE(MissesAnOutput(a));
  const Decision revise = Decide(a, {1, 0, false});
  EXPECT_EQ(revise.move, NextMove::kRevisePlan);
  EXPECT_THAT(revise.reason, HasSubstr("partial (score 80): no result for: the blocked tasks"));
  EXPECT_EQ(Decide(a, {1, 0, true}).move, NextMove::kRevisePlan);
  EXPECT_EQ(Decide(a, {2, 1, false}).move, NextMove::kExit) << "once only";
  EXPECT_EQ(Decide(a, {2, 1, true}).move, NextMove::kContinue);
  EXPECT_EQ(Decide(a, {kMaxIterations, 0, false}).move, NextMove::kExit) << "not past the cap";

  Evidence unsure;
  unsure.work = {{"", 1, 0, "", 0.2}};
  unsure.intent_confidence = 0.5;
  const Assessment b = Assess(unsure);
  ASSERT_EQ(b.verdict, Verdict::kPartial);
  EXPECT_FALSE(MissesAnOutput(b));
  EXPECT_EQ(Decide(b, {1, 0, false}).move, NextMove::kExit);
}

// What each move asks of a model planner is the platform's own words.
TEST(Decide, EachMoveIsWordedForThePlanner) {
  EXPECT_THAT(WordsForThePlanner(NextMove::kContinue), HasSubstr("go on"));
  EXPECT_THAT(WordsForThePlanner(NextMove::kRevisePlan), HasSubstr("another approach"));
  EXPECT_THAT(WordsForThePlanner(NextMove::kExit), HasSubstr("no more tool calls"));
}

TEST(AssessmentJson, RoundTripsWithItsEvidence) {
  Evidence e;
  e.outputs = {{"the brief", Presence::kPartial}};
  e.entities = {{"Acme", Presence::kFound}};
  e.work = {{"step 1", 3, 1, "", 0.7}, {"step 2", 0, 0, "it failed", std::nullopt}};
  e.intent_confidence = 0.8;
  e.ambiguous = true;
  e.open_questions = {"Which one?"};
  e.limitations = {"read only 50"};
  const Assessment a = Assess(e);
  const std::optional<Assessment> back = AssessmentFromJson(AssessmentToJson(a));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->score, a.score);
  EXPECT_EQ(back->verdict, a.verdict);
  EXPECT_EQ(back->reasons, a.reasons);
  EXPECT_EQ(back->parts.tools, a.parts.tools);
  EXPECT_EQ(AssessmentToJson(*back), AssessmentToJson(a));
  EXPECT_EQ(Assess(back->evidence).score, a.score) << "the evidence alone gives the same score";

  EXPECT_FALSE(AssessmentFromJson(nullptr).has_value());
  EXPECT_FALSE(AssessmentFromJson({{"verdict", "great"}}).has_value());
  const auto lenient = AssessmentFromJson(
      {{"verdict", "partial"}, {"score", "high"}, {"reasons", {1, "kept"}}, {"evidence", 7}});
  ASSERT_TRUE(lenient.has_value());
  EXPECT_EQ(lenient->score, 0);
  EXPECT_THAT(lenient->reasons, ElementsAre("kept"));
}

// Plans and steps.

Plan TwoStepPlan() {
  Plan plan;
  plan.id = "p1";
  plan.objective = "Audit the Acme project";
  plan.priority_entities = {"Acme"};
  PlanStep details;
  details.id = "s1";
  details.description = "Read the Acme project's details";
  details.expected_output = "the project's details";
  PlanStep blocked;
  blocked.id = "s2";
  blocked.description = "List the blocked tasks";
  blocked.expected_output = "the blocked tasks";
  plan.steps = {details, blocked};
  return plan;
}

void Finish(Plan& plan, PlanStep& step, nlohmann::json result, const ExecutorReport& report,
            const RequestClarity& clarity = {}) {
  step.status = StepStatus::kCompleted;
  step.attempts = 1;
  step.result = std::move(result);
  step.result_summary = "done";
  step.assessment = Assess(StepEvidence(plan, step, report, clarity));
}

TEST(StepEvidence, AStepWithDataIsCompleteAndOneWithoutIsNot) {
  Plan plan = TwoStepPlan();
  ExecutorReport report;
  report.tool_calls = 1;
  report.confidence = 1.0;
  Finish(plan, plan.steps[0], {{"project", {{"name", "Acme"}}}}, report);
  const Assessment& a = *plan.steps[0].assessment;
  EXPECT_EQ(a.score, 100);
  ASSERT_EQ(a.evidence.entities.size(), 1u) << "the step names Acme: it is asked of it";
  EXPECT_EQ(a.evidence.entities[0].presence, Presence::kFound);

  Finish(plan, plan.steps[1], nlohmann::json::object(), report);
  const Assessment& empty = *plan.steps[1].assessment;
  EXPECT_THAT(empty.evidence.entities, IsEmpty()) << "this step does not name Acme";
  EXPECT_EQ(empty.score, 60);
  EXPECT_THAT(empty.reasons, ElementsAre("no result for: the blocked tasks"));
}

TEST(StepEvidence, APartialTaskAndTheExecutorsWordsCount) {
  Plan plan = TwoStepPlan();
  ExecutorReport report;
  report.partial = true;
  report.tool_calls = 3;
  report.failed_calls = 1;
  report.confidence = 0.6;
  report.limitations = {"the archive was not searched"};
  Finish(plan, plan.steps[1], {{"tasks", {"t1"}}}, report, {0.5, false});
  const Assessment& a = *plan.steps[1].assessment;
  EXPECT_EQ(a.parts.data, 20);
  EXPECT_EQ(a.parts.tools, 8);  // 2/3 × 0.6 × 20
  EXPECT_EQ(a.parts.clarity, 10);
  EXPECT_EQ(a.score, 58);
  EXPECT_EQ(a.verdict, Verdict::kPartial);
  EXPECT_THAT(a.reasons, ElementsAre("only part of: the blocked tasks", "1 of 3 tool calls failed",
                                     "the executor was 60% sure of its result",
                                     "the request was understood with 50% confidence",
                                     "the archive was not searched"));
}

TEST(StepEvidence, AFailedStepIsBlockedWithItsError) {
  Plan plan = TwoStepPlan();
  PlanStep& step = plan.steps[0];
  step.status = StepStatus::kFailed;
  step.attempts = 1;
  step.error = "get_project failed: the service is down";
  ExecutorReport report;
  report.tool_calls = 1;
  report.failed_calls = 1;
  const Assessment a = Assess(StepEvidence(plan, step, report, {}));
  EXPECT_EQ(a.score, 20);  // only clarity is left
  EXPECT_EQ(a.verdict, Verdict::kBlocked);
  EXPECT_THAT(a.reasons,
              ElementsAre("no result for: the project's details", "nothing found about: Acme",
                          "get_project failed: the service is down"));
}

TEST(PlanEvidence, IsBuiltFromTheStepsWithTheirLabels) {
  Plan plan = TwoStepPlan();
  ExecutorReport sure;
  sure.tool_calls = 1;
  sure.confidence = 1.0;
  ExecutorReport unsure = sure;
  unsure.confidence = 0.5;
  unsure.limitations = {"only open tasks were read"};
  Finish(plan, plan.steps[0], {{"project", "Acme"}}, sure, {0.9, false});
  Finish(plan, plan.steps[1], {{"tasks", nlohmann::json::array({"t1"})}}, unsure, {0.9, false});
  const Assessment a = AssessPlan(plan);
  EXPECT_EQ(a.parts.data, 40);
  EXPECT_EQ(a.parts.entities, 20);
  EXPECT_EQ(a.parts.tools, 15);  // mean of 1 and 0.5
  EXPECT_EQ(a.parts.clarity, 18);
  EXPECT_EQ(a.score, 93);
  EXPECT_THAT(a.reasons, ElementsAre("step 2: the executor was 50% sure of its result",
                                     "the request was understood with 90% confidence",
                                     "step 2: only open tasks were read"));
}

TEST(PlanEvidence, RequestedOutputsAreJudgedByTheStepsThatMentionThem) {
  Plan plan = TwoStepPlan();
  plan.requested_outputs = {"a list of blocked tasks", "a risk summary for the board"};
  ExecutorReport report;
  Finish(plan, plan.steps[0], {{"project", "Acme"}}, report);
  plan.steps[1].status = StepStatus::kFailed;
  plan.steps[1].attempts = 1;
  plan.steps[1].error = "list_tasks failed";
  plan.steps[1].assessment = Assess(StepEvidence(plan, plan.steps[1], report, {}));
  plan.status = PlanStatus::kFailed;
  const Evidence e = PlanEvidence(plan);
  ASSERT_EQ(e.outputs.size(), 2u);
  EXPECT_EQ(e.outputs[0].presence, Presence::kMissing) << "the step that lists them failed";
  EXPECT_EQ(e.outputs[1].presence, Presence::kPartial) << "no step names it: half the steps did";
  const Assessment a = Assess(e);
  EXPECT_EQ(a.parts.data, 10);
  EXPECT_EQ(a.parts.tools, 10);
  EXPECT_EQ(a.verdict, Verdict::kPartial);
  EXPECT_THAT(a.reasons, ElementsAre("no result for: a list of blocked tasks",
                                     "only part of: a risk summary for the board",
                                     "step 2: list_tasks failed"));
}

TEST(PlanEvidence, AQuestionTheUserHasNotAnsweredIsOpen) {
  Plan plan = TwoStepPlan();
  plan.status = PlanStatus::kWaitingOnUser;
  plan.pending_question = PendingQuestion{"s1", "Which Acme project?", {}};
  const Evidence e = PlanEvidence(plan);
  EXPECT_THAT(e.open_questions, ElementsAre("Which Acme project?"));
  EXPECT_THAT(e.work, IsEmpty()) << "no step ran yet";
  EXPECT_EQ(Decide(Assess(e), {1, 0, true}).move, NextMove::kExit);
}

TEST(PlanReply, ADonePlanWithLimitationsSaysSo) {
  Plan plan = TwoStepPlan();
  ExecutorReport sure;
  sure.confidence = 1.0;
  Finish(plan, plan.steps[0], {{"project", "Acme"}}, sure);
  Finish(plan, plan.steps[1], {{"tasks", nlohmann::json::array({"t1"})}}, sure);
  plan.status = PlanStatus::kCompleted;
  EXPECT_THAT(PlanReplyText(plan), HasSubstr("Done: the plan for \"Audit the Acme project\"."));

  ExecutorReport partial = sure;
  partial.partial = true;
  partial.limitations = {"only open tasks were read."};
  Finish(plan, plan.steps[1], {{"tasks", nlohmann::json::array({"t1"})}}, partial);
  ExecutorReport unsure = sure;
  unsure.confidence = 0.2;
  Finish(plan, plan.steps[0], {{"project", "Acme"}}, unsure);
  const std::string text = PlanReplyText(plan);
  EXPECT_THAT(text, HasSubstr("Done, with 3 limitations: only part of: the blocked tasks; "
                              "step 1: the executor was 20% sure of its result; "
                              "step 2: only open tasks were read. "
                              "The plan for \"Audit the Acme project\" scored 82/100."));
  EXPECT_THAT(text, HasSubstr("2. List the blocked tasks: done"));
}

TEST(PlanReply, TheAssessmentGoesOutAsThePublicType) {
  Evidence e;
  e.outputs = {{"x", Presence::kMissing}};
  const auto proto = ToProto(Assess(e));
  EXPECT_EQ(proto.score(), 60);
  EXPECT_EQ(proto.verdict(), ::omniforge::orchestrator::v1::ASSESSMENT_VERDICT_PARTIAL);
  EXPECT_THAT(proto.reasons(), ElementsAre("no result for: x"));
}

}  // namespace
}  // namespace omniforge::orchestrator

namespace omniforge::orchestrator {
namespace {

// A tool call's result read for the assessment: an error is missing and
// failed with its words; empty data is missing; an executor's result says
// partial, its confidence and its limitations; a plan's result is judged
// by its own assessment.
TEST(CallEvidence, ACallsResultSaysWhatItHolds) {
  const CallOutcome failed =
      ReadCallOutcome("list_runs", R"({"error":"the runs service is down"})", true);
  EXPECT_TRUE(failed.failed);
  EXPECT_EQ(failed.output, Presence::kMissing);
  EXPECT_EQ(failed.failure, "the runs service is down");

  EXPECT_EQ(ReadCallOutcome("list_runs", R"({"runs":[{"id":"r1"}]})", false).output,
            Presence::kFound);
  EXPECT_EQ(ReadCallOutcome("list_runs", "[]", false).output, Presence::kMissing);
  EXPECT_EQ(ReadCallOutcome("list_runs", "not json", false).output, Presence::kFound);

  const CallOutcome partial = ReadCallOutcome(
      "notion_search",
      R"j({"domain":"notion","status":"partial","data":{"pages":[1]},"confidence":0.6,)j"
      R"j("limitations":["more results exist than were returned (nextCursor)"]})j",
      false);
  EXPECT_EQ(partial.output, Presence::kPartial);
  EXPECT_EQ(partial.confidence, 0.6);
  EXPECT_THAT(partial.limitations,
              ElementsAre("more results exist than were returned (nextCursor)"));
  EXPECT_EQ(
      ReadCallOutcome("notion_search",
                      R"({"domain":"notion","status":"success","data":[],"confidence":1})", false)
          .output,
      Presence::kMissing);

  const CallOutcome plan = ReadCallOutcome(
      "agent_create_plan",
      R"({"plan_id":"p1","status":"failed","assessment":{"score":30,"verdict":"blocked",)"
      R"("reasons":["step 2: search_projects failed"]}})",
      false);
  EXPECT_EQ(plan.output, Presence::kMissing);
  EXPECT_EQ(plan.failure, "the plan was blocked (score 30)");
  EXPECT_THAT(plan.limitations, ElementsAre("step 2: search_projects failed"));
}

// The calls' evidence: each call an output and a piece of work labelled
// with its tool, the executor's words labelled too, the request's clarity.
TEST(CallEvidence, CallsAreAssessedEachByItsTool) {
  std::vector<CallOutcome> calls = {
      ReadCallOutcome("list_agents", R"({"agents":[{"name":"a"}]})", false),
      ReadCallOutcome("list_runs", R"({"error":"the runs service is down"})", true)};
  RequestClarity clarity;
  clarity.confidence = 0.9;
  const Assessment a = Assess(CallsEvidence(calls, clarity));
  EXPECT_EQ(a.parts.data, 20);
  EXPECT_EQ(a.parts.tools, 10);
  EXPECT_EQ(a.parts.clarity, 18);
  EXPECT_EQ(a.verdict, Verdict::kPartial);
  EXPECT_THAT(a.reasons, ElementsAre("no result for: the result of list_runs",
                                     "list_runs: the runs service is down",
                                     "the request was understood with 90% confidence"));
  EXPECT_EQ(Decide(a, {1, 0, true}).move, NextMove::kRevisePlan);

  calls = {ReadCallOutcome("notion_search",
                           R"({"status":"success","data":{"x":1},"confidence":0.5,)"
                           R"("limitations":["2 pages were private"]})",
                           false)};
  const Assessment unsure = Assess(CallsEvidence(calls, {}));
  EXPECT_THAT(unsure.reasons, ElementsAre("notion_search: the executor was 50% sure of its result",
                                          "notion_search: 2 pages were private"));
}

}  // namespace
}  // namespace omniforge::orchestrator
