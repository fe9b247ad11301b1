// The local policy's answers that read the whole conversation or the whole
// request: the recap ("where were we?"), a request of two parts that one
// agent covers in part (options), and the intent service's clarify-or-
// proceed decision (its question and candidates).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "services/orchestrator/planner/local_policy.h"
#include "services/orchestrator/planner/partial_fit.h"
#include "services/orchestrator/planner/recap.h"

namespace omniforge::orchestrator {
namespace {

namespace intentpb = ::omniforge::intent::v1;
namespace execpb = ::omniforge::executor::v1;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

const std::vector<AgentInfo> kAgents = {
    {"weekly-sales-digest", "Emails the sales team the deals closed each week", "active", ""},
    {"invoice-chaser", "Reminds customers about overdue invoices", "active", ""}};

intentpb::IntentAnalysis RecapAsked() {
  intentpb::IntentAnalysis analysis;
  analysis.set_action_type(intentpb::ACTION_TYPE_CONVERSATION);
  analysis.set_summary_worthy(true);
  analysis.set_reference(intentpb::REFERENCE_KIND_RECAP);
  return analysis;
}

// The intent service's reading of a request of several parts: each part
// with the agent it names, or "" for none.
void AddParts(intentpb::IntentAnalysis& intent,
              const std::vector<std::pair<std::string, std::string>>& parts) {
  for (const auto& [text, agent] : parts) {
    intentpb::RequestPart* part = intent.add_parts();
    part->set_text(text);
    part->set_agent_name(agent);
  }
}

// "can one of my agents chase the overdue invoices and also post a weekly
// summary to slack?" as the intent service reads it.
intentpb::IntentAnalysis TwoPartRequest() {
  intentpb::IntentAnalysis intent;
  intent.set_action_type(intentpb::ACTION_TYPE_EXECUTE_TASK);
  AddParts(intent, {{"chase the overdue invoices", "invoice-chaser"},
                    {"post a weekly summary to slack", ""}});
  (*intent.mutable_entities())["purpose"] =
      "can one of my agents chase the overdue invoices and also post a weekly summary to slack";
  (*intent.mutable_entities())["suggested_name"] = "chase-overdue-invoices";
  return intent;
}

HistoryTurn User(const std::string& words) { return HistoryTurn{true, words}; }
HistoryTurn Assistant(const std::string& words, std::vector<std::string> tools = {},
                      bool routed = true) {
  HistoryTurn turn{false, words, routed};
  turn.tools_used = std::move(tools);
  return turn;
}

PolicyInput RecapInput(std::vector<HistoryTurn> history, std::optional<FlowState> last) {
  PolicyInput in{RecapAsked(), "where were we?", std::move(last), kAgents};
  in.history = std::move(history);
  return in;
}

TEST(RecapTest, NamesTheGoalWhatWasDoneAndTheActionThatStillWaits) {
  FlowState last;
  last.flow_id = "flow-2";
  last.status = FlowStatus::kWaiting;
  last.pending = {PendingAction{"action-1",
                                "run_agent",
                                {{"agent", "monday-notion-updates"}},
                                execpb::TOOL_RISK_WRITE,
                                "run 'monday-notion-updates' now."}};
  const PolicyInput in = RecapInput(
      {User("our Monday Notion updates take hours - can you help?"),
       Assistant("I can set up an agent for that. Here is the draft: ..."), User("yes, do that"),
       Assistant("Done: the agent 'monday-notion-updates' is created and runs every monday at 9am.",
                 {"create_agent"}),
       User("run it now"),
       Assistant("Ready to run 'monday-notion-updates' now. Shall I go ahead?")},
      last);
  const Move move = DecideLocally(in);
  EXPECT_THAT(move.reply, HasSubstr("our Monday Notion updates take hours"));
  EXPECT_THAT(move.reply,
              HasSubstr("Done so far:\n- the agent 'monday-notion-updates' is created and runs "
                        "every monday at 9am"));
  EXPECT_THAT(move.reply, HasSubstr("Still open:\n- waiting for your approval: run "
                                    "'monday-notion-updates' now"));
  EXPECT_THAT(move.reply, HasSubstr("Shall I go ahead?"));
  ASSERT_EQ(move.propose.size(), 1u) << "the action still waits";
  EXPECT_EQ(move.propose[0].action_id, "action-1");
}

TEST(RecapTest, ReadsPlainTextTurnsAndAnUnansweredQuestion) {
  // Stored without routing (another client, an import): the words alone.
  const PolicyInput in = RecapInput(
      {User("we lose track of overdue invoices"),
       Assistant("Done: 'invoice-chaser' ran (succeeded).", {}, /*routed=*/false),
       Assistant("OK, I won't delete 'invoice-chaser' and its whole run history. Nothing was "
                 "changed. What would you like to do instead?",
                 {}, /*routed=*/false),
       User("hmm"), Assistant("Who should get the reminders?", {}, /*routed=*/false)},
      std::nullopt);
  const Recap recap = MakeRecap(in);
  EXPECT_EQ(recap.goal, "we lose track of overdue invoices");
  EXPECT_THAT(recap.done,
              ElementsAre("'invoice-chaser' ran (succeeded)",
                          "you called off: delete 'invoice-chaser' and its whole run history "
                          "(nothing was changed)"));
  EXPECT_THAT(recap.open,
              ElementsAre("my question is not answered yet: \"Who should get the reminders?\""));
}

TEST(RecapTest, AReplyWhoseWordsSayNothingDoneIsReadFromItsRouting) {
  HistoryTurn paused =
      Assistant("All set, it will stay quiet until you say so.", {"get_agent", "pause_agent"});
  paused.entities["agent_name"] = "weekly-sales-digest";
  HistoryTurn greeting = Assistant("Hi! What would you like to get done?");
  greeting.action_type = intentpb::ACTION_TYPE_CONVERSATION;
  const Recap recap = MakeRecap(RecapInput(
      {User("hi"), greeting, User("pause the sales digest for now"), paused}, std::nullopt));
  EXPECT_EQ(recap.goal, "pause the sales digest for now") << "small talk is no goal";
  EXPECT_THAT(recap.done, ElementsAre("pause agent 'weekly-sales-digest'"));
  EXPECT_TRUE(recap.open.empty());
}

TEST(RecapTest, KeepsTheQuestionOpenAndSaysWhatWasSetAside) {
  FlowState last;
  last.flow_id = "flow-3";
  last.clarifications = 1;
  last.asked = kAskedAgent;
  last.action_type = intentpb::ACTION_TYPE_EXECUTE_TASK;
  last.listed_agents = {"weekly-sales-digest", "invoice-chaser"};
  last.suspended_flow = SuspendedFlow{"flow-1", "audit the website project"};
  const PolicyInput in = RecapInput(
      {User("run one of my agents"),
       Assistant("Which agent should I run?\n1. weekly-sales-digest\n2. invoice-chaser")},
      last);
  const Move move = DecideLocally(in);
  EXPECT_THAT(move.reply, HasSubstr("my question is not answered yet: \"Which agent should I "
                                    "run?\""));
  EXPECT_THAT(move.reply, HasSubstr("set aside for a newer message: \"audit the website "
                                    "project\""));
  EXPECT_THAT(move.reply, HasSubstr("Nothing has been done yet."));
  // "the second one" still answers the question after the recap.
  EXPECT_TRUE(move.clarifying);
  EXPECT_EQ(move.asked, kAskedAgent);
  EXPECT_EQ(move.listed_agents, last.listed_agents);
}

TEST(RecapTest, AConversationThatHasJustStartedSaysSo) {
  const Move move = DecideLocally(RecapInput({}, std::nullopt));
  EXPECT_THAT(move.reply, HasSubstr("only just started"));
  EXPECT_TRUE(move.propose.empty());
}

TEST(PartialFitTest, OffersRunAnywayANewAgentOrAChangeNamingWhatFitsAndWhatNot) {
  const std::string message =
      "can one of my agents chase the overdue invoices and also post a weekly summary to slack?";
  const Move move = DecideLocally({TwoPartRequest(), message, std::nullopt, kAgents});
  EXPECT_TRUE(move.propose.empty()) << "nothing is drafted before the user picks";
  EXPECT_TRUE(move.clarifying);
  EXPECT_EQ(move.asked, kAskedOption);
  EXPECT_THAT(move.reply, HasSubstr("'invoice-chaser' partly fits: it covers \"chase the overdue "
                                    "invoices\" (it reminds customers about overdue invoices), "
                                    "but not \"post a weekly summary to slack\""));
  EXPECT_THAT(move.reply, HasSubstr("1. Run 'invoice-chaser' anyway"));
  EXPECT_THAT(move.reply, HasSubstr("2. Create a new agent that does both"));
  EXPECT_THAT(move.reply, HasSubstr("3. Change 'invoice-chaser' so that it also does this: post "
                                    "a weekly summary to slack"));
  EXPECT_THAT(move.reply, Not(HasSubstr("weekly-sales-digest")));
}

TEST(PartialFitTest, AnOptionPickedByNumberBecomesItsDraft) {
  const std::string message =
      "can one of my agents chase the overdue invoices and also post a weekly summary to slack?";
  const Move offered = DecideLocally({TwoPartRequest(), message, std::nullopt, kAgents});
  FlowState last;
  last.flow_id = "flow-1";
  last.goal = message;
  last.clarifications = 1;
  last.asked = offered.asked;
  last.action_type = offered.action_type;
  last.entities = offered.entities;
  ASSERT_TRUE(AnswerSkipsAnalysis(last));

  // The intent service is told the three options, and reads the answer's
  // number (services/intent/src/reply.h).
  EXPECT_EQ(PendingQuestionOf(last).kind(), intentpb::QUESTION_KIND_OPTION);
  EXPECT_EQ(PendingQuestionOf(last).options_size(), 3);
  auto answer = [&](int option) {
    intentpb::ReplyDecision reply;
    reply.set_kind(intentpb::REPLY_KIND_ANSWER);
    reply.set_option(option);
    bool settles = false;
    const intentpb::IntentAnalysis analysis = AnalysisOfAnswer(last, reply, &settles);
    EXPECT_TRUE(settles) << option;
    PolicyInput in{analysis, "option " + std::to_string(option), last, kAgents};
    in.goal = message;
    return DecideLocally(in);
  };
  const Move run = answer(1);
  ASSERT_EQ(run.propose.size(), 1u);
  EXPECT_EQ(run.propose[0].tool, "run_agent");
  EXPECT_EQ(run.propose[0].arguments["agent"], "invoice-chaser");

  const Move both = answer(2);
  ASSERT_EQ(both.propose.size(), 1u);
  EXPECT_EQ(both.propose[0].tool, "create_agent");
  EXPECT_THAT(both.propose[0].arguments["description"].get<std::string>(),
              HasSubstr("Chase the overdue invoices and post a weekly summary to slack"));
  EXPECT_EQ(both.propose[0].arguments["name"], "chase-overdue-invoices")
      << "named after the request the options were offered for";

  const Move change = answer(3);
  ASSERT_EQ(change.propose.size(), 1u);
  EXPECT_EQ(change.propose[0].tool, "update_agent");
  EXPECT_EQ(change.propose[0].arguments["description"],
            "Reminds customers about overdue invoices. Also: post a weekly summary to slack.");

  // Words, not a number ("make a new one that does both"): a request of
  // its own, which the intent service analyses.
  intentpb::ReplyDecision words;
  words.set_kind(intentpb::REPLY_KIND_NEW_REQUEST);
  bool settles = true;
  AnalysisOfAnswer(last, words, &settles);
  EXPECT_FALSE(settles);
  intentpb::ReplyDecision fourth;
  fourth.set_kind(intentpb::REPLY_KIND_ANSWER);
  fourth.set_option(4);
  AnalysisOfAnswer(last, fourth, &settles);
  EXPECT_FALSE(settles) << "there is no fourth option";
}

TEST(PartialFitTest, AnOptionsEntityCarriedIntoALaterRequestIsIgnored) {
  intentpb::IntentAnalysis intent;
  intent.set_action_type(intentpb::ACTION_TYPE_CREATE_AGENT);
  (*intent.mutable_entities())[kRequestedTask] = "chase the overdue invoices and post a summary";
  (*intent.mutable_entities())["purpose"] = "set up an agent that tidies the shared drive";
  (*intent.mutable_entities())["suggested_name"] = "tidies-shared-drive";
  FlowState last;
  last.flow_id = "flow-9";
  const Move move =
      DecideLocally({intent, "set up an agent that tidies the shared drive", last, kAgents});
  ASSERT_EQ(move.propose.size(), 1u);
  EXPECT_THAT(move.propose[0].arguments["description"].get<std::string>(),
              HasSubstr("tidies the shared drive"));
}

TEST(PartialFitTest, NoOptionsWhenOneAgentCoversItAllOrTheRequestHasOnePart) {
  const auto fit = [](const std::vector<std::pair<std::string, std::string>>& parts) {
    intentpb::IntentAnalysis intent;
    AddParts(intent, parts);
    return FindPartialFit(intent, kAgents);
  };
  EXPECT_EQ(fit({}), std::nullopt) << "one part: the intent service gives none";
  EXPECT_EQ(fit({{"chase the overdue invoices", "invoice-chaser"},
                 {"remind the invoice customers", "invoice-chaser"}}),
            std::nullopt);
  EXPECT_EQ(fit({{"chase the overdue invoices", "invoice-chaser"},
                 {"send the sales numbers", "weekly-sales-digest"}}),
            std::nullopt)
      << "the agents cover it between them";
  EXPECT_EQ(fit({{"chase the overdue invoices", "ghost-agent"}, {"post it to slack", ""}}),
            std::nullopt)
      << "an agent the user does not have covers nothing";
  const std::optional<PartialFit> vague =
      fit({{"chases late invoices", "invoice-chaser"}, {"posts a summary to slack", ""}});
  ASSERT_TRUE(vague.has_value());
  EXPECT_EQ(vague->agent.name, "invoice-chaser");
  EXPECT_THAT(vague->covered, ElementsAre("chases late invoices"));
  EXPECT_THAT(vague->uncovered, ElementsAre("posts a summary to slack"));
  // Three parts: one covered, one another agent covers, one nobody does.
  const std::string three =
      "chase the overdue invoices, and send the sales numbers and also post a summary to slack";
  intentpb::IntentAnalysis intent;
  intent.set_action_type(intentpb::ACTION_TYPE_EXECUTE_TASK);
  AddParts(intent, {{"chase the overdue invoices", "invoice-chaser"},
                    {"send the sales numbers", "weekly-sales-digest"},
                    {"post a summary to slack", ""}});
  const std::optional<PartialFit> three_parts = FindPartialFit(intent, kAgents);
  ASSERT_TRUE(three_parts.has_value());
  const Move move = OfferPartialFit({intent, three, std::nullopt, kAgents}, *three_parts);
  EXPECT_THAT(move.reply, HasSubstr("'invoice-chaser' covers \"chase the overdue invoices\". None "
                                    "of your agents does the rest."));
  EXPECT_THAT(move.reply, HasSubstr("2. Create a new agent that does all of it"));
}

TEST(PartialFitTest, AReplyToAWaitingDraftIsNoRequestOfItsOwn) {
  std::vector<AgentInfo> agents = kAgents;
  agents.push_back({"monday-notion-updates", "Sums up the Monday Notion updates", "active", ""});
  FlowState last;
  last.flow_id = "flow-1";
  last.pending = {PendingAction{"action-1",
                                "create_agent",
                                {{"name", "monday-notion-updates-2"}},
                                execpb::TOOL_RISK_WRITE,
                                "a new agent."}};
  intentpb::IntentAnalysis intent;
  intent.set_action_type(intentpb::ACTION_TYPE_CREATE_AGENT);
  (*intent.mutable_entities())["agent_name"] = "monday-notion-updates";
  const Move move = DecideLocally(
      {intent, "make it run every monday at 9am and send it to the team channel", last, agents});
  EXPECT_NE(move.asked, kAskedOption);
  ASSERT_EQ(move.propose.size(), 1u);
  EXPECT_EQ(move.propose[0].tool, "create_agent");
}

TEST(ClarificationTest, TheIntentsQuestionIsAskedWithItsCandidatesAsOptions) {
  intentpb::IntentAnalysis intent;
  intent.set_action_type(intentpb::ACTION_TYPE_EXECUTE_TASK);
  intent.set_is_ambiguous(true);
  intent.set_clarifying_question("Which report do you mean, and who should get it?");
  intent.mutable_clarification()->set_needed(true);
  intent.mutable_clarification()->add_missing(intentpb::MISSING_SLOT_OBJECT);
  intent.mutable_clarification()->add_missing(intentpb::MISSING_SLOT_RECIPIENT);
  intent.mutable_clarification()->add_candidates("weekly-sales-digest");
  const Move move = DecideLocally({intent, "send the report", std::nullopt, kAgents});
  EXPECT_TRUE(move.clarifying);
  EXPECT_TRUE(move.propose.empty());
  EXPECT_EQ(move.reply,
            "Which report do you mean, and who should get it?\n1. weekly-sales-digest — Emails "
            "the sales team the deals closed each week");
  EXPECT_THAT(move.listed_agents, ElementsAre("weekly-sales-digest"));
  EXPECT_EQ(move.asked, kAskedIntent) << "the answer names more than an agent: it is analysed";
}

TEST(ClarificationTest, WithoutAQuestionTheMissingSlotsAreNamed) {
  intentpb::IntentAnalysis intent;
  intent.set_action_type(intentpb::ACTION_TYPE_CREATE_AGENT);
  intent.mutable_clarification()->set_needed(true);
  intent.mutable_clarification()->add_missing(intentpb::MISSING_SLOT_PURPOSE);
  const Move move = DecideLocally({intent, "set up the usual thing", std::nullopt, kAgents});
  EXPECT_TRUE(move.propose.empty()) << "no draft while its purpose is missing";
  EXPECT_EQ(move.reply, "Before I act, tell me what it should do.");
}

}  // namespace
}  // namespace omniforge::orchestrator
