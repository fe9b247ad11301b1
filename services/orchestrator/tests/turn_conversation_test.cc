// Turns that read the conversation as a whole, on fakes
// (testing/turn_harness.h): "where were we?" recaps what the stored
// history and the flow say, a two-part request one agent covers in part
// gets options, and the intent service's clarify-or-proceed decision is
// asked as it says, its candidates offered.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "services/orchestrator/planner/local_policy.h"
#include "services/orchestrator/testing/turn_harness.h"

namespace omniforge::orchestrator {
namespace {

using nlohmann::json;
using ::testing::Contains;
using testing::ConversationOf;
using testing::FakeUnderstanding;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::RecordingSink;
using testing::TurnHarness;

const json kAgents =
    json::array({{{"name", "weekly-sales-digest"},
                  {"description", "Emails the sales team the deals closed each week"},
                  {"id", "a-1"}},
                 {{"name", "invoice-chaser"},
                  {"description", "Reminds customers about overdue invoices"},
                  {"id", "a-2"}}});

intentpb::IntentAnalysis Analysis(intentpb::ActionType action,
                                  std::map<std::string, std::string> entities = {}) {
  intentpb::IntentAnalysis analysis;
  analysis.set_action_type(action);
  analysis.set_confidence(0.9f);
  analysis.set_source(intentpb::INTENT_SOURCE_LOCAL_MODEL);
  analysis.mutable_entities()->insert(entities.begin(), entities.end());
  return analysis;
}

// The intent service as these conversations need it: a recap request, a
// run or a delete of the agent named, a request of two parts, a vague
// report request it wants clarified.
FakeUnderstanding::Answer Understands() {
  return [](const intentpb::AnalyzeIntentRequest& request)
             -> absl::StatusOr<intentpb::IntentAnalysis> {
    const std::string& m = request.message();
    const std::string agent =
        m.find("invoice") != std::string::npos ? "invoice-chaser" : "weekly-sales-digest";
    if (m == "where were we?") {
      intentpb::IntentAnalysis recap = Analysis(intentpb::ACTION_TYPE_CONVERSATION);
      recap.set_summary_worthy(true);
      recap.set_reference(intentpb::REFERENCE_KIND_RECAP);
      return recap;
    }
    if (m.find(" and also ") != std::string::npos) {
      // "can one of my agents chase the overdue invoices and also post a
      // weekly summary to slack?": two parts, the first the invoice chaser's.
      intentpb::IntentAnalysis task = Analysis(
          intentpb::ACTION_TYPE_EXECUTE_TASK,
          {{"purpose", m.substr(0, m.size() - 1)}, {"suggested_name", "chase-overdue-invoices"}});
      for (const auto& [text, covering] :
           {std::pair<const char*, const char*>{"chase the overdue invoices", "invoice-chaser"},
            {"post a weekly summary to slack", ""}}) {
        intentpb::RequestPart* part = task.add_parts();
        part->set_text(text);
        part->set_agent_name(covering);
      }
      return task;
    }
    if (m.rfind("run ", 0) == 0) {
      return Analysis(intentpb::ACTION_TYPE_EXECUTE_TASK, {{"agent_name", agent}});
    }
    if (m.rfind("delete ", 0) == 0) {
      return Analysis(intentpb::ACTION_TYPE_MANAGE_PLATFORM,
                      {{"agent_name", agent}, {"operation", "delete"}});
    }
    if (m == "send the report") {
      intentpb::IntentAnalysis unclear = Analysis(intentpb::ACTION_TYPE_EXECUTE_TASK);
      unclear.set_is_ambiguous(true);
      unclear.set_clarifying_question("Which report should I send: the sales digest?");
      unclear.mutable_clarification()->set_needed(true);
      unclear.mutable_clarification()->add_missing(intentpb::MISSING_SLOT_AGENT);
      unclear.mutable_clarification()->add_candidates("weekly-sales-digest");
      unclear.mutable_clarification()->add_candidates("invoice-chaser");
      return unclear;
    }
    return Analysis(intentpb::ACTION_TYPE_EXECUTE_TASK);
  };
}

TEST(TurnConversationTest, WhereWereWeRecapsWhatWasDoneAndWhatWaitsFromTheStoredHistory) {
  TurnHarness h(Understands());
  h.tools.SetAgents(kAgents);
  RecordingSink first;
  ASSERT_TRUE(h.Turn("run the invoice chaser", first).ok());
  const std::string conversation = ConversationOf(first);
  RecordingSink yes;
  ASSERT_TRUE(h.Turn("yes", yes, conversation).ok());
  ASSERT_EQ(h.tools.CallsOf("run_agent").size(), 1u);
  RecordingSink risky;
  ASSERT_TRUE(h.Turn("delete weekly-sales-digest", risky, conversation).ok());
  ASSERT_EQ(risky.Of(pb::ChatEvent::kPreview).size(), 1u);

  RecordingSink recap;
  ASSERT_TRUE(h.Turn("where were we?", recap, conversation).ok());
  const std::string text = recap.Text();
  EXPECT_THAT(text, HasSubstr("You came to me with: \"run the invoice chaser\""));
  EXPECT_THAT(text, HasSubstr("Done so far:\n- 'invoice-chaser' ran"));
  EXPECT_THAT(text, HasSubstr("Still open:\n- waiting for your approval: delete "
                              "'weekly-sales-digest'"));
  EXPECT_TRUE(h.tools.CallsOf("delete_agent").empty());
  EXPECT_THAT(recap.States(), Contains(pb::AGENT_STATE_WAITING_ON_USER));

  // The delete still waits for its answer after the recap.
  RecordingSink cancel;
  ASSERT_TRUE(h.Turn("cancel", cancel, conversation).ok());
  EXPECT_THAT(cancel.Text(), HasSubstr("Nothing was changed."));
  RecordingSink again;
  ASSERT_TRUE(h.Turn("where were we?", again, conversation).ok());
  EXPECT_THAT(again.Text(), HasSubstr("- you called off: delete 'weekly-sales-digest'"));
  EXPECT_THAT(again.Text(), HasSubstr("Nothing is waiting on you."));
  EXPECT_TRUE(h.tools.CallsOf("delete_agent").empty());
}

// The intent service carries the flow's settings into every analysis
// (here data_source=notion, from the agent drafted earlier): a plain "yes"
// to a run still approves it, after a recap too.
TEST(TurnConversationTest, AYesApprovesThoughTheAnalysisCarriesTheFlowsSettings) {
  TurnHarness h([](const intentpb::AnalyzeIntentRequest& request)
                    -> absl::StatusOr<intentpb::IntentAnalysis> {
    if (request.message() == "where were we?") {
      intentpb::IntentAnalysis recap = Analysis(intentpb::ACTION_TYPE_CONVERSATION);
      recap.set_summary_worthy(true);
      return recap;
    }
    return Analysis(intentpb::ACTION_TYPE_EXECUTE_TASK,
                    {{"agent_name", "weekly-sales-digest"}, {"data_source", "notion"}});
  });
  h.tools.SetAgents(kAgents);
  RecordingSink run;
  ASSERT_TRUE(h.Turn("run weekly-sales-digest now", run).ok());
  ASSERT_EQ(run.Of(pb::ChatEvent::kPreview).size(), 1u);
  RecordingSink recap;
  ASSERT_TRUE(h.Turn("where were we?", recap, ConversationOf(run)).ok());
  RecordingSink yes;
  ASSERT_TRUE(h.Turn("yes", yes, ConversationOf(run)).ok());
  EXPECT_EQ(h.tools.CallsOf("run_agent").size(), 1u) << yes.Text();
  EXPECT_TRUE(yes.Of(pb::ChatEvent::kPreview).empty());
}

TEST(TurnConversationTest, ARecapAfterAQuestionKeepsTheQuestionOpen) {
  TurnHarness h(Understands());
  h.tools.SetAgents(kAgents);
  RecordingSink ask;
  ASSERT_TRUE(h.Turn("send the report", ask).ok());
  const std::string conversation = ConversationOf(ask);
  RecordingSink recap;
  ASSERT_TRUE(h.Turn("where were we?", recap, conversation).ok());
  EXPECT_THAT(recap.Text(), HasSubstr("my question is not answered yet: \"Which report should I "
                                      "send: the sales digest?\""));
  // The answer to the question still picks from its options.
  RecordingSink pick;
  ASSERT_TRUE(h.Turn("the second one", pick, conversation).ok());
  ASSERT_EQ(pick.Of(pb::ChatEvent::kPreview).size(), 1u);
  EXPECT_EQ(pick.Of(pb::ChatEvent::kPreview)[0].preview().tool_name(), "run_agent");
  EXPECT_THAT(pick.Text(), HasSubstr("invoice-chaser"));
}

TEST(TurnConversationTest, AClarificationAsksTheIntentsQuestionAndOffersItsCandidates) {
  TurnHarness h(Understands());
  h.tools.SetAgents(kAgents);
  RecordingSink ask;
  ASSERT_TRUE(h.Turn("send the report", ask).ok());
  EXPECT_EQ(ask.Text(),
            "Which report should I send: the sales digest?\n"
            "1. weekly-sales-digest — Emails the sales team the deals closed each week\n"
            "2. invoice-chaser — Reminds customers about overdue invoices");
  EXPECT_TRUE(ask.Of(pb::ChatEvent::kPreview).empty()) << "nothing drafted while it is unclear";
  EXPECT_EQ(h.tools.calls().size(), 1u) << "only the agents were listed";
  EXPECT_THAT(ask.States(), Contains(pb::AGENT_STATE_WAITING_ON_USER));
  const FlowState flow = h.LastFlow(ConversationOf(ask));
  EXPECT_EQ(flow.asked, kAskedAgent);
  EXPECT_THAT(flow.listed_agents, ::testing::ElementsAre("weekly-sales-digest", "invoice-chaser"));

  RecordingSink pick;
  ASSERT_TRUE(h.Turn("the first one", pick, ConversationOf(ask)).ok());
  ASSERT_EQ(pick.Of(pb::ChatEvent::kPreview).size(), 1u);
  EXPECT_THAT(pick.Text(), HasSubstr("weekly-sales-digest"));
  // The intent service read the answer, told the question and its options
  // in the order shown.
  ASSERT_EQ(h.understanding.requests().size(), 2u);
  const intentpb::PendingQuestion told = h.understanding.requests()[1].pending().question();
  EXPECT_EQ(told.kind(), intentpb::QUESTION_KIND_AGENT);
  EXPECT_THAT(told.options(), ::testing::ElementsAre("weekly-sales-digest", "invoice-chaser"));
}

TEST(TurnConversationTest, ATwoPartRequestGetsOptionsAndANumberPicksOne) {
  TurnHarness h(Understands());
  h.tools.SetAgents(kAgents);
  RecordingSink ask;
  ASSERT_TRUE(h.Turn("can one of my agents chase the overdue invoices and also post a weekly "
                     "summary to slack?",
                     ask)
                  .ok());
  const std::string text = ask.Text();
  EXPECT_THAT(text, HasSubstr("'invoice-chaser' partly fits: it covers \"chase the overdue "
                              "invoices\""));
  EXPECT_THAT(text, HasSubstr("but not \"post a weekly summary to slack\""));
  EXPECT_THAT(text, HasSubstr("1. Run 'invoice-chaser' anyway"));
  EXPECT_THAT(text, HasSubstr("2. Create a new agent that does both"));
  EXPECT_THAT(text, HasSubstr("3. Change 'invoice-chaser' so that it also does this"));
  EXPECT_TRUE(ask.Of(pb::ChatEvent::kPreview).empty());

  RecordingSink pick;
  ASSERT_TRUE(h.Turn("2", pick, ConversationOf(ask)).ok());
  ASSERT_EQ(pick.Of(pb::ChatEvent::kPreview).size(), 1u);
  EXPECT_EQ(pick.Of(pb::ChatEvent::kPreview)[0].preview().tool_name(), "create_agent");
  EXPECT_THAT(pick.Text(),
              HasSubstr("Chase the overdue invoices and post a weekly summary to slack"));
  EXPECT_EQ(json::parse(pick.Of(pb::ChatEvent::kPreview)[0].preview().arguments_json())["name"],
            "chase-overdue-invoices")
      << "named as the intent service read the request the options were for";
  EXPECT_TRUE(h.tools.CallsOf("create_agent").empty()) << "a draft: it waits for a yes";
}

// The options' bookkeeping stays the orchestrator's: a recap asked instead
// of picking one is analysed with a history that does not carry it, and
// the options still wait.
TEST(TurnConversationTest, ARecapInsteadOfAnOptionKeepsTheOptionsAndTheirBookkeepingHome) {
  TurnHarness h(Understands());
  h.tools.SetAgents(kAgents);
  RecordingSink ask;
  ASSERT_TRUE(h.Turn("can one of my agents chase the overdue invoices and also post a weekly "
                     "summary to slack?",
                     ask)
                  .ok());
  RecordingSink recap;
  ASSERT_TRUE(h.Turn("where were we?", recap, ConversationOf(ask)).ok());
  EXPECT_THAT(recap.Text(),
              HasSubstr("- for \"chase the overdue invoices and post a weekly summary to slack\" "
                        "you have not picked an option yet: 1. run 'invoice-chaser' anyway, 2. a "
                        "new agent that does all of it, 3. change 'invoice-chaser'"));
  const intentpb::AnalyzeIntentRequest analysed = h.understanding.requests().back();
  EXPECT_EQ(analysed.message(), "where were we?");
  ASSERT_GE(analysed.history_size(), 2);
  for (const intentpb::Turn& turn : analysed.history()) {
    EXPECT_EQ(turn.entities().count("option_agent"), 0u);
    EXPECT_EQ(turn.entities().count("requested_task"), 0u);
  }
  RecordingSink pick;
  ASSERT_TRUE(h.Turn("the third one", pick, ConversationOf(ask)).ok());
  ASSERT_EQ(pick.Of(pb::ChatEvent::kPreview).size(), 1u) << pick.Text();
  EXPECT_EQ(pick.Of(pb::ChatEvent::kPreview)[0].preview().tool_name(), "update_agent");
  EXPECT_THAT(pick.Text(), HasSubstr("Also: post a weekly summary to slack."));
}

}  // namespace
}  // namespace omniforge::orchestrator
