// The local layers: text normalisation, the shipped data and its split, the
// fastText model, entities, the fast path and references into the history.
#include "services/intent/src/analyzer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "libs/core/logging.h"
#include "services/intent/entities/entities.h"
#include "services/intent/src/concepts.h"
#include "services/intent/src/cues.h"
#include "services/intent/src/followup_cues.h"
#include "services/intent/src/intent_service.h"
#include "services/intent/src/keywords.h"
#include "services/intent/src/labeled_data.h"
#include "services/intent/src/linear_model.h"
#include "services/intent/src/rules.h"
#include "services/intent/src/text.h"

namespace omniforge::intent {
namespace {

using ::testing::HasSubstr;

const LocalClassifier& Shipped() {
  static const std::unique_ptr<LocalClassifier> model = [] {
    auto trained = LocalClassifier::Train(TrainingSplit());
    EXPECT_TRUE(trained.ok()) << trained.status();
    return *std::move(trained);
  }();
  return *model;
}

const LocalAnalyzer& Analyzer() {
  static const LocalAnalyzer analyzer(Shipped());
  return analyzer;
}

std::vector<CatalogItem> Agents() {
  return {{"weekly-sales-digest", "Emails the sales team a digest of closed deals every Monday"},
          {"invoice-chaser", "Reminds customers about overdue invoices"},
          {"notion-standup-summary", "Posts a summary of the Notion standup page to Slack"}};
}

HistoryTurn User(std::string text) { return {Role::kUser, std::move(text)}; }
HistoryTurn Assistant(std::string text) { return {Role::kAssistant, std::move(text)}; }

IntentAnalysis Analyze(std::string message, std::vector<HistoryTurn> history = {}) {
  IntentRequest request;
  request.message = std::move(message);
  request.history = std::move(history);
  request.agents = Agents();
  return Analyzer().Analyze(request).analysis;
}

std::string AgentOf(const IntentAnalysis& a) {
  auto it = a.entities.find("agent_name");
  return it == a.entities.end() ? "" : it->second;
}

TEST(TextTest, NormalizesCasePunctuationAndApostrophes) {
  EXPECT_EQ(NormalizeText("  Don't RUN the Weekly-Sales-Digest, ok?? "),
            "dont run the weekly sales digest ok ? ?");
  EXPECT_EQ(NormalizeText("it\xE2\x80\x99s fine"), "its fine");
  EXPECT_EQ(NormalizeText("caf\xC3\xA9 #2"), "caf\xC3\xA9 2");
  EXPECT_EQ(NormalizeText("...!!"), "");
  EXPECT_THAT(Words("a  b ? c"), ::testing::ElementsAre("a", "b", "?", "c"));
  EXPECT_EQ(FindPhrase(Words("please set it up now"), "set it up"), 1);
  EXPECT_EQ(FindPhrase(Words("please set it"), "set it up"), -1);
}

TEST(LabeledDataTest, ShipsAtLeastTwoThousandUtterancesOverAllEightLabels) {
  const auto& all = ShippedUtterances();
  EXPECT_GE(all.size(), 2000u);
  std::map<Action, int> per_label;
  std::set<std::string> distinct;
  for (const auto& u : all) {
    ++per_label[u.action];
    EXPECT_TRUE(distinct.insert(NormalizeText(u.text)).second || NormalizeText(u.text).empty())
        << "duplicate utterance: " << u.text;
  }
  for (Action a : kAllActions) EXPECT_GE(per_label[a], 250) << ActionName(a);
}

TEST(LabeledDataTest, DevSplitIsAboutOneFifthDisjointAndStable) {
  const auto train = TrainingSplit();
  const auto dev = DevSplit();
  EXPECT_EQ(train.size() + dev.size(), ShippedUtterances().size());
  const double share = static_cast<double>(dev.size()) / ShippedUtterances().size();
  EXPECT_GT(share, 0.15);
  EXPECT_LT(share, 0.25);
  std::set<std::string> trained;
  for (const auto& u : train) trained.insert(NormalizeText(u.text));
  for (const auto& u : dev) EXPECT_FALSE(trained.contains(NormalizeText(u.text))) << u.text;
  // Only the text decides the side: case and punctuation do not move it.
  for (const auto& u : dev) {
    EXPECT_TRUE(IsDevUtterance(u.text));
    EXPECT_TRUE(IsDevUtterance(Lowercase(u.text) + "!"));
  }
}

TEST(LabeledDataTest, UnknownLabelsAreRejected) {
  EXPECT_FALSE(ParseLabeledLines("create_agents", "hello\n").ok());
  auto parsed = ParseLabeledLines("query_info", "a\n\n  b  \n");
  ASSERT_TRUE(parsed.ok());
  ASSERT_EQ(parsed->size(), 2u);
  EXPECT_EQ((*parsed)[1].text, "b");
}

TEST(ClassifierTest, TrainingIsDeterministic) {
  auto again = LocalClassifier::Train(TrainingSplit());
  ASSERT_TRUE(again.ok());
  for (const auto& u : DevSplit()) {
    const auto a = Shipped().Predict(u.text);
    const auto b = (*again)->Predict(u.text);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].action, b[i].action) << u.text;
      EXPECT_EQ(a[i].probability, b[i].probability) << u.text;
    }
  }
}

TEST(ClassifierTest, RanksAllEightActionsWithProbabilities) {
  const auto ranked = Shipped().Predict("our weekly reports are always late");
  ASSERT_EQ(ranked.size(), 8u);
  float sum = 0;
  for (size_t i = 0; i < ranked.size(); ++i) {
    sum += ranked[i].probability;
    if (i > 0) {
      EXPECT_GE(ranked[i - 1].probability, ranked[i].probability);
    }
  }
  EXPECT_NEAR(sum, 1.0f, 0.01f);
  EXPECT_EQ(ranked[0].action, Action::kCreateAgent);
}

TEST(ClassifierTest, AnEarlierTurnIsReadAsItWasAsAMessage) {
  const std::string seen = "pause the invoice chaser until the audit is done";
  const auto ranked = Shipped().Predict(seen);
  const auto earlier = Shipped().PredictEarlier(seen);
  ASSERT_EQ(earlier.size(), ranked.size());
  for (size_t i = 0; i < ranked.size(); ++i) {
    EXPECT_EQ(earlier[i].action, ranked[i].action);
    EXPECT_EQ(earlier[i].probability, ranked[i].probability);
  }
  // Never read before: read now.
  const std::string unseen = "the standup summary looked odd yesterday, was it the notion page";
  EXPECT_EQ(Shipped().PredictEarlier(unseen)[0].action, Shipped().Predict(unseen)[0].action);
}

