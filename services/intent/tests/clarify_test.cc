// The clarify-or-proceed decision (clarify.h) and the follow-up cues
// (followup_cues.h), on hand-written conversations: no model, no server.
#include "services/intent/src/clarify.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>

#include "services/intent/src/followup_cues.h"
#include "services/intent/src/send_slots.h"
#include "services/intent/src/text.h"

namespace omniforge::intent {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

IntentRequest Request(std::string message, std::vector<std::string> agents = {},
                      const std::vector<std::pair<Role, std::string>>& history = {}) {
  IntentRequest r;
  r.message = std::move(message);
  for (std::string& name : agents) r.agents.push_back({std::move(name), ""});
  for (const auto& [role, content] : history) {
    r.history.push_back({.role = role, .content = content});
  }
  return r;
}

ClarifyDecision Decide(const IntentRequest& request, Action action,
                       std::optional<std::string> agent = std::nullopt,
                       Reference reference = Reference::kNone) {
  return DecideClarification({.request = request,
                              .action = action,
                              .agent_name = std::move(agent),
                              .reference = reference});
}

TEST(ClarifyTest, AThisWithNothingToStandForAsksWhatIsMeant) {
  const IntentRequest request = Request("who can see this?", {"ticket-triage", "csat-weekly"});
  const ClarifyDecision d = Decide(request, Action::kQueryInfo);
  EXPECT_TRUE(d.clarification.needed);
  EXPECT_THAT(d.clarification.missing, ElementsAre(MissingSlot::kReferent));
  EXPECT_THAT(d.conditions, Contains("unbound_deictic"));
  EXPECT_THAT(d.question, HasSubstr("referring to"));
}

TEST(ClarifyTest, TheHistoryBindsAPronoun) {
  const IntentRequest request = Request(
      "run it again", {"supplier-order-check", "closing-checklist-bot"},
      {{Role::kUser, "how did supplier-order-check do this morning?"},
       {Role::kAssistant, "It flagged 2 shortfalls: 6kg of salmon and 2 cases of lemons."}});
  EXPECT_FALSE(Decide(request, Action::kExecuteTask, "supplier-order-check").clarification.needed);
}

TEST(ClarifyTest, MaterialInTheMessageBindsThis) {
  const IntentRequest request =
      Request("translate this into french: Your new card will arrive within 5 working days.");
  EXPECT_FALSE(Decide(request, Action::kExecuteTask).clarification.needed);
}

TEST(ClarifyTest, SomethingOnlyTheUserHasSeenIsAReferent) {
  const IntentRequest request =
      Request("make the grading bot use the rubric we agreed in the department meeting",
              {"grading-assistant", "lesson-plan-helper"});
  const ClarifyDecision d = Decide(request, Action::kUpdateAgent, "grading-assistant");
  EXPECT_TRUE(d.clarification.needed);
  EXPECT_THAT(d.clarification.missing, Contains(MissingSlot::kReferent));
  EXPECT_THAT(d.conditions, Contains("unbound_description"));
}

TEST(ClarifyTest, ThePastOfAConversationThereIsNotAsksWhatIsMeant) {
  const std::vector<std::string> agents = {"route-planner", "crm-cleaner"};
  const ClarifyDecision d =
      Decide(Request("redo the thing from before", agents), Action::kExecuteTask);
  EXPECT_TRUE(d.clarification.needed);
  EXPECT_THAT(d.clarification.missing, Contains(MissingSlot::kReferent));
  EXPECT_TRUE(Decide(Request("can you do the same as yesterday", agents), Action::kExecuteTask)
                  .clarification.needed);
  // A history that names the agent it was about binds it.
  const IntentRequest bound =
      Request("redo the thing from before then", agents,
              {{Role::kUser, "route-planner ran last night?"},
               {Role::kAssistant, "It tried at 20:00 but failed: the orders export was empty."}});
  const ClarifyDecision b = Decide(bound, Action::kExecuteTask, "route-planner");
  EXPECT_FALSE(b.clarification.needed) << b.conditions.front();
}

TEST(ClarifyTest, LastWeeksVersionOfSomethingUnseenIsAReferent) {
  const IntentRequest request = Request("copy last week's configuration onto loyalty-mailer",
                                        {"loyalty-mailer", "stock-alert"});
  const ClarifyDecision d = Decide(request, Action::kManagePlatform, "loyalty-mailer");
  EXPECT_TRUE(d.clarification.needed);
  EXPECT_THAT(d.clarification.missing, Contains(MissingSlot::kReferent));
}

TEST(ClarifyTest, FiguresInTheHistoryAreNoUsual) {
  const IntentRequest request =
      Request("ok send the usual to the Brennan account", {"client-doc-chaser", "bank-recon"},
              {{Role::kUser, "how many clients owe documents?"},
               {Role::kAssistant, "17 clients still owe at least one document for 2026."}});
  EXPECT_TRUE(Decide(request, Action::kExecuteTask).clarification.needed);
}

TEST(ClarifyTest, BulletsAndDaysInTheHistoryNameNobodyForThem) {
  const IntentRequest request =
      Request("forward the summary to them", {"weekly-sales-digest", "quota-tracker"},
              {{Role::kUser, "summarize the call notes: 12% discount, legal review by friday"},
               {Role::kAssistant, "Summary:\n- 12% discount agreed\n- Legal review due Friday"}});
  const ClarifyDecision d = Decide(request, Action::kExecuteTask);
  EXPECT_TRUE(d.clarification.needed);
  EXPECT_THAT(d.clarification.missing, Contains(MissingSlot::kRecipient));
}

TEST(ClarifyTest, WhoTheHistoryMessagesGetsIt) {
  const IntentRequest request =
      Request("Message them now, dont wait till thursday", {"volunteer-shift-filler"},
              {{Role::kUser, "which weekend shifts are still empty?"},
               {Role::kAssistant, "3 are empty. It will message volunteers on Thursday."}});
  EXPECT_FALSE(Decide(request, Action::kExecuteTask).clarification.needed);
}

TEST(ClarifyTest, ADescriptionTheHistoryShowsIsBound) {
  const IntentRequest request = Request(
      "use the rubric we agreed for the grading bot", {"grading-assistant"},
      {{Role::kUser, "here is the rubric: clarity 40%, evidence 40%, style 20%"},
       {Role::kAssistant, "Got it, that rubric has three criteria weighted 40, 40 and 20."}});
  EXPECT_FALSE(Decide(request, Action::kUpdateAgent, "grading-assistant").clarification.needed);
}

TEST(ClarifyTest, ANewAgentWithNoPurposeAsksWhatItShouldDo) {
  const ClarifyDecision d =
      Decide(Request("build me an agent for the warehouse team"), Action::kCreateAgent);
  EXPECT_THAT(d.clarification.missing, ElementsAre(MissingSlot::kPurpose));
  EXPECT_THAT(d.question, HasSubstr("What should the new agent do?"));
}

TEST(ClarifyTest, ANewAgentThatSaysWhatItDoesProceeds) {
  EXPECT_FALSE(Decide(Request("an agent that emails late invoices to the accounts inbox"),
                      Action::kCreateAgent)
                   .clarification.needed);
  EXPECT_FALSE(
      Decide(Request("every friday post the open pull requests to #eng"), Action::kCreateAgent)
          .clarification.needed);
}

// A chore told as a problem says what a new agent would take over; the
// same words without the trouble do not.
TEST(ClarifyTest, AChoreToldAsAProblemIsAPurpose) {
  EXPECT_FALSE(
      Decide(Request("our Monday Notion updates take hours — can you help?"), Action::kCreateAgent)
          .clarification.needed);
  EXPECT_FALSE(Decide(Request("the stock counts for the shops are always done manually"),
                      Action::kCreateAgent)
                   .clarification.needed);
  EXPECT_TRUE(Decide(Request("can you help with our Monday Notion updates?"), Action::kCreateAgent)
                  .clarification.needed);
}

TEST(ClarifyTest, AChangeWithNothingToChangeAsksWhatChanges) {
  const IntentRequest request =
      Request("the stock watcher needs a bit of a rework", {"stock-watcher", "refund-tracker"});
  const ClarifyDecision d = Decide(request, Action::kUpdateAgent, "stock-watcher");
  EXPECT_THAT(d.clarification.missing, ElementsAre(MissingSlot::kChange));
}

TEST(ClarifyTest, AChangeThatSaysWhatProceeds) {
  const IntentRequest request =
      Request("the stock watcher should skip items marked discontinued", {"stock-watcher"});
  EXPECT_FALSE(Decide(request, Action::kUpdateAgent, "stock-watcher").clarification.needed);
}

TEST(ClarifyTest, SeveralAgentsFittingOffersThemAsCandidates) {
  const IntentRequest request =
      Request("pause the alerts until monday", {"stock-alert", "delay-alert", "weekly-digest"});
  const ClarifyDecision d = Decide(request, Action::kManagePlatform);
  EXPECT_THAT(d.clarification.missing, Contains(MissingSlot::kAgent));
  EXPECT_THAT(d.clarification.candidates, ElementsAre("stock-alert", "delay-alert"));
  EXPECT_THAT(d.question, HasSubstr("stock-alert or delay-alert"));
}

TEST(ClarifyTest, OneAgentFittingIsResolved) {
  const IntentRequest request =
      Request("has the report gone out today?", {"bed-occupancy-report", "shift-swap-notifier"});
  const ClarifyDecision d = Decide(request, Action::kQueryInfo);
  EXPECT_FALSE(d.clarification.needed);
  EXPECT_EQ(d.resolved_agent, "bed-occupancy-report");
}

TEST(ClarifyTest, ASendToAKindOfPersonAsksWho) {
  const IntentRequest request = Request(
      "great, send it to the client", {"quote-builder"},
      {{Role::kUser, "draft a quote for 3 seats on the Pro plan"},
       {Role::kAssistant, "Quote Q-1042: 3 Pro seats, annual, list $5,400, total $4,860 a year."}});
  const ClarifyDecision d = Decide(request, Action::kExecuteTask, "quote-builder");
  EXPECT_THAT(d.clarification.missing, ElementsAre(MissingSlot::kRecipient));
  EXPECT_EQ(d.question, "Who should get it?");
}

TEST(ClarifyTest, ANamedRecipientProceeds) {
  const IntentRequest request = Request(
      "great, send it to Maria", {"quote-builder"},
      {{Role::kAssistant, "Quote Q-1042: 3 Pro seats, annual, list $5,400, total $4,860 a year."}});
  EXPECT_FALSE(Decide(request, Action::kExecuteTask, "quote-builder").clarification.needed);
}

TEST(ClarifyTest, OneOfSeveralListedAsksWhichOne) {
  const IntentRequest request =
      Request("cancel the booking", {"meeting-room-booker"},
              {{Role::kUser, "what rooms have I got booked?"},
               {Role::kAssistant,
                "You have three bookings:\n1. Oak, Tue 10:00\n2. Birch, Wed "
                "14:00\n3. Elm, Fri 9:00"}});
  const ClarifyDecision d = Decide(request, Action::kExecuteTask, "meeting-room-booker");
  EXPECT_THAT(d.clarification.missing, Contains(MissingSlot::kObject));
}

TEST(ClarifyTest, AnswersToTheAssistantNeverAskAgain) {
  const IntentRequest request =
      Request("vendor invoice matcher", {"vendor-invoice-matcher", "expense-policy-checker"},
              {{Role::kUser, "move one of my agents to 7am"},
               {Role::kAssistant, "Which agent should run at 7am?"}});
  EXPECT_FALSE(
      Decide(request, Action::kUpdateAgent, "vendor-invoice-matcher").clarification.needed);
  const IntentRequest yes = Request("yes, do that", {}, {{Role::kAssistant, "Want me to run it?"}});
  EXPECT_FALSE(Decide(yes, Action::kExecuteTask, std::nullopt, Reference::kConfirmation)
                   .clarification.needed);
}

TEST(ClarifyTest, ApplyingTheDecisionSetsAmbiguityAndTheQuestion) {
  const IntentRequest request = Request("why is that one red");
  IntentAnalysis a;
  a.action = Action::kQueryInfo;
  a.reasoning = "The local model reads this as look up information.";
  ApplyClarification(request, a);
  EXPECT_TRUE(a.clarification.needed);
  EXPECT_TRUE(a.is_ambiguous);
  EXPECT_THAT(a.clarifying_question, HasSubstr("referring to"));
  EXPECT_THAT(a.reasoning, HasSubstr("unbound_deictic"));
}

TEST(ClarifyTest, AfterANewTopicOrThanksOnlyTheRequestIsWeighed) {
  // The history binds nothing the new topic points at.
  const IntentRequest topic =
      Request("ok thanks. btw what's this charge for?? never seen it before",
              {"standup-digest", "deploy-notifier"},
              {{Role::kUser, "what time does standup-digest run?"},
               {Role::kAssistant, "standup-digest runs every weekday at 9:00 and posts in #eng."}});
  IntentAnalysis a;
  a.action = Action::kQueryInfo;
  ApplyClarification(topic, a);
  EXPECT_TRUE(a.clarification.needed);
  EXPECT_THAT(a.clarification.missing, Contains(MissingSlot::kReferent));
  // "fix that pls" points at something nothing names.
  const IntentRequest fix = Request("can u fix that pls, its been like that since monday",
                                    {"ticket-triager", "csat-digest"});
  EXPECT_TRUE(Decide(fix, Action::kConversation).clarification.needed);
}

TEST(ClarifyTest, AThingPointedAtThatNothingShowsAsksWhateverElseTheHistoryHolds) {
  const IntentRequest letter =
      Request("and this letter — can you translate it into french for the parents?",
              {"bus-route-alerts", "attendance-watch"},
              {{Role::kUser, "pause bus-route-alerts over the winter break pls"},
               {Role::kAssistant, "Done — bus-route-alerts is paused until January 6."}});
  const ClarifyDecision d = Decide(letter, Action::kExecuteTask, "bus-route-alerts");
  EXPECT_TRUE(d.clarification.needed);
  EXPECT_THAT(d.conditions, Contains("unbound_deictic"));
  // What the history shows, a count or a clause is no such thing.
  const IntentRequest shown =
      Request("why were those two denied?", {"claim-status"},
              {{Role::kUser, "run claim-status"},
               {Role::kAssistant, "Done. 41 claims checked, 2 were denied (Patel and Gruber)."}});
  EXPECT_FALSE(Decide(shown, Action::kQueryInfo, "claim-status").clarification.needed);
  const IntentRequest chat = Request("just wanted to see what this chat thing is");
  EXPECT_FALSE(Decide(chat, Action::kConversation).clarification.needed);
}

TEST(ClarifyTest, ARecurringRequestReadsLastWeekAsItsWindow) {
  const IntentRequest weekly = Request(
      "Every Monday at 9 send me a CSV of last week's Google Ads spend broken down by campaign.",
      {"campaign-roi", "seo-rank-tracker"});
  EXPECT_FALSE(Decide(weekly, Action::kCreateAgent).clarification.needed);
  const IntentRequest copy =
      Request("copy last week's configuration onto loyalty-mailer", {"loyalty-mailer"});
  EXPECT_TRUE(Decide(copy, Action::kUpdateAgent, "loyalty-mailer").clarification.needed);
}

TEST(ClarifyTest, HandlingOrManagingSaysNoMoreThanTheTopic) {
  const IntentRequest vague = Request("need a skill for handling contracts");
  EXPECT_THAT(Decide(vague, Action::kCreateSkill).clarification.missing,
              ElementsAre(MissingSlot::kPurpose));
  const IntentRequest chasing = Request("an agent for chasing unpaid invoices");
  EXPECT_FALSE(Decide(chasing, Action::kCreateAgent).clarification.needed);
}

TEST(ClarifyTest, WhenItRunsIsNoPurposeWithoutWorkEachTime) {
  EXPECT_THAT(Decide(Request("new bot for dr patel pls, runs every morning"), Action::kCreateAgent)
                  .clarification.missing,
              ElementsAre(MissingSlot::kPurpose));
  EXPECT_TRUE(Decide(Request("create an agent that triggers whenever a new shipment is booked"),
                     Action::kCreateAgent)
                  .clarification.needed);
  EXPECT_FALSE(Decide(Request("monitor our aws bill every morning and warn me above $500"),
                      Action::kCreateAgent)
                   .clarification.needed);
  EXPECT_FALSE(
      Decide(Request("set up a daily check that all our SSL certs are valid"), Action::kCreateAgent)
          .clarification.needed);
}

TEST(ClarifyTest, APronounRightAfterAListOfSeveralAgentsAsksWhichOne) {
  const IntentRequest request =
      Request("Please make its emails shorter from now on.",
              {"donor-thank-you-sender", "lapsed-donor-nudge", "year-end-receipt-mailer"},
              {{Role::kUser, "Which agents send emails to donors?"},
               {Role::kAssistant,
                "Three: donor-thank-you-sender, lapsed-donor-nudge and year-end-receipt-mailer."}});
  const ClarifyDecision d =
      Decide(request, Action::kUpdateAgent, std::nullopt, Reference::kPronoun);
  EXPECT_THAT(d.clarification.missing, Contains(MissingSlot::kAgent));
  // A turn that settles on one of them binds "it".
  const IntentRequest settled =
      Request("pause it", {"absence-alert-text", "homework-digest-mailer"},
              {{Role::kUser, "which agents message parents?"},
               {Role::kAssistant,
                "absence-alert-text and homework-digest-mailer. Only absence-alert-text runs in "
                "the morning."}});
  EXPECT_FALSE(Decide(settled, Action::kManagePlatform, "absence-alert-text", Reference::kPronoun)
                   .clarification.needed);
}

TEST(ClarifyTest, ThatOrTheseAsTheObjectWithNothingBeforeIt) {
  EXPECT_TRUE(
      Decide(Request("Please schedule that to go out every Monday at 8 a.m."), Action::kCreateAgent)
          .clarification.needed);
  const IntentRequest these =
      Request("Please add these to the donor thank-you agent's mailing list.",
              {"donor-thank-you-sender", "lapsed-donor-nudge"});
  EXPECT_TRUE(Decide(these, Action::kUpdateAgent, "donor-thank-you-sender").clarification.needed);
  EXPECT_FALSE(Decide(Request("only admins should edit production agents, set that up"),
                      Action::kManagePlatform)
                   .clarification.needed);
}

TEST(ClarifyTest, OrdinaryRequestsOfTheRoundsReviewProceed) {
  EXPECT_FALSE(Decide(Request("create an agent that emails me this week's sales numbers every "
                              "friday"),
                      Action::kCreateAgent)
                   .clarification.needed);
  EXPECT_FALSE(Decide(Request("build an agent that tracks this year's budget and alerts me when "
                              "we go over"),
                      Action::kCreateAgent)
                   .clarification.needed);
  const IntentRequest paid =
      Request("invoice-chaser should skip clients marked vip and those who already paid",
              {"invoice-chaser", "payroll-check"});
  EXPECT_FALSE(Decide(paid, Action::kUpdateAgent, "invoice-chaser").clarification.needed);
  const IntentRequest clear = Request(
      "thanks, it's clear now", {"payroll-check", "invoice-chaser", "cert-watch"},
      {{Role::kUser, "which ones send emails?"},
       {Role::kAssistant, "payroll-check, invoice-chaser and cert-watch all send emails."}});
  EXPECT_FALSE(Decide(clear, Action::kConversation).clarification.needed);
  EXPECT_FALSE(Decide(Request("create an agent that every morning at 8 fetches the weather for "
                              "Berlin and posts it in #general"),
                      Action::kCreateAgent)
                   .clarification.needed);
}

TEST(ClarifyQuestionTest, NamesEveryMissingSlotAndTheCandidates) {
  EXPECT_EQ(
      ClarifyQuestion({MissingSlot::kObject, MissingSlot::kRecipient}, {}, Action::kExecuteTask),
      "Which one should I use, and who should get it?");
  EXPECT_EQ(ClarifyQuestion({MissingSlot::kAgent}, {"a", "b", "c"}, Action::kExecuteTask),
            "Which agent should I run? It could be a, b or c.");
  EXPECT_EQ(ClarifyQuestion({MissingSlot::kAgent}, {"a", "b"}, Action::kUpdateAgent),
            "Which agent should I change? It could be a or b.");
  EXPECT_EQ(ClarifyQuestion({MissingSlot::kAgent, MissingSlot::kObject, MissingSlot::kRecipient},
                            {}, Action::kExecuteTask),
            "Which agent should I run, which one should I use, and who should get it?");
  EXPECT_EQ(ClarifyQuestion({MissingSlot::kPurpose}, {"invoice-chaser", "receipt-scanner"},
                            Action::kCreateSkill),
            "What should the skill do? You already have invoice-chaser and receipt-scanner, if "
            "one of them comes close.");
  EXPECT_EQ(ClarifyQuestion({MissingSlot::kAgent}, {}, Action::kManagePlatform),
            "Which agent do you mean?");
}

std::vector<std::string_view> WordsOf(const std::string& normalized) { return Words(normalized); }

TEST(FollowupCuesTest, CorrectedValueIsTheNewValueAsWritten) {
  EXPECT_EQ(CorrectedValue("sorry, I meant the March report"), "the March report");
  EXPECT_EQ(CorrectedValue("Janet Kim, not Ortiz"), "Janet Kim");
  EXPECT_EQ(CorrectedValue("hmm i meant 2 hours not 2 days"), "2 hours");
  EXPECT_EQ(CorrectedValue("yes, but at 9am"), "at 9am");
  EXPECT_EQ(CorrectedValue("Oh not the curators, send it to the education team"),
            "to the education team");
  EXPECT_EQ(CorrectedValue("yes please"), "");
}

TEST(FollowupCuesTest, CorrectionsAndRefusals) {
  const std::string correction = NormalizeText("sorry, I meant the March report");
  EXPECT_TRUE(IsCorrection(WordsOf(correction)));
  const std::string question = NormalizeText("why is the digest not running");
  EXPECT_FALSE(IsCorrection(WordsOf(question)));
  const std::string refusal = NormalizeText("hmm no, not right now");
  EXPECT_TRUE(OpensWithRefusal(WordsOf(refusal)));
  const std::string redirect = NormalizeText("no, send it to the finance channel instead");
  EXPECT_FALSE(OpensWithRefusal(WordsOf(redirect)));
  for (const char* declined :
       {"already sorted on their end, thanks anyway", "thx but no", "meh, leave it, pushy works",
        "not necessary, we'll see it monthly", "we'll cross that bridge when we get there"}) {
    const std::string text = NormalizeText(declined);
    EXPECT_TRUE(OpensWithRefusal(WordsOf(text))) << declined;
  }
  const std::string edit = NormalizeText("no thanks, but add the staff list");
  EXPECT_FALSE(OpensWithRefusal(WordsOf(edit)));
}

TEST(ClarifyTest, AChangeThatOnlyPointsAtUnseenMaterialAsks) {
  const IntentRequest retreat =
      Request("set up manuscript-intake with the categories from the editorial retreat",
              {"manuscript-intake"});
  const ClarifyDecision ask = Decide(retreat, Action::kUpdateAgent, "manuscript-intake");
  EXPECT_THAT(ask.conditions, Contains("unbound_material"));
  const IntentRequest spring =
      Request("bring back what we had in spring", {"feed-silo-level"},
              {{Role::kUser, "what was the silo alert setting in spring?"},
               {Role::kAssistant, "From March to May, feed-silo-level alerted at 30%."}});
  EXPECT_FALSE(Decide(spring, Action::kUpdateAgent, "feed-silo-level").clarification.needed);
  const IntentRequest spelled_out =
      Request("uptime-report should exclude planned maintenance windows from the downtime numbers",
              {"uptime-report"});
  EXPECT_FALSE(Decide(spelled_out, Action::kUpdateAgent, "uptime-report").clarification.needed);
  const IntentRequest new_version =
      Request("switch repair-sla-tracker to the new targets", {"repair-sla-tracker"});
  EXPECT_TRUE(Decide(new_version, Action::kUpdateAgent, "repair-sla-tracker").clarification.needed);
  const IntentRequest talk =
      Request("nice. set up manuscript-intake with the categories from the editorial retreat",
              {"manuscript-intake"});
  EXPECT_TRUE(Decide(talk, Action::kConversation, "manuscript-intake").clarification.needed);
  const IntentRequest source =
      Request("create a skill that converts a container number to an ETA using the carrier api");
  EXPECT_FALSE(Decide(source, Action::kCreateSkill).clarification.needed);
}

TEST(ClarifyTest, AChangeWithNothingToChangeAsksUnlessTheUserSaidWhatIsWrong) {
  const IntentRequest bare = Request("kb-gap-finder needs tweaking", {"kb-gap-finder"});
  EXPECT_THAT(Decide(bare, Action::kConversation, "kb-gap-finder").clarification.missing,
              Contains(MissingSlot::kChange));
  const IntentRequest told = Request(
      "fix the onboarding bot", {"onboarding-guide-bot"},
      {{Role::kUser, "the onboarding bot sends day 3 email with a broken link to the app store"},
       {Role::kAssistant, "I see it: the day-3 email links to an old App Store URL."}});
  EXPECT_FALSE(Decide(told, Action::kUpdateAgent, "onboarding-guide-bot").clarification.needed);
  const IntentRequest asked =
      Request("make route-planner better", {"route-planner"},
              {{Role::kUser, "how many stops did route-planner plan for tomorrow?"},
               {Role::kAssistant, "It planned 164 stops across 9 vans."}});
  EXPECT_TRUE(Decide(asked, Action::kUpdateAgent, "route-planner").clarification.needed);
}

TEST(ClarifyTest, AWishForANewThingWithNoPurposeAsks) {
  for (const char* wish : {"could we get an AI thing going for the volunteers?",
                           "I'd like an agent for the new EU rules coming in",
                           "actually, build a thing for the patients"}) {
    const IntentRequest request = Request(wish);
    EXPECT_THAT(Decide(request, Action::kConversation).clarification.missing,
                Contains(MissingSlot::kPurpose))
        << wish;
  }
}

TEST(ClarifyTest, AYesThatGoesOnToARequestMayStillPointAtSomethingUnseen) {
  const IntentRequest request =
      Request("yes, change hall-booking-confirm using the notes from the committee meeting",
              {"hall-booking-confirm"},
              {{Role::kUser, "thanks for yesterday"}, {Role::kAssistant, "You're welcome!"}});
  const ClarifyDecision d =
      Decide(request, Action::kUpdateAgent, "hall-booking-confirm", Reference::kConfirmation);
  EXPECT_THAT(d.clarification.missing, ElementsAre(MissingSlot::kReferent));
  const IntentRequest plain = Request("yes please go ahead", {"hall-booking-confirm"});
  EXPECT_FALSE(Decide(plain, Action::kUpdateAgent, "hall-booking-confirm", Reference::kConfirmation)
                   .clarification.needed);
}

SendSlots Slots(std::string_view message) {
  static std::deque<std::string> kept;  // the views point into these; a deque keeps them put
  kept.push_back(NormalizeText(message));
  return ReadSendSlots(Words(kept.back()), {});
}

TEST(SendSlotsTest, ReadsObjectAndRecipientFromTheSentenceShape) {
  const SendSlots forward = Slots("forward the demurrage report");
  EXPECT_TRUE(forward.found);
  EXPECT_EQ(forward.recipient, SlotFill::kNone);
  EXPECT_EQ(forward.object, SlotFill::kNamed);
  const SendSlots to = Slots("get it to the right people");
  EXPECT_EQ(to.recipient, SlotFill::kVague);
  EXPECT_EQ(to.object, SlotFill::kPronoun);
  const SendSlots two_phrases = Slots("text the pickers the thing");
  EXPECT_EQ(two_phrases.recipient, SlotFill::kNamed);
  EXPECT_EQ(two_phrases.object, SlotFill::kVague);
  const SendSlots them = Slots("email them a friendly reminder of the policy");
  EXPECT_EQ(them.recipient, SlotFill::kPronoun);
  EXPECT_EQ(them.object, SlotFill::kNamed);
  const SendSlots tell = Slots("let the 3PL know");
  EXPECT_TRUE(tell.tells);
  EXPECT_EQ(tell.recipient, SlotFill::kNamed);
  EXPECT_EQ(tell.object, SlotFill::kNone);
  EXPECT_FALSE(Slots("5 subject lines for a black friday email").found);
}

TEST(SendSlotsTest, APronounEndsAPhraseAndAPersonMayBeTheObject) {
  const std::string to_her = NormalizeText("make it warmer and then send it to her");
  const SendSlots slots = ReadSendSlots(WordsOf(to_her), {});
  EXPECT_EQ(slots.recipient, SlotFill::kPronoun);
  const std::string about = NormalizeText("email the landlord about those two");
  const SendSlots landlord = ReadSendSlots(WordsOf(about), {});
  EXPECT_EQ(landlord.recipient, SlotFill::kNamed);
  EXPECT_THAT(landlord.recipient_words, ElementsAre("landlord"));
  EXPECT_NE(landlord.object, SlotFill::kNone);
}

TEST(ClarifyTest, ThemStandsForThePeopleAListInProseNamed) {
  const IntentRequest request = Request(
      "email them the parking details", {"guest-list-builder"},
      {{Role::kUser, "who's confirmed for the gala?"},
       {Role::kAssistant, "Confirmed so far: Ana Ruiz, Tom Beck, Priya Nair and Leo Grant."}});
  EXPECT_FALSE(Decide(request, Action::kExecuteTask).clarification.needed);
}

TEST(ClarifyTest, AVagueObjectIsBoundByWhatTheAssistantGaveNotByAnyAgent) {
  const std::vector<std::pair<Role, std::string>> weather = {
      {Role::kUser, "what's the weather like in Porto tomorrow"},
      {Role::kAssistant, "Tomorrow in Porto: 19C, light rain in the afternoon."}};
  const IntentRequest file = Request("ok just send the file to Tom", {"weather-lookup"}, weather);
  EXPECT_THAT(Decide(file, Action::kExecuteTask).clarification.missing,
              Contains(MissingSlot::kObject));
  const IntentRequest share = Request("share with the whole department pls");
  EXPECT_THAT(Decide(share, Action::kExecuteTask).clarification.missing,
              Contains(MissingSlot::kObject));
}

TEST(ClarifyTest, ASendAsksForWhatNeitherTheMessageNorTheHistoryGives) {
  const IntentRequest bare = Request("share the scorecards", {"driver-scorecard"});
  const ClarifyDecision ask = Decide(bare, Action::kExecuteTask, "driver-scorecard");
  EXPECT_THAT(ask.clarification.missing, Contains(MissingSlot::kRecipient));
  const IntentRequest offered = Request(
      "share the scorecards", {"driver-scorecard"},
      {{Role::kUser, "driver-scorecard finished"},
       {Role::kAssistant, "The scorecards are ready. Share them with the depot supervisors?"}});
  EXPECT_FALSE(Decide(offered, Action::kExecuteTask, "driver-scorecard").clarification.needed);
  const IntentRequest named =
      Request("message them now", {"shift-filler"},
              {{Role::kAssistant, "Two shifts are open; Anya and Pedro are free on Saturday."}});
  EXPECT_FALSE(Decide(named, Action::kExecuteTask).clarification.needed);
  const IntentRequest tell = Request("let the 3PL know");
  EXPECT_THAT(Decide(tell, Action::kExecuteTask).clarification.missing,
              Contains(MissingSlot::kObject));
}

TEST(FollowupCuesTest, AYesCarriesAnEditInMoreForms) {
  EXPECT_TRUE(CarriesEdit("approve with the subject line 'Branch growth weekly'"));
  EXPECT_TRUE(CarriesEdit("swap Friday for Thursday, lots of us are off fridays"));
  EXPECT_TRUE(CarriesEdit("ya, wednesday evening better"));
  EXPECT_FALSE(CarriesEdit("yes please, go ahead"));
  EXPECT_EQ(CorrectedValue("swap Friday for Thursday"), "Thursday");
}

TEST(FollowupCuesTest, RecapsRelativePositionsAndTopicShifts) {
  const std::string recap = NormalizeText("how far did we get with all this?");
  EXPECT_TRUE(AsksForConversationSummary(WordsOf(recap)));
  const std::string report = NormalizeText("summarise yesterday's support tickets");
  EXPECT_FALSE(AsksForConversationSummary(WordsOf(report)));
  const std::string before = NormalizeText("the one listed before the digest");
  EXPECT_EQ(FindRelativePosition(WordsOf(before)), RelativePosition::kBefore);
  const std::string between = NormalizeText("the one between a and b");
  EXPECT_EQ(FindRelativePosition(WordsOf(between)), RelativePosition::kBetween);
  const std::string below = NormalizeText("kick off whatever sits right below the digest");
  EXPECT_EQ(FindRelativePosition(WordsOf(below)), RelativePosition::kAfter);
  const std::string predecessor = NormalizeText("number 3's predecessor, pause it");
  EXPECT_EQ(FindRelativePosition(WordsOf(predecessor)), RelativePosition::kBefore);
  const std::string in_time =
      NormalizeText("second one: run it the monday before the board meeting");
  EXPECT_FALSE(FindRelativePosition(WordsOf(in_time)).has_value());
  const std::string message = "anyway, unrelated: can agents read pdfs?";
  ASSERT_TRUE(NewTopicStart(message).has_value());
  EXPECT_EQ(message.substr(*NewTopicStart(message)), "can agents read pdfs?");
  EXPECT_FALSE(NewTopicStart("can agents read pdfs?").has_value());
}

TEST(FollowupCuesTest, ACorrectionReplacesAValueOfThePreviousRequest) {
  const std::string previous =
      NormalizeText("run stock-count-planner for the Dublin warehouse\nplanning Dublin: 38 aisles");
  const std::vector<std::string_view> before = WordsOf(previous);
  const auto replaces = [&](const char* message) {
    const std::string normalized = NormalizeText(message);
    return ReplacesPreviousValue(WordsOf(normalized), before);
  };
  EXPECT_TRUE(replaces("not the Dublin warehouse, Cork"));  // "not Y", Y was asked for
  EXPECT_TRUE(replaces("no wait, the Galway warehouse"));   // a retraction, then a new value
  EXPECT_FALSE(replaces("not the Galway one, Cork"));       // Y was never asked for
  EXPECT_FALSE(replaces("why is the Dublin warehouse not done?"));   // a question
  EXPECT_FALSE(replaces("no wait, pause the warehouse digest"));     // a new command
  EXPECT_FALSE(replaces("the Dublin warehouse is not ready yet"));   // a statement
  EXPECT_FALSE(replaces("hmm, the Dublin warehouse failed again"));  // about it, no new value
}

TEST(FollowupCuesTest, TheCorrectedValueSkipsWhatWasWrongAndFollowsIMeant) {
  EXPECT_EQ(CorrectedValue("sorry wrong person, Priyanka not Priya"), "Priyanka");
  EXPECT_EQ(CorrectedValue("uh, Slack not email"), "Slack");
  EXPECT_EQ(CorrectedValue("hmm i said kg but I meant lbs"), "lbs");
  EXPECT_EQ(CorrectedValue("meant to write 48 hours, not 24"), "48 hours");
  EXPECT_EQ(CorrectedValue("That should have been Thursday the 14th"), "Thursday the 14th");
  EXPECT_EQ(CorrectedValue("approve, only change the sender name to Harbor Dental"),
            "Harbor Dental");
  EXPECT_EQ(CorrectedValue("sure thing, make the subject 'Site visit tomorrow'"),
            "Site visit tomorrow");
  EXPECT_EQ(CorrectedValue("excuse me, the Berlin office, not Munich"), "the Berlin office");
}

TEST(FollowupCuesTest, AYesCarriesAnEditWhenAnEditingVerbGetsSomethingToWorkOn) {
  EXPECT_TRUE(CarriesEdit("go ahead, just leave out the weekend"));
  EXPECT_TRUE(CarriesEdit("yes please and cc Marta on it"));
  EXPECT_FALSE(CarriesEdit("yes go ahead and create it"));
  EXPECT_FALSE(CarriesEdit("yes, run it now"));
  EXPECT_FALSE(CarriesEdit("yep looks good to me"));
}

TEST(FollowupCuesTest, RelativePositionsCountPlacesAnchorsAndTypos) {
  const auto read = [](const std::vector<std::string_view>& words) {
    return ReadRelativePosition(words);
  };
  // A listed item right after the direction anchors it without an item word.
  const auto anchored = read({"the", "listing", "above", kListedItem});
  ASSERT_TRUE(anchored.has_value());
  EXPECT_EQ(anchored->position, RelativePosition::kBefore);
  // Unless a listed item is named first: "run X after Y" says when.
  EXPECT_FALSE(read({"run", kListedItem, "after", kListedItem}).has_value());
  const auto two_after = read({"pause", "the", "agent", "listed", "two", "after", kListedItem});
  ASSERT_TRUE(two_after.has_value());
  EXPECT_EQ(two_after->offset, 2);
  const auto typo = read({"run", "the", "one", "befor", kListedItem});
  ASSERT_TRUE(typo.has_value());
  EXPECT_EQ(typo->position, RelativePosition::kBefore);
  EXPECT_FALSE(read({"alter", "the", "one", kListedItem}).has_value());  // no letter swapped in
  // The words of a listed name are no time: "the item before driver-hours-check".
  EXPECT_TRUE(read({"the", "item", "before", kListedItem, "show", "me"}).has_value());
  EXPECT_FALSE(read({"the", "item", "before", "the", "meeting"}).has_value());
}

TEST(FollowupCuesTest, StandingInstructionsAndSelfContainedTasks) {
  const std::string standing =
      NormalizeText("every monday at 8 email each adjuster their open claims older than 60 days");
  EXPECT_TRUE(IsStandingInstruction(WordsOf(standing), standing));
  const std::string once = NormalizeText("email every student who missed the quiz a reminder");
  EXPECT_FALSE(IsStandingInstruction(WordsOf(once), once));
  const std::string task_text =
      "shorten this headline to 60 chars: Council Votes 7-2 to Approve Bike Lanes";
  const std::string task = NormalizeText(task_text);
  EXPECT_TRUE(IsSelfContainedTask(WordsOf(task), task_text));
  const std::string update_text = "invoice-chaser: stop chasing customers tagged as payment plan";
  const std::string update = NormalizeText(update_text);
  EXPECT_FALSE(IsSelfContainedTask(WordsOf(update), update_text));
}

}  // namespace
}  // namespace omniforge::intent
