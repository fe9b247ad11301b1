// What an action acts on, read from the message's words for a caller with
// no model of its own: the topic of a question, the lifecycle operation,
// thanks or a greeting, a draft's purpose and name, and the parts of a
// request of several with the agent each names (action_details.h,
// request_parts.h).
#include "services/intent/src/action_details.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "libs/words/tokens.h"
#include "services/intent/src/request_parts.h"

namespace omniforge::intent {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::vector<std::string> W(std::string_view message) {
  return words::Tokens(message, words::Tokenizer::kAsciiAlnum);
}

const std::vector<CatalogItem> kAgents = {
    {"weekly-sales-digest", "Emails the sales team the deals closed each week"},
    {"invoice-chaser", "Reminds customers about overdue invoices"}};

TEST(QueryTopicTest, RunsFirstThenTheAgentNamedThenWhatTheWordsAskFor) {
  EXPECT_EQ(QueryTopic(W("did invoice-chaser fail last night?"), true), "runs");
  EXPECT_EQ(QueryTopic(W("show me the run history"), false), "runs");
  EXPECT_EQ(QueryTopic(W("how are my agents running?"), false), "agents")
      << "the agents as a whole, even with runs";
  EXPECT_EQ(QueryTopic(W("how is invoice-chaser doing"), true), "agent");
  EXPECT_EQ(QueryTopic(W("what skills does invoice-chaser use"), true), "agent");
  EXPECT_EQ(QueryTopic(W("list all skills"), true), "skills") << "a list asked for";
  EXPECT_EQ(QueryTopic(W("which skills are there?"), false), "skills");
  EXPECT_EQ(QueryTopic(W("show my projects"), false), "projects");
  EXPECT_EQ(QueryTopic(W("any project templates?"), false), "projects")
      << "projects come before templates";
  EXPECT_EQ(QueryTopic(W("what templates can I use"), false), "templates");
  EXPECT_EQ(QueryTopic(W("what agents do I have"), false), "agents");
  EXPECT_EQ(QueryTopic(W("list them all"), true), "agents");
  EXPECT_EQ(QueryTopic(W("how is it going?"), false), "agent")
      << "nothing said: the agent in play, the caller's to know";
}

TEST(LifecycleOperationTest, DeleteOutranksResumeAndResumeOutranksPause) {
  EXPECT_EQ(LifecycleOperation(W("delete invoice-chaser")), "delete");
  EXPECT_EQ(LifecycleOperation(W("please remove the digest")), "delete");
  EXPECT_EQ(LifecycleOperation(W("stop it and then trash it")), "delete");
  EXPECT_EQ(LifecycleOperation(W("unpause the digest")), "resume");
  EXPECT_EQ(LifecycleOperation(W("re-enable it")), "resume");
  EXPECT_EQ(LifecycleOperation(W("pause invoice-chaser for now")), "pause");
  EXPECT_EQ(LifecycleOperation(W("Mute the alerts")), "pause");
  EXPECT_EQ(LifecycleOperation(W("who has access to the workspace")), "other");
}

TEST(SmallTalkTest, ThanksOrAGreeting) {
  for (const char* thanks : {"thanks!", "Thank you so much", "thx", "cheers mate"}) {
    EXPECT_EQ(SmallTalk(W(thanks)), "thanks") << thanks;
  }
  for (const char* other : {"hello", "good morning", "nope that's all"}) {
    EXPECT_EQ(SmallTalk(W(other)), "greeting") << other;
  }
}

TEST(DraftTest, ThePurposeLeavesOutAClosingRequestForHelp) {
  EXPECT_EQ(DraftPurpose("our Monday Notion updates take hours - can you help?"),
            "our Monday Notion updates take hours");
  EXPECT_EQ(DraftPurpose("our Monday Notion updates take hours \xE2\x80\x94 can you help?"),
            "our Monday Notion updates take hours");
  EXPECT_EQ(DraftPurpose("invoices pile up, any ideas?"), "invoices pile up");
  EXPECT_EQ(DraftPurpose("can you help me chase invoices?"), "can you help me chase invoices")
      << "only a closing request";
  EXPECT_EQ(DraftPurpose("?!"), "?!");
}

TEST(DraftTest, SuggestedNamesAreShortAndSkipTheFrame) {
  EXPECT_EQ(SuggestedName("our weekly sales reports are always late"), "weekly-sales-reports");
  EXPECT_EQ(SuggestedName("our Monday Notion updates take hours"), "monday-notion-updates");
  EXPECT_EQ(SuggestedName("help me please"), "assistant-agent");
  EXPECT_EQ(SuggestedName("chase 3 invoices"), "chase-invoices-agent");
  EXPECT_EQ(SuggestedName("can one of my agents chase the overdue invoices and also post a "
                          "weekly summary to slack?"),
            "chase-overdue-invoices");
}

TEST(RequestPartsTest, SplitsARequestIntoItsPartsWithoutItsFrame) {
  EXPECT_THAT(RequestParts("can one of my agents chase the overdue invoices and also post a "
                           "weekly summary to slack?"),
              ElementsAre("chase the overdue invoices", "post a weekly summary to slack"));
  EXPECT_THAT(RequestParts("could you remind customers about invoices and payments"),
              ElementsAre("remind customers about invoices and payments"));
  EXPECT_THAT(RequestParts("run the sales digest"), ElementsAre("run the sales digest"));
  EXPECT_THAT(RequestParts("chase the overdue invoices, and send the sales numbers and also post a "
                           "summary to slack"),
              ElementsAre("chase the overdue invoices", "send the sales numbers",
                          "post a summary to slack"));
}

TEST(RequestPartsTest, EachPartNamesTheAgentThatCoversIt) {
  const auto agents_of = [](std::string_view message) {
    std::vector<std::string> named;
    for (const RequestPart& part : PartsWithAgents(message, kAgents)) {
      named.push_back(part.agent_name);
    }
    return named;
  };
  EXPECT_THAT(PartsWithAgents("run the invoice chaser", kAgents), IsEmpty()) << "one part";
  EXPECT_THAT(agents_of("chase the overdue invoices and remind the invoice customers"),
              ElementsAre("invoice-chaser", "invoice-chaser"));
  EXPECT_THAT(agents_of("chase the overdue invoices and send the sales numbers"),
              ElementsAre("invoice-chaser", "weekly-sales-digest"));
  const std::vector<RequestPart> vague = PartsWithAgents(
      "is there an agent that chases late invoices and posts a summary to slack", kAgents);
  ASSERT_EQ(vague.size(), 2u);
  EXPECT_EQ(vague[0].text, "chases late invoices");
  EXPECT_EQ(vague[0].agent_name, "invoice-chaser");
  EXPECT_EQ(vague[1].text, "posts a summary to slack");
  EXPECT_EQ(vague[1].agent_name, "");
}

IntentAnalysis Analysis(Action action, std::optional<Action> alternative = std::nullopt) {
  IntentAnalysis analysis;
  analysis.action = action;
  analysis.alternative = alternative;
  return analysis;
}

IntentRequest Request(std::string message) {
  IntentRequest request;
  request.message = std::move(message);
  request.agents = kAgents;
  return request;
}

TEST(ApplyActionDetailsTest, EachActionGetsTheDetailsItCallsFor) {
  IntentAnalysis query = Analysis(Action::kQueryInfo);
  ApplyActionDetails(Request("show me the failed runs"), query);
  EXPECT_EQ(query.entities.at("topic"), "runs");
  EXPECT_FALSE(query.entities.contains("operation"));
  EXPECT_FALSE(query.entities.contains("purpose"));

  IntentAnalysis manage = Analysis(Action::kManagePlatform);
  manage.entities["agent_name"] = "invoice-chaser";
  ApplyActionDetails(Request("pause invoice-chaser"), manage);
  EXPECT_EQ(manage.entities.at("operation"), "pause");
  EXPECT_EQ(manage.entities.at("topic"), "agent");

  IntentAnalysis talk = Analysis(Action::kConversation);
  ApplyActionDetails(Request("thanks a lot"), talk);
  EXPECT_EQ(talk.entities.at("small_talk"), "thanks");
  EXPECT_FALSE(talk.entities.contains("topic"));

  IntentAnalysis create = Analysis(Action::kCreateAgent);
  ApplyActionDetails(Request("our Monday Notion updates take hours - can you help?"), create);
  EXPECT_EQ(create.entities.at("purpose"), "our Monday Notion updates take hours");
  EXPECT_EQ(create.entities.at("suggested_name"), "monday-notion-updates");
  EXPECT_TRUE(create.parts.empty());
}

TEST(ApplyActionDetailsTest, TheRunnerUpAndUnsureReadingsGetTheirsToo) {
  IntentAnalysis unsure = Analysis(Action::kExecuteTask, Action::kManagePlatform);
  ApplyActionDetails(Request("the digest, stop it"), unsure);
  EXPECT_EQ(unsure.entities.at("operation"), "pause");
  EXPECT_EQ(unsure.entities.at("purpose"), "the digest, stop it") << "a task naming no agent";

  IntentAnalysis unknown = Analysis(Action::kUnknown);
  ApplyActionDetails(Request("asdf"), unknown);
  EXPECT_EQ(unknown.entities.at("topic"), "agent");
  EXPECT_EQ(unknown.entities.at("suggested_name"), "asdf-agent");
}

TEST(ApplyActionDetailsTest, ARequestOfSeveralPartsGetsItsPartsAndADraft) {
  IntentAnalysis task = Analysis(Action::kExecuteTask);
  task.entities["agent_name"] = "invoice-chaser";
  task.entities["topic"] = "runs";  // carried over from elsewhere: replaced
  ApplyActionDetails(Request("can one of my agents chase the overdue invoices and also post a "
                             "weekly summary to slack?"),
                     task);
  ASSERT_EQ(task.parts.size(), 2u);
  EXPECT_EQ(task.parts[0].text, "chase the overdue invoices");
  EXPECT_EQ(task.parts[0].agent_name, "invoice-chaser");
  EXPECT_EQ(task.parts[1].text, "post a weekly summary to slack");
  EXPECT_EQ(task.parts[1].agent_name, "");
  EXPECT_EQ(task.entities.at("suggested_name"), "chase-overdue-invoices");
  EXPECT_FALSE(task.entities.contains("topic"));
}

TEST(ApplyActionDetailsTest, DetailsAreNoEntitiesOfAnAction) {
  for (const char* key : {"topic", "operation", "small_talk", "purpose", "suggested_name"}) {
    EXPECT_TRUE(IsActionDetail(key)) << key;
  }
  EXPECT_FALSE(IsActionDetail("agent_name"));
  EXPECT_FALSE(IsActionDetail("schedule"));
}

}  // namespace
}  // namespace omniforge::intent
