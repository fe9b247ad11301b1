// The reply reader (reply.h): what a message does to what waits for it,
// on hand-made pending contexts and analyses. No model, no server.
#include "services/intent/src/reply.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace omniforge::intent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const std::vector<CatalogItem> kAgents = {
    {"alpha-reports", "Sends reports"}, {"beta-digest", "Digests"}, {"alpha-reports-2", "Another"}};

PendingActionRef DeleteOf(const std::string& agent, const std::string& id = "action-1") {
  return {id, "delete_agent", "delete '" + agent + "'.", {agent}, {{"agent", agent}}};
}

IntentRequest Request(std::string message, std::vector<PendingActionRef> actions = {},
                      std::vector<CatalogItem> agents = kAgents) {
  IntentRequest request;
  request.message = std::move(message);
  request.agents = std::move(agents);
  request.pending.actions = std::move(actions);
  return request;
}

IntentAnalysis Analysis(Reference reference = Reference::kNone,
                        std::map<std::string, std::string> entities = {}) {
  IntentAnalysis analysis;
  analysis.reference = reference;
  analysis.entities = std::move(entities);
  return analysis;
}

ReplyKind KindOf(const std::string& message, const IntentAnalysis& analysis = Analysis(),
                 std::vector<PendingActionRef> actions = {DeleteOf("alpha-reports")}) {
  return ReadReply(Request(message, std::move(actions)), analysis).kind;
}

TEST(ReplyTest, AReplyNamingAnotherTargetOrAddingAConditionIsNeverAnApproval) {
  const IntentAnalysis confirmation = Analysis(Reference::kConfirmation);
  for (const char* edit :
       {"ok but delete beta-digest instead", "yes, delete beta-digest", "ok, beta-digest",
        "no, delete beta-digest instead", "yes but only if it failed", "yes, but make it weekly",
        "ok delete alpha-reports-2", "sure, but not today"}) {
    EXPECT_EQ(KindOf(edit, confirmation), ReplyKind::kEdit) << edit;
  }
  EXPECT_EQ(KindOf("yes, the second one", confirmation), ReplyKind::kEdit);
  // The analysis's agent carries the flow's agent from earlier turns: a
  // plain yes is still a yes.
  EXPECT_EQ(
      KindOf("yes, do that", Analysis(Reference::kConfirmation, {{"agent_name", "beta-digest"}})),
      ReplyKind::kApprove);
  // A setting the action does not have is a change, and says what changes.
  const ReplyDecision weekly =
      ReadReply(Request("yes, every friday", {DeleteOf("alpha-reports")}),
                Analysis(Reference::kConfirmation, {{"schedule", "every friday"}}));
  EXPECT_EQ(weekly.kind, ReplyKind::kEdit);
  EXPECT_THAT(weekly.fields.at("schedule"), HasSubstr("friday"));
  // The flow's settings the analysis carries from earlier turns are no
  // change: a plain yes stays a yes.
  EXPECT_EQ(KindOf("yes", Analysis(Reference::kConfirmation, {{"data_source", "notion"}})),
            ReplyKind::kApprove);
  const ReplyDecision other = ReadReply(
      Request("ok but delete beta-digest instead", {DeleteOf("alpha-reports")}), Analysis());
  EXPECT_EQ(other.fields.at("agent"), "beta-digest");
}

TEST(ReplyTest, ConfirmationsApproveDeclinesDropQuestionsLeaveItPending) {
  for (const char* yes : {"yes", "ok", "go ahead", "yes, delete alpha-reports", "do it",
                          "Please execute the proposed plan", "approve", "Yes please."}) {
    EXPECT_EQ(KindOf(yes), ReplyKind::kApprove) << yes;
  }
  for (const char* no : {"no", "cancel", "never mind", "don't", "stop"}) {
    EXPECT_EQ(KindOf(no), ReplyKind::kReject) << no;
  }
  for (const char* other :
       {"what does beta-digest do?", "how many runs did it have?", "what does it do?"}) {
    EXPECT_EQ(KindOf(other), ReplyKind::kNewRequest) << other;
  }
  EXPECT_NE(KindOf("tell me a joke"), ReplyKind::kApprove);
  EXPECT_NE(KindOf("tell me a joke"), ReplyKind::kReject);
  IntentAnalysis recap;
  recap.summary_worthy = true;
  EXPECT_EQ(KindOf("where were we?", recap), ReplyKind::kRecap);
}