TEST(ClassifierTest, IsSharedAcrossThreads) {
  const auto dev = DevSplit();
  std::vector<Action> expected;
  expected.reserve(dev.size());
  for (const auto& u : dev) expected.push_back(Shipped().Predict(u.text)[0].action);
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  std::atomic<int> mismatches{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (size_t i = 0; i < dev.size(); ++i) {
        if (Shipped().Predict(dev[i].text)[0].action != expected[i]) ++mismatches;
        // An earlier turn's reading, remembered or not, is the same.
        if (Shipped().PredictEarlier(dev[i].text)[0].action != expected[i]) ++mismatches;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(ConceptTest, ManySurfaceWordsShareOneToken) {
  EXPECT_EQ(ConceptOf("bot"), ConceptOf("automation"));
  EXPECT_EQ(ConceptOf("bots"), ConceptOf("agent"));
  EXPECT_EQ(ConceptOf("inbox"), ConceptOf("gmail"));
  EXPECT_EQ(ConceptOf("digest"), ConceptOf("summary"));
  EXPECT_EQ(ConceptOf("hooray"), ConceptOf("yay"));
  EXPECT_EQ(ConceptOf("\xF0\x9F\x91\x8D"), ConceptOf("\xF0\x9F\x8E\x89"));  // any emoji
  EXPECT_NE(ConceptOf("pause"), ConceptOf("change"));
  EXPECT_EQ(ConceptOf("the"), "");
}

TEST(ConceptTest, KeyboardMashIsNoiseButWordsAndNumbersAreNot) {
  for (std::string_view noise : {"asdfgh", "kkkkkkk", "lkjlkjlkj", "xcvbnm", "zzzzz"}) {
    EXPECT_TRUE(LooksLikeNoise(noise)) << noise;
  }
  for (std::string_view word : {"digest", "strengths", "hi", "ok", "12345", "rhythm"}) {
    EXPECT_FALSE(LooksLikeNoise(word)) << word;
  }
}

TEST(ClassifierTest, ModelInputCarriesConceptsBesideTheWords) {
  const std::string input = ModelInput("Pause the BOTS");
  EXPECT_THAT(input, HasSubstr("paus"));
  EXPECT_THAT(input, HasSubstr(std::string(ConceptOf("bots"))));
  EXPECT_THAT(input, HasSubstr("_first_paus"));
}

TEST(LinearModelTest, LearnsSeparableExamplesDeterministically) {
  const std::vector<std::string> inputs = {"run it now", "run the digest", "pause it",
                                           "pause the digest"};
  const std::vector<int> labels = {3, 3, 5, 5};
  const LinearModel a = LinearModel::Train(inputs, labels);
  const LinearModel b = LinearModel::Train(inputs, labels);
  const auto run = a.Predict("run");
  EXPECT_GT(run[3], run[5]);
  const auto pause = a.Predict("pause the thing");
  EXPECT_GT(pause[5], pause[3]);
  EXPECT_EQ(a.Predict("run it"), b.Predict("run it"));
  EXPECT_FALSE(a.Knows("completely unseen words"));
  float sum = 0;
  for (float p : a.Predict("completely unseen words")) sum += p;
  EXPECT_NEAR(sum, 1.0f, 1e-5f);
}

TEST(ClassifierTest, NoExamplesIsAnError) {
  EXPECT_EQ(LocalClassifier::Train({}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(EntitiesTest, MatchesAgentsExactlyOrByDistinctiveWords) {
  const auto agents = Agents();
  EXPECT_EQ(MatchCatalogItem("run Weekly-Sales-Digest now", agents), "weekly-sales-digest");
  EXPECT_EQ(MatchCatalogItem("is the sales digest working?", agents), "weekly-sales-digest");
  EXPECT_EQ(MatchCatalogItem("the invoice thing spams people", agents), "invoice-chaser");
  EXPECT_EQ(MatchCatalogItem("build me a weekly report", agents), std::nullopt);
  EXPECT_EQ(MatchCatalogItem("run it again", {{"dbt-run-monitor", ""}}), std::nullopt);
  // Two agents share the only word: nobody is chosen.
  EXPECT_EQ(MatchCatalogItem("the invoice one", {{"invoice-chaser", ""}, {"invoice-sync", ""}}),
            std::nullopt);
  EXPECT_THAT(CatalogItemsInOrder("1. invoice-chaser\n2. weekly-sales-digest", agents),
              ::testing::ElementsAre("invoice-chaser", "weekly-sales-digest"));
}

TEST(EntitiesTest, MasksWholeNamesOnly) {
  const std::vector<CatalogItem> agents = {{"weekly-sales-digest", ""}, {"sales-digest", ""}};
  EXPECT_EQ(MaskCatalogNames("run Weekly-Sales-Digest and sales-digest now", agents, "X"),
            "run X and X now");
  // Not inside a longer word or name, and the longest name first.
  EXPECT_EQ(MaskCatalogNames("weekly-sales-digest-v2 and my-sales-digest", agents, "X"),
            "weekly-sales-digest-v2 and my-sales-digest");
  EXPECT_EQ(MaskCatalogNames("the sales digest", agents, "X"), "the sales digest");
}

TEST(EntitiesTest, ExtractsScheduleSourcesAndRecipients) {
  auto e = ExtractEntities(
      "every monday at 9am pull deals from HubSpot and Google Sheets, email maria@acme.io and "
      "post in #sales");
  EXPECT_EQ(e["schedule"], "every monday at 9am");
  EXPECT_EQ(e["data_source"], "hubspot,google_sheets");
  EXPECT_EQ(e["recipients"], "maria@acme.io,#sales");
  EXPECT_EQ(ExtractEntities("make it weekly")["schedule"], "weekly");
  EXPECT_EQ(ExtractEntities("send it to the finance team")["recipients"], "the finance team");
  EXPECT_TRUE(ExtractEntities("hello there").empty());
}

TEST(EntitiesTest, ReadsTheKindOfAgentAndTheProjectItNames) {
  auto e = ExtractEntities("I need an agent that posts a weekly digest of the Harbor project");
  EXPECT_EQ(e["agent_kind"], "digest");
  EXPECT_EQ(e["project"], "Harbor");
  EXPECT_EQ(ExtractEntities("alert me when a task of the Website relaunch project is overdue")
                .at("project"),
            "Website relaunch");
  EXPECT_EQ(ExtractEntities("alert me when a task of the Website relaunch project is overdue")
                .at("agent_kind"),
            "monitor");
  EXPECT_EQ(ExtractEntities("a monthly report on project \"Q3 launch\"")["project"], "Q3 launch");
  EXPECT_EQ(ExtractEntities("a monthly report on project \"Q3 launch\"")["agent_kind"], "report");
  EXPECT_EQ(ExtractEntities("triage the new tickets every morning")["agent_kind"], "triage");
  // The first word of a kind decides: a digest of overdue invoices is a digest.
  EXPECT_EQ(ExtractEntities("a daily summary of overdue invoices")["agent_kind"], "digest");
  EXPECT_EQ(ExtractEntities("a digest of the tasks in the Harbor project")["project"], "Harbor");
  // Words that only stand before "project" name none.
  for (const char* none :
       {"how is this project doing?", "sum up the whole project",
        "Summarize my project every Friday", "Track the project",
        "what's the status of the project", "start a new project", "Projects are late"}) {
    EXPECT_FALSE(ExtractEntities(none).contains("project")) << none;
  }
  EXPECT_FALSE(ExtractEntities("run invoice-chaser").contains("agent_kind"));
}

TEST(EntitiesTest, ReadsATimeZoneWhenTheMessageNamesOne) {
  EXPECT_EQ(ExtractEntities("set my time zone to Europe/Berlin")["time_zone"], "Europe/Berlin");
  EXPECT_EQ(ExtractEntities("my timezone is America/New_York")["time_zone"], "America/New_York");
  EXPECT_EQ(ExtractEntities("I'm in Tokyo, please use that time zone")["time_zone"], "Asia/Tokyo");
  EXPECT_EQ(ExtractEntities("change my time zone to new york")["time_zone"], "America/New_York");
  EXPECT_EQ(ExtractEntities("a digest every monday at 9am Berlin time")["time_zone"],
            "Europe/Berlin");
  EXPECT_EQ(ExtractEntities("every day at 8am UTC")["time_zone"], "UTC");
  EXPECT_EQ(ExtractEntities("a report at 5pm PST on fridays")["time_zone"], "America/Los_Angeles");
  // A place alone is no time zone, nor a name that looks like one.
  for (const char* none :
       {"a digest of sales in Germany", "summarize the London office tickets",
        "read Notion/Slack every morning", "post it to Sales/Weekly", "what time is it",
        "a digest of UK sales every monday at 9am", "add the UK invoices to invoice-chaser",
        "das ist gut", "post it to Europe/Nowhere at 9"}) {
    EXPECT_FALSE(ExtractEntities(none).contains("time_zone")) << none;
  }
}

TEST(EntitiesTest, FindsOrdinalsButNotTimes) {
  EXPECT_EQ(FindOrdinal("run the first one")->index, 0);
  EXPECT_EQ(FindOrdinal("#2 please")->index, 1);
  EXPECT_EQ(FindOrdinal("number 3")->index, 2);
  EXPECT_EQ(FindOrdinal("the last one")->kind, OrdinalRef::Kind::kFromEnd);
  EXPECT_EQ(FindOrdinal("the last one")->Resolve(3, -1), 2);
  EXPECT_EQ(FindOrdinal("the second to last")->Resolve(3, -1), 1);
  // Counted from the end in the other ways people say it.
  EXPECT_EQ(FindOrdinal("turn off the last but one")->Resolve(4, -1), 2);
  EXPECT_EQ(FindOrdinal("second from the bottom, pause it")->Resolve(4, -1), 2);
  EXPECT_EQ(FindOrdinal("rerun the second-last one")->Resolve(5, -1), 3);
  EXPECT_EQ(FindOrdinal("the penultimate one")->Resolve(5, -1), 3);
  EXPECT_EQ(FindOrdinal("the middle one")->Resolve(3, -1), 1);
  EXPECT_EQ(FindOrdinal("the middle one")->Resolve(4, -1), -1);
  EXPECT_EQ(FindOrdinal("and the other one?")->Resolve(2, 0), 1);
  EXPECT_EQ(FindOrdinal("and the other one?")->Resolve(3, 0), -1);
  EXPECT_EQ(FindOrdinal("#7")->Resolve(3, -1), -1);
  EXPECT_EQ(FindOrdinal("2")->index, 1);
  EXPECT_FALSE(FindOrdinal("what happened in the last run?").has_value());
  EXPECT_FALSE(FindOrdinal("first thing tomorrow, send the report").has_value());
  EXPECT_FALSE(FindOrdinal("we have 3 agents that post to slack every day").has_value());
}

TEST(FastPathTest, AtAgentNameRunsTheAgentUnlessTheMessageSaysOtherwise) {
  IntentAnalysis run = Analyze("@invoice-chaser the overdue ones from march");
  EXPECT_EQ(run.source, Source::kFastPath);
  EXPECT_EQ(run.action, Action::kExecuteTask);
  EXPECT_EQ(AgentOf(run), "invoice-chaser");

  IntentAnalysis pause = Analyze("@Invoice-Chaser pause until monday");
  EXPECT_EQ(pause.source, Source::kFastPath);
  EXPECT_EQ(pause.action, Action::kManagePlatform);
  EXPECT_EQ(AgentOf(pause), "invoice-chaser");

  IntentAnalysis change = Analyze("@weekly-sales-digest change the schedule to fridays");
  EXPECT_EQ(change.action, Action::kUpdateAgent);

  // Not one of the user's agents, and not an e-mail address.
  EXPECT_NE(Analyze("@someone-else do this").source, Source::kFastPath);
  EXPECT_NE(Analyze("mail bob@invoice-chaser.com the totals").source, Source::kFastPath);
}

TEST(FastPathTest, AnEmptyMessageGetsAClarifyingQuestionNamingTheAgents) {
  for (const char* empty : {"", "   \n\t ", "?!"}) {
    IntentAnalysis a = Analyze(empty);
    EXPECT_EQ(a.source, Source::kFastPath);
    EXPECT_TRUE(a.is_ambiguous);
    EXPECT_THAT(a.clarifying_question, HasSubstr("weekly-sales-digest"));
  }
}

TEST(ReferenceTest, OrdinalsPickFromTheLastListTheAssistantGave) {
  std::vector<HistoryTurn> history = {
      User("what agents do i have?"),
      Assistant("You have three:\n1. weekly-sales-digest\n2. invoice-chaser\n"
                "3. notion-standup-summary")};
  IntentAnalysis run = Analyze("run the second one", history);
  EXPECT_EQ(run.action, Action::kExecuteTask);
  EXPECT_EQ(AgentOf(run), "invoice-chaser");
  EXPECT_EQ(run.reference, Reference::kOrdinal);

  IntentAnalysis pause = Analyze("pause the last one", history);
  EXPECT_EQ(pause.action, Action::kManagePlatform);
  EXPECT_EQ(AgentOf(pause), "notion-standup-summary");

  IntentAnalysis what = Analyze("what does #1 do?", history);
  EXPECT_EQ(what.action, Action::kQueryInfo);
  EXPECT_EQ(AgentOf(what), "weekly-sales-digest");
}

TEST(ReferenceTest, RelativePositionsResolveByIndexFromAnyAnchor) {
  std::vector<HistoryTurn> history = {
      User("what agents do i have?"),
      Assistant("You have three:\n1. weekly-sales-digest\n2. invoice-chaser\n"
                "3. notion-standup-summary")};
  IntentAnalysis below = Analyze("kick off whatever sits right below weekly-sales-digest", history);
  EXPECT_EQ(AgentOf(below), "invoice-chaser");
  EXPECT_EQ(below.action, Action::kExecuteTask);
  IntentAnalysis above_last = Analyze("the one above the last, pause it", history);
  EXPECT_EQ(AgentOf(above_last), "invoice-chaser");
  IntentAnalysis predecessor = Analyze("number 3's predecessor, pause it", history);
  EXPECT_EQ(AgentOf(predecessor), "invoice-chaser");
  IntentAnalysis middle = Analyze("run the one in between the other two", history);
  EXPECT_EQ(AgentOf(middle), "invoice-chaser");
}

TEST(ReferenceTest, ADraftHeadedByAnExistingAgentIsAChangeToIt) {
  IntentAnalysis a = Analyze(
      "yep but every 15 min",
      {User("invoice-chaser is too slow"),
       Assistant(
           "Update to invoice-chaser:\n- Checks every 30 minutes\n- Emails customers\nSave?")});
  EXPECT_EQ(a.action, Action::kUpdateAgent);
  EXPECT_EQ(AgentOf(a), "invoice-chaser");
}

TEST(ReferenceTest, PassingSomethingOnOnceRunsItButASendThatChangesIsAnUpdate) {
  std::vector<HistoryTurn> history = {
      User("how did weekly-sales-digest do?"),
      Assistant("weekly-sales-digest built this week's digest: 14 deals closed.")};
  EXPECT_EQ(Analyze("share it with the regional leads", history).action, Action::kExecuteTask);
  EXPECT_EQ(VerbAction("share the scorecards"), Action::kExecuteTask);
  EXPECT_EQ(VerbAction("send it to the finance channel instead"), Action::kUpdateAgent);
  EXPECT_EQ(VerbAction("share access with the new hire"), Action::kManagePlatform);
  EXPECT_EQ(VerbAction("restore the old version pls"), Action::kUpdateAgent);
  EXPECT_EQ(VerbAction("restore the archived invoice bot"), Action::kManagePlatform);
}

TEST(ReferenceTest, ABareOrdinalContinuesWhatTheListWasFor) {
  IntentAnalysis a =
      Analyze("the last one", {User("run one of my agents"), Assistant("Which one should I run?\n"
                                                                       "- weekly-sales-digest\n"
                                                                       "- invoice-chaser")});
  EXPECT_EQ(a.action, Action::kExecuteTask);
  EXPECT_EQ(AgentOf(a), "invoice-chaser");
}

TEST(ReferenceTest, PronounsMeanTheAgentLastTalkedAbout) {
  IntentAnalysis a =
      Analyze("pause it", {User("did the invoice-chaser run last night?"),
                           Assistant("Yes, at 02:00. It sent 14 reminders and 2 bounced.")});
  EXPECT_EQ(a.action, Action::kManagePlatform);
  EXPECT_EQ(AgentOf(a), "invoice-chaser");
  EXPECT_EQ(a.reference, Reference::kPronoun);
}

TEST(ReferenceTest, AYesTakesTheProposedActionWithItsEntities) {
  IntentAnalysis create = Analyze(
      "yes, do that", {User("our standup notes never reach the managers"),
                       Assistant("I can set up an agent that posts the Notion standup summary to "
                                 "#managers every Monday at 9. Want me to create it?")});
  EXPECT_EQ(create.action, Action::kCreateAgent);
  EXPECT_EQ(create.reference, Reference::kConfirmation);
  EXPECT_EQ(create.entities["recipients"], "#managers");
  EXPECT_THAT(create.entities["schedule"], HasSubstr("every monday"));

  IntentAnalysis pause =
      Analyze("sure", {User("invoice-chaser keeps emailing paid customers"),
                       Assistant("I can pause invoice-chaser until the sync is fixed. Pause it?")});
  EXPECT_EQ(pause.action, Action::kManagePlatform);
  EXPECT_EQ(AgentOf(pause), "invoice-chaser");

  IntentAnalysis no = Analyze("no thanks", {Assistant("Want me to run weekly-sales-digest now?")});
  EXPECT_EQ(no.action, Action::kConversation);
  EXPECT_EQ(no.reference, Reference::kDecline);
  EXPECT_EQ(no.alternative, Action::kExecuteTask);
}

TEST(ReferenceTest, CorrectionsContinueTheDraftInProgress) {
  IntentAnalysis a =
      Analyze("actually make it weekly",
              {User("i want something that sends our MRR numbers to the founders"),
               Assistant("Here's a draft:\n- Source: Stripe\n- Schedule: every day at 8:00\n"
                         "- Delivery: email to the founders list\nShould I create it?")});
  EXPECT_EQ(a.action, Action::kCreateAgent);
  EXPECT_EQ(a.reference, Reference::kCorrection);
  EXPECT_EQ(a.entities["schedule"], "weekly");
}

TEST(ReferenceTest, WhereWereWeAsksForARecap) {
  IntentAnalysis a = Analyze("where were we?", {User("help me with the invoices"),
                                                Assistant("Sure, what is going wrong?")});
  EXPECT_EQ(a.action, Action::kConversation);
  EXPECT_TRUE(a.summary_worthy);
  EXPECT_EQ(a.reference, Reference::kRecap);
}

TEST(ReferenceTest, RecapsOfThisConversationButNotReportsCalledRecaps) {
  EXPECT_TRUE(Analyze("summarize this conversation for me").summary_worthy);
  EXPECT_TRUE(Analyze("what have we agreed so far?").summary_worthy);
  EXPECT_TRUE(Analyze("quick recap?").summary_worthy);
  EXPECT_FALSE(Analyze("send the meeting recap to everyone who attended").summary_worthy);
}

TEST(ReferenceTest, AQuestionAboutWhatThisConversationSettledIsARecap) {
  const std::vector<HistoryTurn> history = {
      User("make invoice-chaser wait 14 days"),
      Assistant("Done, invoice-chaser now waits 14 days before the first reminder.")};
  for (const char* message : {"can you list what we agreed and what's still undecided",
                              "honestly i forgot what i asked earlier, can you go over it"}) {
    const IntentAnalysis a = Analyze(message, history);
    EXPECT_EQ(a.reference, Reference::kRecap) << message;
    EXPECT_EQ(a.action, Action::kConversation) << message;
  }
  // A short question about where things stand, with nothing else in it.
  for (const char* message : {"where are we?", "what's outstanding?", "anything pending?",
                              "so where does that leave us", "what did i miss"}) {
    EXPECT_EQ(Analyze(message, history).reference, Reference::kRecap) << message;
  }
  EXPECT_NE(Analyze("what's outstanding on the march invoices?", history).reference,
            Reference::kRecap);
  // About one of the agents, it is a question about that agent.
  EXPECT_NE(Analyze("can you list what we agreed for invoice-chaser", history).reference,
            Reference::kRecap);
}

TEST(ReferenceTest, ADeclineActsOnNoAgentAndDoingItOneselfDeclines) {
  const std::vector<HistoryTurn> offer = {
      User("the invoice reminders sound harsh"),
      Assistant("Want me to soften the tone of invoice-chaser's reminders?")};
  const IntentAnalysis no = Analyze("nah leave it", offer);
  EXPECT_EQ(no.action, Action::kConversation);
  EXPECT_EQ(no.reference, Reference::kDecline);
  EXPECT_EQ(AgentOf(no), "");
  const IntentAnalysis self = Analyze("I'll write them myself, but thx", offer);
  EXPECT_EQ(self.action, Action::kConversation);
  EXPECT_EQ(self.reference, Reference::kDecline);
}

TEST(ReferenceTest, AnotherValueOfTheSameFormCorrectsTheLastRequest) {
  const IntentAnalysis a =
      Analyze("eh every 4 hours is plenty, prices dont move that fast",
              {User("change weekly-sales-digest to every 2 hours"),
               Assistant("weekly-sales-digest now runs every 2 hours, 06:00-20:00.")});
  EXPECT_EQ(a.action, Action::kUpdateAgent);
  EXPECT_EQ(a.reference, Reference::kCorrection);
  EXPECT_EQ(AgentOf(a), "weekly-sales-digest");
  EXPECT_EQ(a.entities.at("corrected_value"), "every 4 hours");
  const IntentAnalysis address = Analyze(
      "wrong address, use billing@shop.example",
      {User("change invoice-chaser so reminders come from accounts@shop.example"),
       Assistant("Updated: invoice-chaser now sends its reminders from accounts@shop.example.")});
  EXPECT_EQ(address.action, Action::kUpdateAgent);
  EXPECT_EQ(address.entities.at("corrected_value"), "billing@shop.example");
  // An agent's own name ("weekly-sales-digest") says nothing of when it
  // runs: correcting a run of it is a run.
  const IntentAnalysis run = Analyze("i meant the americas team",
                                     {User("run weekly-sales-digest for the EMEA team"),
                                      Assistant("Running weekly-sales-digest for EMEA now.")});
  EXPECT_EQ(run.action, Action::kExecuteTask);
  EXPECT_EQ(AgentOf(run), "weekly-sales-digest");
  // "run X every day" was a standing change: its correction is a change.
  const IntentAnalysis time =
      Analyze("6pm i mean, not am", {User("run invoice-chaser at 6am every day"),
                                     Assistant("Scheduled invoice-chaser daily at 06:00 UTC.")});
  EXPECT_EQ(time.action, Action::kUpdateAgent);
  EXPECT_EQ(time.entities.at("corrected_value"), "6pm");
}

TEST(ReferenceTest, APickTakesTheVerbOfTheClauseBesideIt) {
  const std::vector<HistoryTurn> list = {
      User("what do i have?"),
      Assistant("1. weekly-sales-digest\n2. invoice-chaser\n3. notion-standup-summary")};
  const IntentAnalysis run =
      Analyze("the one listed before the notion one, run it for last week", list);
  EXPECT_EQ(run.action, Action::kExecuteTask);
  EXPECT_EQ(AgentOf(run), "invoice-chaser");
  const IntentAnalysis change =
      Analyze("the one above invoice-chaser, can you make it cc dr patel from now on", list);
  EXPECT_EQ(change.action, Action::kUpdateAgent);
  EXPECT_EQ(AgentOf(change), "weekly-sales-digest");
}

TEST(ReferenceTest, AYesThatGoesOnToAnotherRequestIsThatRequest) {
  const std::vector<HistoryTurn> offer = {User("the digest is late again"),
                                          Assistant("Want me to move weekly-sales-digest to 7am?")};
  EXPECT_EQ(Analyze("sure thing", offer).reference, Reference::kConfirmation);
  const IntentAnalysis send = Analyze("looks good, forward it to the sales team", offer);
  EXPECT_EQ(send.action, Action::kExecuteTask);
  EXPECT_NE(send.reference, Reference::kConfirmation);
}

TEST(ReferenceTest, ASuggestionInTheHistoryOrTheAgentAsItWasChangesTheAgentInPlay) {
  const std::vector<HistoryTurn> suggested = {
      User("kenji thinks invoice-chaser should wait 10 days, not 7"),
      Assistant("Noted. invoice-chaser waits 7 days before the first reminder today.")};
  const IntentAnalysis apply = Analyze("ok do what kenji said", suggested);
  EXPECT_EQ(apply.action, Action::kUpdateAgent);
  EXPECT_EQ(AgentOf(apply), "invoice-chaser");
  const IntentAnalysis back = Analyze("put it back to how it was before the audit", suggested);
  EXPECT_EQ(back.action, Action::kUpdateAgent);
  EXPECT_EQ(AgentOf(back), "invoice-chaser");
  // Undoing a pause is a lifecycle step.
  const IntentAnalysis undo =
      Analyze("wait no, undo that",
              {User("pause invoice-chaser"),
               Assistant("Paused invoice-chaser. It won't run until you resume it.")});
  EXPECT_EQ(undo.action, Action::kManagePlatform);
  EXPECT_EQ(AgentOf(undo), "invoice-chaser");
}

TEST(ReferenceTest, AnAgentDescribedInAnswerToWhichAgentIsThatAgent) {
  const std::vector<HistoryTurn> asked = {User("run it for the Hendriks account"),
                                          Assistant("Which agent should I run for them?")};
  const IntentAnalysis described = Analyze("the one that chases overdue invoices", asked);
  EXPECT_EQ(described.action, Action::kExecuteTask);
  EXPECT_EQ(AgentOf(described), "invoice-chaser");
  // A reason may follow the answer.
  const IntentAnalysis reason =
      Analyze("uh the sales digest one, the team lead wants it before the 11am meeting", asked);
  EXPECT_EQ(reason.action, Action::kExecuteTask);
  EXPECT_EQ(AgentOf(reason), "weekly-sales-digest");
}

TEST(ReferenceTest, ASkillsDraftOfferedForSavingIsTheSkill) {
  const IntentAnalysis a = Analyze(
      "👍 make it $9/gal",
      {User("we need something to calc refuel charges consistently"),
       Assistant("Draft skill 'fuel-charge-calc': returns the refuel charge at $8/gallon. Save?")});
  EXPECT_EQ(a.action, Action::kCreateSkill);
  // "Should I set that?" points back at the offer made before it.
  const IntentAnalysis back =
      Analyze("Yes, freeze it until then",
              {User("we have a change freeze from dec 20"),
               Assistant("I can pause invoice-chaser until January 3, and it will resume after the "
                         "freeze. Should I set that?")});
  EXPECT_EQ(back.action, Action::kManagePlatform);
  EXPECT_EQ(AgentOf(back), "invoice-chaser");
}

TEST(GrammarCueTest, AnEventOrADateThatSetsWorkOffIsANewAgent) {
  for (const char* message :
       {"new episode published on our RSS -> write a newsletter draft with 3 key quotes, dont "
        "send it just save as draft",
        "1st working day of the month: compare hours logged per project against the budget and "
        "email the leads whose projects are above 80%",
        "on move-out date +1 day, email the tenant the deposit return form and book the "
        "inspection"}) {
    EXPECT_EQ(Analyze(message).action, Action::kCreateAgent) << message;
  }
}

TEST(FastPathTest, AnAddressedAgentToldHowToWorkFromNowOnChanges) {
  const IntentAnalysis a = Analyze("@invoice-chaser also remind at 30 days, not just 14");
  EXPECT_EQ(a.action, Action::kUpdateAgent);
  EXPECT_EQ(AgentOf(a), "invoice-chaser");
  EXPECT_EQ(Analyze("@invoice-chaser the overdue ones from march").action, Action::kExecuteTask);
}

TEST(RuleTableTest, AWordOfAnAgentsNameBesideMaterialIsATaskOnTheMaterial) {
  const IntentAnalysis a = Analyze(
      "shorten this digest to max 60 chars: Council Votes 7-2 to Approve Downtown Bike Lane "
      "Expansion After Months of Heated Public Debate");
  EXPECT_EQ(a.action, Action::kExecuteTask);
  EXPECT_EQ(AgentOf(a), "");
}

TEST(ReferenceTest, AnOfferOfAnUnnamedChangeToAnAgentIsAChangeToIt) {
  const std::vector<HistoryTurn> offer = {
      User("the reminders feel pushy"),
      Assistant("I can soften the tone of invoice-chaser's reminders and drop the second "
                "follow-up. Want me to do that?")};
  for (const char* yes : {"yes please", "sure thing", "👍", "ok let's do it"}) {
    const IntentAnalysis a = Analyze(yes, offer);
    EXPECT_EQ(a.action, Action::kUpdateAgent) << yes;
    EXPECT_EQ(AgentOf(a), "invoice-chaser") << yes;
  }
  for (const char* no : {"let's leave it as is", "maybe another time", "keep it the way it is",
                         "not at the moment", "let it be"}) {
    const IntentAnalysis a = Analyze(no, offer);
    EXPECT_EQ(a.action, Action::kConversation) << no;
    EXPECT_EQ(a.reference, Reference::kDecline) << no;
  }
}

TEST(ReferenceTest, ATopicMarkerIsCutAtAClauseNotInsideAnAgentsName) {
  const IntentAnalysis a = Analyze("btw can you pause weekly-sales-digest till monday",
                                   {User("how many reminders did invoice-chaser send?"),
                                    Assistant("invoice-chaser sent 23 reminders this week.")});
  EXPECT_EQ(a.action, Action::kManagePlatform);
  EXPECT_EQ(AgentOf(a), "weekly-sales-digest");
  EXPECT_EQ(NewTopicStart("different topic - run the sales digest"),
            std::string_view("different topic - ").size());
}

TEST(ReferenceTest, ATopicMarkerOpensALaterSentenceToo) {
  const IntentAnalysis a =
      Analyze("hmm let me check with IT. anyway, unrelated: run invoice-chaser now, HR is asking",
              {User("what does weekly-sales-digest read?"),
               Assistant("weekly-sales-digest reads closed deals from HubSpot.")});
  EXPECT_EQ(a.action, Action::kExecuteTask);
  EXPECT_EQ(AgentOf(a), "invoice-chaser");
  // "btw" adds to a message; only the markers that say so open a new topic
  // in a later sentence.
  EXPECT_FALSE(NewTopicStart("pause it. btw it should resume monday").has_value());
  EXPECT_EQ(NewTopicStart("looks good. unrelated: can agents read pdfs?"),
            std::string_view("looks good. unrelated: ").size());
  // "anyway" alone in a later sentence resumes what was being done.
  EXPECT_FALSE(NewTopicStart("I checked the emails. Anyway, can you run it again?").has_value());
  const IntentAnalysis resume =
      Analyze("I checked the emails. Anyway, can you run it again?",
              {User("what did invoice-chaser send?"), Assistant("invoice-chaser sent 4 emails.")});
  EXPECT_EQ(AgentOf(resume), "invoice-chaser");
  EXPECT_FALSE(NewTopicStart("use v2.anyway").has_value());
}

TEST(ReferenceTest, AnotherAgentWithAlsoOrTooRepeatsTheRequest) {
  const std::vector<HistoryTurn> changed = {
      User("make weekly-sales-digest cc the head of sales"),
      Assistant("Done — weekly-sales-digest will cc sales-lead@acme.example.")};
  const IntentAnalysis also = Analyze("also invoice-chaser pls", changed);
  EXPECT_EQ(also.action, Action::kUpdateAgent);
  EXPECT_EQ(AgentOf(also), "invoice-chaser");
  const std::vector<HistoryTurn> resumed = {User("resume weekly-sales-digest"),
                                            Assistant("Done — it is active again.")};
  const IntentAnalysis too = Analyze("the invoice one too pls", resumed);
  EXPECT_EQ(too.action, Action::kManagePlatform);
  EXPECT_EQ(AgentOf(too), "invoice-chaser");
}

TEST(ReferenceTest, ASwitchingVerbAroundItsObjectIsLifecycle) {
  const IntentAnalysis a =
      Analyze("ah right, lets turn that one back on",
              {User("why did nobody get reminders?"),
               Assistant("invoice-chaser is paused — it was paused on Aug 30.")});
  EXPECT_EQ(a.action, Action::kManagePlatform);
  EXPECT_EQ(AgentOf(a), "invoice-chaser");
  EXPECT_EQ(VerbAction("switch the digest off for the holidays"), Action::kManagePlatform);
  EXPECT_NE(VerbAction("switch the digest to slack"), Action::kManagePlatform);
}

TEST(ReferenceTest, ALetterPicksFromALetteredList) {
  const IntentAnalysis a = Analyze(
      "b pls", {User("pause the sales one"),
                Assistant("Which one should I pause?\na) weekly-sales-digest\nb) invoice-chaser")});
  EXPECT_EQ(a.action, Action::kManagePlatform);
  EXPECT_EQ(AgentOf(a), "invoice-chaser");
  EXPECT_EQ(FindOrdinal("option c")->index, 2);
  EXPECT_FALSE(FindOrdinal("plan b is fine").has_value());
  EXPECT_FALSE(FindOrdinal("a digest for sales").has_value());
}

TEST(ReferenceTest, TheRequestAfterThanksIsWhatTheMessageAsks) {
  const IntentAnalysis a =
      Analyze("thank you!! could you also pause invoice-chaser",
              {User("can I give Ruth edit rights?"), Assistant("Yes — Ruth is now an editor.")});
  EXPECT_EQ(a.action, Action::kManagePlatform);
  EXPECT_EQ(AgentOf(a), "invoice-chaser");
  EXPECT_EQ(RequestAfterThanks("thanks so much! run it again"),
            std::string_view("thanks so much! ").size());
  EXPECT_FALSE(RequestAfterThanks("thanks!").has_value());
  EXPECT_FALSE(RequestAfterThanks("ok, delete it").has_value());  // no thanks
  EXPECT_FALSE(RequestAfterThanks("great, thanks a lot").has_value());
}

TEST(ReferenceTest, PluralWeekdaysRecurAndADraftIsTheKindItsWordsName) {
  const IntentAnalysis fridays = Analyze(
      "fridays 3pm: email the parents of class 4B a short newsletter with that week's homework");
  EXPECT_EQ(fridays.action, Action::kCreateAgent);
  const IntentAnalysis draft = Analyze(
      "go, but only for orders over $500",
      {User("set up something to flag suspicious orders"),
       Assistant("Draft agent:\n- Name: fraud-order-flagger\n- Trigger: every new Shopify order\n"
                 "- Checks: country mismatch, several cards tried\nGo ahead?")});
  EXPECT_EQ(draft.action, Action::kCreateAgent);
}

TEST(ReferenceTest, WhatWeChangedIsARecap) {
  const IntentAnalysis a =
      Analyze("wait, what have we actually changed vs just talked about?",
              {User("resume invoice-chaser"), Assistant("Resumed invoice-chaser."),
               User("set weekly-sales-digest to 8am"), Assistant("Done — it now sends at 8am.")});
  EXPECT_EQ(a.action, Action::kConversation);
  EXPECT_TRUE(a.summary_worthy);
}

TEST(ReferenceTest, AYesOrANoInAClauseOfItsOwnWithARemark) {
  const std::vector<HistoryTurn> offer = {
      User("is invoice-chaser still needed?"),
      Assistant("It has sent nothing since May. Would you like me to delete it?")};
  const IntentAnalysis yes = Analyze("That makes sense. Please proceed.", offer);
  EXPECT_EQ(yes.action, Action::kManagePlatform);
  EXPECT_EQ(AgentOf(yes), "invoice-chaser");
  const IntentAnalysis no = Analyze(
      "hmm tempting but no, honestly those reminders are half the reason clients call us back",
      offer);
  EXPECT_EQ(no.action, Action::kConversation);
  // A no beside a new value is a correction, not a refusal.
  const std::vector<HistoryTurn> change = {
      User("make invoice-chaser wait 30 days"),
      Assistant("Here's the change: invoice-chaser will wait 30 days. Save it?")};
  EXPECT_EQ(Analyze("no, 45", change).action, Action::kUpdateAgent);
  // A yes beside a no is no yes.
  EXPECT_NE(Analyze("No thankyou, is ok like this", offer).action, Action::kManagePlatform);
}

TEST(ReferenceTest, RelativePositionsReadTheFirstDirectionAndLooseAnchors) {
  const std::vector<HistoryTurn> list = {
      User("list the port side ones"),
      Assistant("Port-side agents:\n1. weekly-sales-digest\n2. invoice-chaser\n"
                "3. notion-standup-summary")};
  const IntentAnalysis after =
      Analyze("the one after the sales digest, make it warn 3 days before month end not 1", list);
  EXPECT_EQ(AgentOf(after), "invoice-chaser");
  const IntentAnalysis between =
      Analyze("the one between the sales digest and the notion summary, who set it up?", list);
  EXPECT_EQ(AgentOf(between), "invoice-chaser");
  const IntentAnalysis above =
      Analyze("notion-standup-summary's neighbour above, pause that", list);
  EXPECT_EQ(AgentOf(above), "invoice-chaser");
  const std::vector<HistoryTurn> two = {
      User("which ones email customers"),
      Assistant("Two agents email customers: weekly-sales-digest and invoice-chaser.")};
  const IntentAnalysis other =
      Analyze("leave the sales one alone but the other one should wait a day", two);
  EXPECT_EQ(AgentOf(other), "invoice-chaser");
}

TEST(ReferenceTest, ALetterPicksOnlyFromALetteredList) {
  const std::vector<HistoryTurn> numbered = {
      User("what do i have"),
      Assistant("1. weekly-sales-digest\n2. invoice-chaser\n3. notion-standup-summary")};
  EXPECT_NE(AgentOf(Analyze("ok go with option b for the digest", numbered)), "invoice-chaser");
}

TEST(ReferenceTest, AnAnswerSayingTheAgentNowDoesSoMakesTheRequestAChange) {
  const IntentAnalysis a = Analyze("#sales-leads* theres two",
                                   {User("send the sales digest to #sales"),
                                    Assistant("Done — weekly-sales-digest now posts to #sales.")});
  EXPECT_EQ(a.action, Action::kUpdateAgent);
  EXPECT_EQ(AgentOf(a), "weekly-sales-digest");
}

TEST(ReferenceTest, ReadingsOfTheRoundLeaveOrdinaryMessagesAlone) {
  const std::vector<HistoryTurn> list = {
      User("what do i have"),
      Assistant("1. notion-standup-summary\n2. invoice-chaser\n3. weekly-sales-digest")};
  // A listed name before "between" (one word of the masked message stands
  // for its parts) used to index past the words and crash the service.
  Analyze("keep notion-standup-summary and between the invoice one and the sales one, pause it",
          list);
  Analyze("notion-standup-summary and between the invoice one and the sales one which runs first?",
          list);
  EXPECT_EQ(AgentOf(Analyze("pause the one between the notion one and the sales one", list)),
            "invoice-chaser");
  // "on the 1st" is a date: the invoice one stays the one meant.
  EXPECT_EQ(AgentOf(Analyze("change the invoice one so it runs on the 1st", list)),
            "invoice-chaser");
  // "just now" then a new sentence is no "now <verb>s".
  const IntentAnalysis again =
      Analyze("same for weekly-sales-digest",
              {User("run invoice-chaser"),
               Assistant("Done. It ran just now. Reminders were sent to 4 clients.")});
  EXPECT_EQ(again.action, Action::kExecuteTask);
  // "e.g." is no lettered list.
  const IntentAnalysis e =
      Analyze("e", {User("what do i have"),
                    Assistant("Your agents (e.g. the ones that email):\n1. invoice-chaser\n"
                              "2. weekly-sales-digest\n3. notion-standup-summary\n"
                              "4. notion-standup-summary-v2\n5. invoice-chaser-eu")});
  EXPECT_NE(AgentOf(e), "invoice-chaser-eu");
  EXPECT_FALSE(RequestAfterThanks("you're great, pause invoice-chaser").has_value());
}

TEST(EntitiesTest, MaskingLeavesChannelsAddressesAndOneWordNames) {
  const std::vector<CatalogItem> agents = {{"cert-watch", ""}, {"sync", ""}};
  EXPECT_EQ(
      MaskCatalogNames("have cert-watch post to #cert-watch and alerts@cert-watch.io", agents, "X"),
      "have X post to #cert-watch and alerts@cert-watch.io");
  EXPECT_EQ(MaskCatalogNames("sync now, then pause cert-watch.", agents, "X"),
            "sync now, then pause X.");
}

TEST(GrammarCueTest, ChangingAnAgentsSettingIsAChange) {
  EXPECT_TRUE(ChangesAnAgentSetting(Words(NormalizeText("change the schedule"))));
  EXPECT_TRUE(ChangesAnAgentSetting(Words(NormalizeText("pls adjust its threshold to 80"))));
  EXPECT_FALSE(ChangesAnAgentSetting(Words(NormalizeText("change my password"))));
  EXPECT_FALSE(ChangesAnAgentSetting(Words(NormalizeText("the schedule changed"))));
}

TEST(ReferenceTest, ThatsAllClosesInsteadOfContinuingADraft) {
  IntentAnalysis a = Analyze("nope that's all, cheers",
                             {User("can you make invoice-chaser wait 14 days"),
                              Assistant("Done, invoice-chaser now waits 14 days. Anything else?")});
  EXPECT_EQ(a.action, Action::kConversation);
}

TEST(ReferenceTest, AnOfferStaysOpenWhileTheUserAsksAboutIt) {
  const std::vector<HistoryTurn> history = {
      User("i need something that emails new customers a welcome note"),
      Assistant("Draft:\n- Trigger: a new customer in Stripe\n- Send: a welcome email from "
                "support@\nCreate it?"),
      User("does invoice-chaser use the same sender?"),
      Assistant("No, invoice-chaser sends from billing@.")};
  IntentAnalysis correction = Analyze("but send it from hello@ instead", history);
  EXPECT_EQ(correction.action, Action::kCreateAgent);
  EXPECT_EQ(correction.reference, Reference::kCorrection);
  IntentAnalysis yes = Analyze("yes, create it", history);
  EXPECT_EQ(yes.action, Action::kCreateAgent);
  EXPECT_EQ(yes.reference, Reference::kConfirmation);
}

TEST(ReferenceTest, AnElidedFollowUpRepeatsThePreviousQuestion) {
  IntentAnalysis a =
      Analyze("and last week?", {User("how many reminders did invoice-chaser send today?"),
                                 Assistant("invoice-chaser sent 14 reminders today.")});
  EXPECT_EQ(a.action, Action::kQueryInfo);
  EXPECT_EQ(AgentOf(a), "invoice-chaser");
}

TEST(ReferenceTest, ADescriptionPicksAmongAllAgentsWithoutAList) {
  IntentAnalysis a =
      Analyze("no, not that one, the overdue one",
              {User("what does the digest do?"),
               Assistant("weekly-sales-digest emails the closed deals of the week.")});
  EXPECT_EQ(AgentOf(a), "invoice-chaser");
  EXPECT_EQ(a.action, Action::kQueryInfo);
}

TEST(ReferenceTest, RoutingMetadataBeatsReadingTheText) {
  HistoryTurn offer = Assistant("Shall I?");
  offer.action = Action::kUpdateAgent;
  offer.pending_action = true;
  offer.entities = {{"agent_name", "weekly-sales-digest"}, {"schedule", "every friday"}};
  IntentAnalysis a = Analyze("yes", {offer});
  EXPECT_EQ(a.action, Action::kUpdateAgent);
  EXPECT_EQ(AgentOf(a), "weekly-sales-digest");
  EXPECT_EQ(a.entities["schedule"], "every friday");

  HistoryTurn list = Assistant("Here they are.");
  list.listed_agents = {"invoice-chaser", "weekly-sales-digest"};
  EXPECT_EQ(AgentOf(Analyze("run the second one", {list})), "weekly-sales-digest");
}

LocalResult Local(std::string message, std::vector<HistoryTurn> history = {},
                  std::vector<CatalogItem> agents = Agents()) {
  IntentRequest request;
  request.message = std::move(message);
  request.history = std::move(history);
  request.agents = std::move(agents);
  return Analyzer().Analyze(request);
}

TEST(ReferenceTest, TheWordsOfAnAgentsNameAskForNothing) {
  const std::vector<CatalogItem> agents = {
      {"delete-old-files", "Removes files older than 90 days from the shared drive."},
      {"nightly-backup-check", "Verifies the backups each night."},
      {"daily-standup-digest", "Posts the standup summary every morning."}};
  // "delete" is the agent's name, not a request to delete.
  const IntentAnalysis skip = Local("delete-old-files should also skip pdfs", {}, agents).analysis;
  EXPECT_EQ(skip.action, Action::kUpdateAgent);
  EXPECT_EQ(AgentOf(skip), "delete-old-files");
  // "check" is the agent's name: "and X too" repeats the pause.
  const IntentAnalysis also = Local("and nightly-backup-check too",
                                    {User("pause daily-standup-digest"),
                                     Assistant("Done — daily-standup-digest is paused.")},
                                    agents)
                                  .analysis;
  EXPECT_EQ(also.action, Action::kManagePlatform);
  EXPECT_EQ(AgentOf(also), "nightly-backup-check");
  // "daily" is the agent's name, not a schedule.
  EXPECT_FALSE(
      Local("pause daily-standup-digest", {}, agents).analysis.entities.contains("schedule"));
}

// The confidence the rule tables give `rule`; nullopt for the model's answers.
std::optional<float> TableConfidence(std::string_view rule) {
  for (const auto& r : FastPathRules()) {
    if (r.name == rule) return r.confidence;
  }
  for (const auto& r : ReferenceRules()) {
    if (r.name == rule) return r.confidence;
  }
  return std::nullopt;
}

TEST(RuleTableTest, NamesAreUniqueSnakeCaseAndConfidencesInRange) {
  std::set<std::string_view> names;
  auto check = [&](std::string_view name, float confidence) {
    EXPECT_TRUE(names.insert(name).second) << "duplicate rule " << name;
    EXPECT_TRUE(!name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || c == '_';
    })) << name;
    EXPECT_GE(confidence, 0.0f) << name;
    EXPECT_LE(confidence, 1.0f) << name;
  };
  for (const auto& r : FastPathRules()) check(r.name, r.confidence);
  for (const auto& r : ReferenceRules()) check(r.name, r.confidence);
  EXPECT_EQ(names.size(), 24u);
}

struct RuleCase {
  std::string message;
  std::vector<HistoryTurn> history;
  std::string_view rule;
  Action action;
};

std::vector<HistoryTurn> ListHistory() {
  return {User("what agents do i have?"),
          Assistant("You have three:\n1. weekly-sales-digest\n2. invoice-chaser\n"
                    "3. notion-standup-summary")};
}

std::vector<HistoryTurn> OfferToCreate() {
  return {User("our standup notes never reach the managers"),
          Assistant("I can set up an agent that posts the Notion standup summary to #managers "
                    "every Monday at 9. Want me to create it?")};
}

std::vector<HistoryTurn> InvoiceQuestion() {
  return {User("how many reminders did invoice-chaser send today?"),
          Assistant("invoice-chaser sent 14 reminders today.")};
}

TEST(RuleTableTest, EachRuleAnswersItsPhraseWithItsConfidence) {
  const std::vector<RuleCase> cases = {
      {"?!", {}, "empty_message", Action::kUnknown},
      {"@invoice-chaser the overdue ones from march", {}, "addressed_agent", Action::kExecuteTask},
      {"where were we?", InvoiceQuestion(), "recap", Action::kConversation},
      {"nope that's all, cheers",
       {User("can you make invoice-chaser wait 14 days"),
        Assistant("Done, invoice-chaser now waits 14 days. Anything else?")},
       "closing",
       Action::kConversation},
      {"yes, as a reusable skill", OfferToCreate(), "confirm_offer_as_skill", Action::kCreateSkill},
      {"yes, do that", OfferToCreate(), "confirm_offer", Action::kCreateAgent},
      {"no thanks",
       {Assistant("Want me to run weekly-sales-digest now?")},
       "decline_offer",
       Action::kConversation},
      {"run the second one", ListHistory(), "pick_by_ordinal", Action::kExecuteTask},
      {"pause the overdue one", ListHistory(), "pick_by_description", Action::kManagePlatform},
      {"no, not that one, the overdue one",
       {User("what does the digest do?"),
        Assistant("weekly-sales-digest emails the closed deals of the week.")},
       "pick_among_agents",
       Action::kQueryInfo},
      {"actually make it weekly",
       {User("i want something that sends our MRR numbers to the founders"),
        Assistant("Here's a draft:\n- Source: Stripe\n- Schedule: every day at 8:00\n"
                  "- Delivery: email to the founders list\nShould I create it?")},
       "draft_correction",
       Action::kCreateAgent},
      {"same for weekly-sales-digest", InvoiceQuestion(), "same_for_named_agent",
       Action::kQueryInfo},
      {"do the same for yesterday", InvoiceQuestion(), "same_again_on_last_agent",
       Action::kQueryInfo},
      {"and last week?", InvoiceQuestion(), "follow_up_detail", Action::kQueryInfo},
      {"shorten it to 50 words",
       {User("draft a note to the team about friday's outage"),
        Assistant("Draft: \"Hi all, the billing service was down for 40 minutes on Friday; no "
                  "data was lost and the invoices went out on Saturday.\"")},
       "task_on_assistant_output",
       Action::kExecuteTask},
      {"pause it", InvoiceQuestion(), "pronoun_to_last_agent", Action::kManagePlatform},
      {"ok put it back to how it was", InvoiceQuestion(), "change_from_history",
       Action::kUpdateAgent},
      {"leave the overdue march reminders out",
       {User("invoice-chaser keeps reminding people about march invoices"),
        Assistant("Yes, invoice-chaser reminds about every overdue invoice, march included.")},
       "edit_of_agent_in_play",
       Action::kUpdateAgent},
      {"run the sales digest anyway", {}, "named_agent_with_verb", Action::kExecuteTask},
      {"build me something that emails our stripe revenue to the founders",
       {},
       "model",
       Action::kCreateAgent},
  };
  for (const RuleCase& c : cases) {
    const LocalResult r = Local(c.message, c.history);
    EXPECT_EQ(r.rule, c.rule) << c.message << ": " << r.analysis.reasoning;
    EXPECT_EQ(r.analysis.action, c.action) << c.message << ": " << r.analysis.reasoning;
    EXPECT_THAT(r.analysis.reasoning, ::testing::EndsWith("[rule: " + std::string(c.rule) + "]"));
    if (std::optional<float> confidence = TableConfidence(c.rule)) {
      EXPECT_EQ(r.analysis.confidence, *confidence) << c.rule;
    }
  }
}

TEST(RuleTableTest, APronounStandsForWhatTheAssistantGaveOnlyWithoutAnAgentInTheExchange) {
  const std::vector<HistoryTurn> draft = {
      User("draft a note to the team about friday's outage"),
      Assistant("Draft: \"Hi all, the billing service was down for 40 minutes on Friday; no data "
                "was lost and the invoices went out on Saturday.\"")};
  EXPECT_EQ(Local("print it for the notice board", draft).rule, "task_on_assistant_output");
  EXPECT_NE(Local("love it", draft).rule, "task_on_assistant_output");
  // invoice-chaser was asked about by name: "it" is the agent.
  EXPECT_NE(Local("run it again", InvoiceQuestion()).rule, "task_on_assistant_output");
}

TEST(RuleTableTest, SwitchingOffOnlySomeOfTheTimeIsAChange) {
  EXPECT_EQ(Local("stop it sending between 10pm and 6am", InvoiceQuestion()).analysis.action,
            Action::kUpdateAgent);
  EXPECT_EQ(Local("pause it at weekends", InvoiceQuestion()).analysis.action, Action::kUpdateAgent);
  EXPECT_EQ(Local("pause it until monday", InvoiceQuestion()).analysis.action,
            Action::kManagePlatform);
}

TEST(RuleTableTest, AnUnmistakableImperativeOverridesAnUnsureModel) {
  for (const char* text : {"turn off the standup summary until january", "connect notion"}) {
    const LocalResult r = Local(text, {}, {});
    EXPECT_EQ(r.rule, "model_imperative_cue") << text << ": " << r.analysis.reasoning;
    EXPECT_EQ(r.analysis.action, Action::kManagePlatform) << text;
    EXPECT_GE(r.analysis.confidence, 0.6f) << text;
  }
}

TEST(RuleTableTest, AFastPathRuleAnswersBeforeTheHistoryIsRead) {
  // An open offer would make "yes" a confirmation; "@agent" comes first.
  const LocalResult r = Local("@weekly-sales-digest yes", OfferToCreate());
  EXPECT_EQ(r.rule, "addressed_agent");
  EXPECT_EQ(r.analysis.source, Source::kFastPath);
  EXPECT_EQ(r.analysis.reference, Reference::kNone);
}

std::vector<std::string>& LogLines() {
  static std::vector<std::string> lines;
  return lines;
}

TEST(RuleTableTest, TheServiceLogsTheRuleThatAnswered) {
  core::InitLogging("intent", "debug");
  core::SetLogSinkForTesting([](const std::string& line) { LogLines().push_back(line); });
  core::MetricsRegistry metrics;
  const IntentService service(Analyzer(), nullptr, {}, {}, metrics);
  IntentRequest request;
  request.message = "pause it";
  request.history = InvoiceQuestion();
  request.agents = Agents();
  ASSERT_TRUE(service.Analyze(request).ok());
  core::SetLogSinkForTesting(nullptr);
  core::InitLogging("intent", "info");
  ASSERT_EQ(LogLines().size(), 1u);
  EXPECT_THAT(LogLines()[0], HasSubstr(R"("msg":"intent analysed")"));
  EXPECT_THAT(LogLines()[0], HasSubstr(R"("rule":"pronoun_to_last_agent")"));
  EXPECT_THAT(LogLines()[0], HasSubstr(R"("source":"local_model")"));
}

// Whichever layer answers, the analysis says what its action acts on
// (action_details.h); those details of an earlier analysis, stored with a
// turn's routing, are no entities of that turn's action.
TEST(ActionDetailsTest, TheServiceSaysWhatTheActionActsOnAndNeverReadsItBack) {
  core::MetricsRegistry metrics;
  const IntentService service(Analyzer(), nullptr, {}, {}, metrics);
  IntentRequest request;
  request.message = "delete invoice-chaser";
  request.agents = Agents();
  const absl::StatusOr<IntentAnalysis> deleted = service.Analyze(request);
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(deleted->action, Action::kManagePlatform);
  EXPECT_EQ(deleted->entities.at("operation"), "delete");

  HistoryTurn offer = Assistant("Want me to set up a new agent that pulls from notion?");
  offer.action = Action::kCreateAgent;
  offer.entities = {{"topic", "agents"}, {"suggested_name", "some-name"}};
  request.history = {User("our notion updates take hours"), offer};
  request.message = "yes, do that";
  const absl::StatusOr<IntentAnalysis> confirmed = service.Analyze(request);
  ASSERT_TRUE(confirmed.ok());
  EXPECT_EQ(confirmed->reference, Reference::kConfirmation);
  EXPECT_EQ(confirmed->entities.at("data_source"), "notion") << "read from the offer's words";
  EXPECT_FALSE(confirmed->entities.contains("topic"));
  EXPECT_NE(confirmed->entities.at("suggested_name"), "some-name");
}

TEST(AmbiguityTest, ClarifyingQuestionNamesBothActionsAndTheEntities) {
  const std::string q = ClarifyingQuestion(Action::kCreateAgent, Action::kUpdateAgent,
                                           {{"agent_name", "weekly-sales-digest"},
                                            {"data_source", "notion"},
                                            {"schedule", "every monday"}});
  EXPECT_EQ(q,
            "Should I set up a new agent for notion that runs every monday, or change "
            "weekly-sales-digest?");
}

TEST(AmbiguityTest, LowConfidenceAnswersAreFlaggedWithTheRunnerUp) {
  // Whatever the model says about a borderline message, the flags agree with
  // its numbers.
  for (const char* text : {"the digest", "hmm reports", "sales stuff again"}) {
    IntentRequest request;
    request.message = text;
    LocalResult r = Analyzer().Analyze(request);
    const auto ranked = Shipped().Predict(text);
    const bool close =
        ranked[0].probability < 0.45f || ranked[0].probability - ranked[1].probability < 0.12f;
    EXPECT_EQ(r.analysis.is_ambiguous, close) << text;
    if (close) {
      EXPECT_FALSE(r.analysis.clarifying_question.empty());
      EXPECT_TRUE(r.needs_llm);
    }
  }
}

TEST(VerbActionTest, MapsVerbsAboutExistingAgents) {
  EXPECT_EQ(VerbAction("please run it"), Action::kExecuteTask);
  EXPECT_EQ(VerbAction("kill that one"), Action::kManagePlatform);
  EXPECT_EQ(VerbAction("why did it fail"), Action::kQueryInfo);
  EXPECT_EQ(VerbAction("make it weekly"), Action::kUpdateAgent);
  EXPECT_EQ(VerbAction("remove maria from it"), Action::kUpdateAgent);
  EXPECT_EQ(VerbAction("create a skill for pdfs"), Action::kCreateSkill);
  EXPECT_EQ(VerbAction("create a project for the launch"), Action::kManagePlatform);
  EXPECT_EQ(VerbAction("hello"), std::nullopt);
}

// The normalized words of `text`, kept alive for the views.
struct NormalizedWords {
  explicit NormalizedWords(std::string_view text) : normalized(NormalizeText(text)) {}
  std::vector<std::string_view> words() const { return Words(normalized); }
  std::string normalized;
};

TEST(GrammarCueTest, AQuestionAboutHowThingsStandAsksForNoWork) {
  for (const char* text :
       {"hey, did the lead scorer touch the enterprise accounts last night",
        "has the crm sync failed again this week", "who's in the ops project right now",
        "which connections would break if i rotated the stripe key",
        "quick q: is the payout bot on", "the churn digest, sent or not",
        "the lead router, working or not?"}) {
    EXPECT_TRUE(AsksHowThingsStand(NormalizedWords(text).words())) << text;
  }
  for (const char* text :
       {"is it possible for the churn digest to show revenue at risk",
        "is there a way to get pinged when a big invoice goes unpaid",
        "are you able to understand voice notes", "who can delete agents should be only the owners",
        "does the digest skip holidays? please make it", "do the quarterly export for finance",
        "have the triage bot cc the on-call lead",
        "we're moving to the annual plan, switch us over", "could you check the payout bot"}) {
    EXPECT_FALSE(AsksHowThingsStand(NormalizedWords(text).words())) << text;
  }
}

TEST(GrammarCueTest, AVerbOfNamingWithANameRenames) {
  auto naming = [](std::string_view text) {
    return NamingAction(NormalizedWords(text).words(), text);
  };
  EXPECT_EQ(naming("call the forecast bot \"pipeline-pulse\""), Action::kUpdateAgent);
  EXPECT_EQ(naming("please call the hiring flow candidate-tracker"), Action::kUpdateAgent);
  EXPECT_EQ(naming("name the churn thing \xE2\x80\x9Cretention watch\xE2\x80\x9D"),
            Action::kUpdateAgent);
  EXPECT_EQ(naming("call the marketing project \"growth q3\""), Action::kManagePlatform);
  EXPECT_EQ(naming("call me \"sam\" from now on"), std::nullopt);                    // a person
  EXPECT_EQ(naming("call the supplier about the late order"), std::nullopt);         // no name
  EXPECT_EQ(naming("make the bot \"friendlier\" and call it daily"), std::nullopt);  // not first
}

TEST(GrammarCueTest, TakingSomethingOutOfWhatAnAgentSendsChangesTheAgent) {
  for (const char* text : {"drop marco from the recipients", "remove finance from the board digest",
                           "cut the sales team from the weekly summary",
                           "please exclude test accounts from it "
                           "and from the revenue report"}) {
    EXPECT_TRUE(RemovesFromAgentOutput(NormalizedWords(text).words())) << text;
  }
  for (const char* text :
       {"remove priya from the workspace", "remove the hubspot connection from the ops team",
        "pull the summary from the board digest", "drop the digest"}) {
    EXPECT_FALSE(RemovesFromAgentOutput(NormalizedWords(text).words())) << text;
  }
}

TEST(GrammarCueTest, ALastingChangeWithoutAOneOffMarker) {
  EXPECT_TRUE(AsksStandingChange(
      NormalizedWords("send the expense summary to the finance lead going forward").words()));
  EXPECT_TRUE(AsksStandingChange(
      NormalizedWords("post the churn digest in #retention instead of dming me").words()));
  EXPECT_FALSE(AsksStandingChange(
      NormalizedWords("post the launch notes in #general today instead").words()));
  EXPECT_FALSE(
      AsksStandingChange(NormalizedWords("just this once, share it in notion instead").words()));
  EXPECT_FALSE(AsksStandingChange(NormalizedWords("send the expense summary").words()));
}

TEST(GrammarCueTest, AnOrderToPassSomethingOnWithNoTriggerIsDoneOnce) {
  for (const char* text :
       {"dm every new joiner the handbook link", "ask the regional leads for their monthly numbers",
        "please text each driver on tomorrow's route the new pickup time"}) {
    EXPECT_TRUE(IsOneShotOrder(NormalizedWords(text).words())) << text;
  }
  for (const char* text :
       {"email the on-call engineer whenever the error rate spikes",
        "remind the team every friday to log their hours",
        "message the buyer as soon as the shipment is delayed",
        "send me a bot that reads the support inbox", "a weekly email to the founders"}) {
    EXPECT_FALSE(IsOneShotOrder(NormalizedWords(text).words())) << text;
  }
}

TEST(RuleTableTest, TheGrammarOfTheMessageOverridesTheModelsReading) {
  struct Case {
    const char* text;
    Action action;
    std::string_view rule;
  };
  for (const Case& c :
       {Case{"has the crm sync failed again this week", Action::kQueryInfo, "model_question"},
        Case{"who's in the ops project right now", Action::kQueryInfo, "model_question"},
        Case{"call the hiring flow candidate-tracker", Action::kUpdateAgent, "model_naming"},
        Case{"remove legal from the contract report", Action::kUpdateAgent,
             "model_removal_from_output"},
        Case{"send the expense summary to the finance lead going forward", Action::kUpdateAgent,
             "model_standing_change"},
        Case{"dm every new joiner the handbook link", Action::kExecuteTask,
             "model_one_shot_order"}}) {
    const LocalResult r = Local(c.text, {}, {});
    EXPECT_EQ(r.analysis.action, c.action) << c.text << ": " << r.analysis.reasoning;
    EXPECT_EQ(r.rule, c.rule) << c.text;
    EXPECT_GE(r.analysis.confidence, 0.6f) << c.text;
  }
}

TEST(KeywordTest, FallsBackOnPlainKeywords) {
  EXPECT_EQ(ClassifyByKeywords("please pause the bot")->action, Action::kManagePlatform);
  EXPECT_EQ(ClassifyByKeywords("create an agent that automates invoices")->action,
            Action::kCreateAgent);
  EXPECT_FALSE(ClassifyByKeywords("zxqv blorp").has_value());
}

}  // namespace
}  // namespace omniforge::intent