TEST(ReplyTest, OnlyAReplyThatSaysNothingButYesApproves) {
  for (const char* not_yes :
       {"I'll do it myself", "undo it", "do that tomorrow", "ok wait", "fine, I'll think about it",
        "rerun it later", "explain the plan", "the plan looks wrong", "nice try"}) {
    EXPECT_NE(KindOf(not_yes), ReplyKind::kApprove) << not_yes;
    EXPECT_NE(KindOf(not_yes, Analysis(Reference::kConfirmation)), ReplyKind::kApprove)
        << not_yes << " (a confirmation read in the analysis is not enough either)";
    IntentRequest review = Request(not_yes);
    review.pending.plan = PlanStage::kReview;
    EXPECT_NE(ReadReply(review, Analysis()).kind, ReplyKind::kApprove) << not_yes;
  }
  for (const char* yes : {"yes, go ahead and delete alpha-reports", "ok, delete it", "yes please",
                          "Sure, run it now", "go ahead"}) {
    EXPECT_EQ(KindOf(yes), ReplyKind::kApprove) << yes;
  }
}

TEST(ReplyTest, AShorterOrForeignNameIsAnotherTarget) {
  const std::vector<CatalogItem> agents = {
      {"alpha", ""}, {"alpha-2", ""}, {"日報", ""}, {"週報", ""}};
  auto kind = [&agents](const std::string& message, const std::string& target) {
    return ReadReply(Request(message, {DeleteOf(target)}, agents), Analysis()).kind;
  };
  EXPECT_EQ(kind("yes, delete alpha", "alpha-2"), ReplyKind::kEdit);
  EXPECT_EQ(kind("yes, delete alpha-2", "alpha-2"), ReplyKind::kApprove);
  EXPECT_EQ(kind("yes, 週報", "日報"), ReplyKind::kEdit);
  EXPECT_EQ(kind("yes, 日報", "日報"), ReplyKind::kApprove);
  EXPECT_THAT(NamedAgents("delete alpha-2 and 日報", agents), ElementsAre("alpha-2", "日報"));
}

TEST(ReplyTest, NamingOneOfSeveralPendingActionsApprovesThatOneOnly) {
  const ReplyDecision one = ReadReply(
      Request("yes, delete beta-digest",
              {DeleteOf("alpha-reports", "action-1"), DeleteOf("beta-digest", "action-2")}),
      Analysis());
  EXPECT_EQ(one.kind, ReplyKind::kApprove);
  EXPECT_THAT(one.action_ids, ElementsAre("action-2"));
  const ReplyDecision all = ReadReply(
      Request("yes", {DeleteOf("alpha-reports", "action-1"), DeleteOf("beta-digest", "action-2")}),
      Analysis());
  EXPECT_THAT(all.action_ids, IsEmpty());
}

TEST(ReplyTest, ACorrectionEditsWithTheCorrectedValue) {
  const ReplyDecision fixed =
      ReadReply(Request("sorry, I meant the March report", {DeleteOf("alpha-reports")}),
                Analysis(Reference::kCorrection, {{"corrected_value", "the March report"}}));
  EXPECT_EQ(fixed.kind, ReplyKind::kEdit);
  EXPECT_EQ(fixed.fields.at("corrected_value"), "the March report");
}

ReplyKind PlanKind(const std::string& message, PlanStage stage) {
  IntentRequest request = Request(message);
  request.pending.plan = stage;
  return ReadReply(request, Analysis()).kind;
}

TEST(ReplyTest, PlanReviewRepliesFollowTheSameRule) {
  for (const char* yes : {"looks good, run it", "yes", "ok go ahead", "LGTM", "sounds good!",
                          "approve", "perfect, do it", "Please execute the proposed plan"}) {
    EXPECT_EQ(PlanKind(yes, PlanStage::kReview), ReplyKind::kApprove) << yes;
  }
  for (const char* no : {"cancel", "no", "never mind", "don't run it", "drop it", "reject"}) {
    EXPECT_EQ(PlanKind(no, PlanStage::kReview), ReplyKind::kReject) << no;
  }
  for (const char* change : {"add a milestone first", "looks good but remove step 2",
                             "call the project Apollo instead", "yes, but make it weekly"}) {
    EXPECT_EQ(PlanKind(change, PlanStage::kReview), ReplyKind::kEdit) << change;
  }
  EXPECT_EQ(PlanKind("what does step 2 do?", PlanStage::kReview), ReplyKind::kNewRequest);
  EXPECT_EQ(PlanKind("use the marketing template", PlanStage::kReview), ReplyKind::kNewRequest);
}

TEST(ReplyTest, APlanStepsQuestionIsAnsweredUnlessTheUserAsksOrDrops) {
  EXPECT_EQ(PlanKind("the Q3 budget sheet", PlanStage::kWaitingOnUser), ReplyKind::kAnswer);
  EXPECT_EQ(PlanKind("yes, that one", PlanStage::kWaitingOnUser), ReplyKind::kAnswer);
  EXPECT_EQ(PlanKind("which sheets are there?", PlanStage::kWaitingOnUser), ReplyKind::kNewRequest);
  EXPECT_EQ(PlanKind("cancel", PlanStage::kWaitingOnUser), ReplyKind::kReject);
  EXPECT_EQ(PlanKind("continue", PlanStage::kRunning), ReplyKind::kResume);
  EXPECT_EQ(PlanKind("list my agents", PlanStage::kRunning), ReplyKind::kNewRequest);
}

TEST(ReplyTest, ResumeWordsInAShortMessageResume) {
  for (const char* message : {"continue", "continue what you were doing", "go on with that",
                              "resume", "ok, carry on", "let's get back to that"}) {
    EXPECT_TRUE(AsksToResume(message)) << message;
    IntentRequest request = Request(message);
    request.pending.resumable_goal = "draft a weekly sales digest";
    EXPECT_EQ(ReadReply(request, Analysis()).kind, ReplyKind::kResume) << message;
    // With nothing waiting the reader still says so: the caller knows
    // whether anything can be resumed.
    EXPECT_EQ(ReadReply(Request(message), Analysis()).kind, ReplyKind::kResume) << message;
  }
  for (const char* message :
       {"list my agents", "delete invoice-chaser", "yes", "make it run continuously",
        "pick up the logs from yesterday", "get back to me about the budget",
        "continue the weekly report every monday and also send it to the whole sales team"}) {
    EXPECT_FALSE(AsksToResume(message)) << message;
  }
  // A resume of the flow set aside comes before the actions waiting.
  IntentRequest both = Request("continue", {DeleteOf("alpha-reports")});
  both.pending.resumable_goal = "draft a weekly sales digest";
  EXPECT_EQ(ReadReply(both, Analysis()).kind, ReplyKind::kResume);
  both.pending.resumable_goal.clear();
  EXPECT_EQ(ReadReply(both, Analysis()).kind, ReplyKind::kApprove);
}

ReplyDecision Answer(const std::string& message, QuestionKind kind,
                     std::vector<std::string> options = {},
                     const IntentAnalysis& analysis = Analysis()) {
  IntentRequest request = Request(message);
  request.pending.question = kind;
  request.pending.options = std::move(options);
  return ReadReply(request, analysis);
}

TEST(ReplyTest, AnAnswerToWhichAgentPicksByPositionOrName) {
  const ReplyDecision second =
      Answer("the second one", QuestionKind::kAgent, {"beta-digest", "alpha-reports"});
  EXPECT_EQ(second.kind, ReplyKind::kAnswer);
  EXPECT_EQ(second.fields.at("agent_name"), "alpha-reports");
  // Without a list in the question: the user's agents in order.
  EXPECT_EQ(Answer("the first", QuestionKind::kAgent).fields.at("agent_name"), "alpha-reports");
  const ReplyDecision named =
      Answer("beta-digest, every friday at 5pm", QuestionKind::kAgent, {"alpha-reports"});
  EXPECT_EQ(named.fields.at("agent_name"), "beta-digest");
  EXPECT_EQ(named.fields.count("schedule"), 1u);
  // One that settles nothing is still the answer (asked again), or a recap.
  const ReplyDecision nothing = Answer("hmm not sure", QuestionKind::kAgent);
  EXPECT_EQ(nothing.kind, ReplyKind::kAnswer);
  EXPECT_THAT(nothing.fields, IsEmpty());
  IntentAnalysis recap;
  recap.summary_worthy = true;
  EXPECT_EQ(Answer("where were we?", QuestionKind::kAgent, {}, recap).kind, ReplyKind::kRecap);
}

TEST(ReplyTest, AnOptionIsPickedByItsNumberAndWordsAreARequestOfTheirOwn) {
  const std::vector<std::string> options = {"run it anyway", "create a new agent",
                                            "change the agent"};
  EXPECT_EQ(Answer("the first one", QuestionKind::kOption, options).option, 1);
  EXPECT_EQ(Answer("2", QuestionKind::kOption, options).option, 2);
  EXPECT_EQ(Answer("the third one", QuestionKind::kOption, options).option, 3);
  EXPECT_EQ(Answer("the third one", QuestionKind::kOption, options).kind, ReplyKind::kAnswer);
  IntentAnalysis create;
  create.action = Action::kCreateAgent;
  const ReplyDecision words =
      Answer("make a new one that does both", QuestionKind::kOption, options, create);
  EXPECT_EQ(words.kind, ReplyKind::kNewRequest);
  EXPECT_EQ(words.option, 0);
}

TEST(ReplyTest, AnOptionIsPickedByItsWords) {
  const std::vector<std::string> options = {"try again", "skip it and continue",
                                            "use another agent", "cancel"};
  EXPECT_EQ(Answer("try again", QuestionKind::kOption, options).option, 1);
  EXPECT_EQ(Answer("please try it again", QuestionKind::kOption, options).option, 1);
  EXPECT_EQ(Answer("skip it", QuestionKind::kOption, options).option, 2);
  EXPECT_EQ(Answer("use another agent", QuestionKind::kOption, options).option, 3);
  EXPECT_EQ(Answer("cancel", QuestionKind::kOption, options).option, 4);
  EXPECT_EQ(Answer("the second one", QuestionKind::kOption, options).option, 2);
  // Two options named, or none: no pick.
  EXPECT_EQ(Answer("try again or cancel", QuestionKind::kOption, options).option, 0);
  EXPECT_EQ(Answer("hmm", QuestionKind::kOption, options).option, 0);
  // A first word alone counts in a short reply only.
  EXPECT_EQ(
      Answer("i would rather you skip over the weekly digest part", QuestionKind::kOption, options)
          .option,
      0);
}

TEST(ReplyTest, NothingPendingIsANewRequestOrARecap) {
  EXPECT_EQ(ReadReply(Request("list my agents"), Analysis()).kind, ReplyKind::kNewRequest);
  EXPECT_EQ(ReadReply(Request("yes"), Analysis()).kind, ReplyKind::kNewRequest);
}

}  // namespace
}  // namespace omniforge::intent
