// The meeting flow of local mode (meeting_flow.h) on results shaped as the
// sandbox servers give them through the executor, at a fixed clock
// (Wednesday 2026-11-25 10:00 UTC; "tomorrow" is Thursday the 26th), and
// on a Saturday and a Friday evening, whose "tomorrow" is no working day.
#include "services/orchestrator/planner/meeting_flow.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace omniforge::orchestrator {
namespace {

namespace intentpb = ::omniforge::intent::v1;
using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kNow = 1795600800LL * 1000000;  // 2026-11-25T10:00:00Z, a Wednesday
const MeetingClock kClock{kNow, ""};

json Domain(json data) {
  return {{"domain", "x"}, {"tool", "t"}, {"status", "ok"}, {"data", std::move(data)}};
}

json Contacts(const std::vector<std::pair<std::string, std::string>>& matches) {
  json out = json::array();
  for (const auto& [name, email] : matches) out.push_back({{"name", name}, {"email", email}});
  return Domain({{"matches", out}, {"ambiguous", out.size() > 1}});
}

json Slots(const std::vector<std::pair<std::string, std::string>>& slots,
           json busy = json::array()) {
  json out = json::array();
  for (const auto& [start, end] : slots) {
    out.push_back({{"start", "2026-11-26T" + start + ":00+00:00"},
                   {"end", "2026-11-26T" + end + ":00+00:00"}});
  }
  return Domain({{"slots", out}, {"busy", busy}, {"time_zone", "UTC"}});
}

PolicyInput Request(const std::map<std::string, std::string>& entities, std::string message) {
  PolicyInput in;
  in.intent.set_action_type(intentpb::ACTION_TYPE_EXECUTE_TASK);
  in.intent.mutable_entities()->insert(entities.begin(), entities.end());
  in.message = std::move(message);
  return in;
}

// The flow's state after a turn's move, as the next turn finds it.
FlowState Saved(const Move& move) {
  FlowState last;
  last.action_type = move.action_type;
  last.entities = move.entities;
  last.asked = move.asked;
  last.listed_agents = move.listed_agents;
  last.clarifications = move.clarifying ? 1 : 0;
  return last;
}

PolicyInput Answer(const Move& asked, const std::string& message, int option,
                   intentpb::ReplyKind kind, std::map<std::string, std::string> said = {}) {
  const FlowState last = Saved(asked);
  intentpb::IntentAnalysis heard;
  heard.mutable_reply()->set_kind(kind);
  heard.mutable_reply()->set_option(option);
  heard.mutable_entities()->insert(said.begin(), said.end());
  PolicyInput in;
  in.intent = MeetingAnswer(last, heard, message);
  in.message = message;
  in.goal = "schedule";
  in.last = last;
  return in;
}

// Runs the flow's turn, answering each call from `answers` in order.
Move Turn(const PolicyInput& in, std::vector<json> answers, std::vector<ToolStep>* calls,
          const MeetingClock& clock = kClock) {
  EXPECT_TRUE(IsMeetingTurn(in));
  MeetingState m = MeetingAtStart(in);
  for (size_t i = 0;; ++i) {
    MeetingStep step = NextMeetingStep(m, clock);
    if (!step.call) return step.move;
    calls->push_back(*step.call);
    if (i >= answers.size()) {
      ADD_FAILURE() << "unexpected call " << step.call->tool << step.call->arguments.dump();
      return {};
    }
    TakeMeetingResult(m, *step.call, answers[i], false, clock);
  }
}

const std::map<std::string, std::string> kTwoPm = {{"attendees", "Sarah, John"},
                                                   {"duration_minutes", "30"},
                                                   {"day", "tomorrow"},
                                                   {"time", "14:00"},
                                                   {"title", "Call"}};

TEST(MeetingFlowTest, TwoJohnsAskedThenConflictThenAlternativesThenPreview) {
  std::vector<ToolStep> calls;
  const Move asked = Turn(
      Request(kTwoPm, "schedule"),
      {Contacts({{"Sarah Chen", "sarah.chen@example.com"}}),
       Contacts({{"John Doe", "john.doe@example.net"}, {"John Smith", "john.smith@example.com"}})},
      &calls);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].arguments["query"], "Sarah");
  EXPECT_EQ(calls[1].arguments["query"], "John");
  EXPECT_TRUE(asked.clarifying);
  EXPECT_EQ(asked.asked, kAskedMeeting);
  EXPECT_THAT(asked.reply, HasSubstr("Which John do you mean?"));
  EXPECT_THAT(asked.reply, HasSubstr("2. John Smith (john.smith@example.com)"));
  EXPECT_THAT(asked.listed_agents, ElementsAre("John Doe", "John Smith"));
  EXPECT_TRUE(asked.propose.empty());

  // "the second one": John Smith; 14:00 is taken.
  calls.clear();
  const json busy = json::array({{{"who", "you"},
                                  {"title", "Design review"},
                                  {"start", "2026-11-26T14:00:00+00:00"},
                                  {"end", "2026-11-26T15:00:00+00:00"}},
                                 {{"who", "john.smith@example.com"},
                                  {"start", "2026-11-26T13:00:00+00:00"},
                                  {"end", "2026-11-26T14:00:00+00:00"}}});
  // The day's busy time: the alternatives are the free half hours nearest
  // to 14:00 (the slots themselves are packed on the quarter hour).
  json day_busy = busy;
  day_busy.push_back({{"who", "you"},
                      {"title", "Team standup"},
                      {"start", "2026-11-26T09:30:00+00:00"},
                      {"end", "2026-11-26T09:45:00+00:00"}});
  day_busy.push_back({{"who", "sarah.chen@example.com"},
                      {"start", "2026-11-26T15:00:00+00:00"},
                      {"end", "2026-11-26T15:30:00+00:00"}});
  const Move when =
      Turn(Answer(asked, "the second one", 2, intentpb::REPLY_KIND_ANSWER),
           {Slots({{"15:30", "16:00"}}, busy),
            Slots({{"09:00", "09:30"}, {"12:15", "12:45"}, {"15:30", "16:00"}}, day_busy)},
           &calls);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].tool, "calendar__find_free_slots");
  EXPECT_EQ(calls[0].arguments["attendees"],
            json::array({"sarah.chen@example.com", "john.smith@example.com"}));
  EXPECT_EQ(calls[0].arguments["window_start"], "2026-11-26T14:00:00+00:00");
  EXPECT_EQ(calls[0].arguments["window_end"], "2026-11-26T14:30:00+00:00");
  EXPECT_EQ(calls[1].arguments["window_start"], "2026-11-26T09:00:00+00:00");
  EXPECT_THAT(when.reply,
              HasSubstr("is taken: it overlaps your event \"Design review\" (14:00–15:00)"));
  EXPECT_THAT(when.listed_agents,
              ElementsAre("tomorrow (Thu 26 Nov) 15:30–16:00", "tomorrow (Thu 26 Nov) 12:30–13:00",
                          "tomorrow (Thu 26 Nov) 16:00–16:30"));
  EXPECT_TRUE(when.propose.empty());

  // "yes, 15:30": the booking is proposed, nothing booked.
  calls.clear();
  const Move preview = Turn(
      Answer(when, "yes, 15:30", 2, intentpb::REPLY_KIND_APPROVE, {{"time", "15:30"}}), {}, &calls);
  EXPECT_TRUE(calls.empty());
  ASSERT_EQ(preview.propose.size(), 1u);
  const PendingAction& booking = preview.propose[0];
  EXPECT_EQ(booking.tool, "calendar__create_event");
  EXPECT_EQ(booking.risk, ::omniforge::executor::v1::TOOL_RISK_WRITE);
  EXPECT_EQ(booking.arguments["title"], "Call with Sarah Chen and John Smith");
  EXPECT_EQ(booking.arguments["start"], "2026-11-26T15:30:00+00:00");
  EXPECT_EQ(booking.arguments["end"], "2026-11-26T16:00:00+00:00");
  EXPECT_THAT(preview.reply, HasSubstr("Ready to book \"Call with Sarah Chen and John Smith\" for "
                                       "tomorrow (Thu 26 Nov) 15:30–16:00 (UTC) with Sarah Chen "
                                       "and John Smith."));
  EXPECT_FALSE(preview.clarifying);
}

TEST(MeetingFlowTest, PartOfDayTakesTheFirstFreeSlotAndProposesIt) {
  std::vector<ToolStep> calls;
  const Move move =
      Turn(Request({{"attendees", "Priya"},
                    {"duration_minutes", "45"},
                    {"day", "tomorrow"},
                    {"part_of_day", "afternoon"},
                    {"title", "Meeting"}},
                   "book"),
           {Contacts({{"Priya Patel", "priya.patel@example.org"}}), Slots({{"13:00", "13:45"}})},
           &calls);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[1].arguments["window_start"], "2026-11-26T12:00:00+00:00");
  EXPECT_EQ(calls[1].arguments["window_end"], "2026-11-26T17:00:00+00:00");
  EXPECT_EQ(calls[1].arguments["duration_minutes"], 45);
  ASSERT_EQ(move.propose.size(), 1u);
  EXPECT_THAT(move.reply, HasSubstr("The first time everyone is free tomorrow afternoon is "
                                    "tomorrow (Thu 26 Nov) 13:00–13:45."));
}

TEST(MeetingFlowTest, WeekdayIsTheNextOneAndTheZoneIsTheUsers) {
  std::vector<ToolStep> calls;
  PolicyInput in = Request(
      {{"attendees", "Priya"}, {"day", "friday"}, {"part_of_day", "morning"}, {"title", "Meeting"}},
      "book");
  MeetingState m = MeetingAtStart(in);
  TakeMeetingResult(m, {"contacts__find_contacts"}, Contacts({{"Priya Patel", "p@example.org"}}),
                    false, kClock);
  const MeetingClock paris{kNow, "Europe/Paris"};
  const MeetingStep step = NextMeetingStep(m, paris);
  ASSERT_TRUE(step.call.has_value());
  EXPECT_EQ(step.call->arguments["window_start"], "2026-11-27T09:00:00+01:00");
  EXPECT_EQ(step.call->arguments["window_end"], "2026-11-27T12:00:00+01:00");
  EXPECT_EQ(step.call->arguments["duration_minutes"], 30);
}

TEST(MeetingFlowTest, ATimeAlreadyPastIsSaidAndLaterTimesOffered) {
  std::vector<ToolStep> calls;
  const Move move =
      Turn(Request({{"attendees", "Priya"}, {"day", "today"}, {"time", "09:00"}, {"title", "Call"}},
                   "book"),
           {Contacts({{"Priya Patel", "priya.patel@example.org"}}), Slots({}),
            Domain({{"slots", json::array()}, {"busy", json::array()}})},
           &calls);
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_THAT(move.reply, HasSubstr("today (Wed 25 Nov) 09:00–09:30 has already begun."));
  // Now is 10:00: the nearest free half hours from then on.
  EXPECT_THAT(move.listed_agents,
              ElementsAre("today (Wed 25 Nov) 10:00–10:30", "today (Wed 25 Nov) 10:30–11:00",
                          "today (Wed 25 Nov) 11:00–11:30"));
}

TEST(MeetingFlowTest, UnknownNameIsAskedAndTheAnswerLookedUp) {
  std::vector<ToolStep> calls;
  const Move asked =
      Turn(Request({{"attendees", "Zed"}, {"title", "Call"}}, "schedule"), {Contacts({})}, &calls);
  EXPECT_THAT(asked.reply, HasSubstr("I couldn't find \"Zed\" among your contacts"));
  EXPECT_TRUE(asked.clarifying);
  calls.clear();
  const Move next = Turn(
      Answer(asked, "Miguel Alvarez", 0, intentpb::REPLY_KIND_NEW_REQUEST),
      {Contacts({{"Miguel Alvarez", "miguel.alvarez@example.com"}}), Slots({{"12:00", "12:30"}})},
      &calls);
  EXPECT_EQ(calls[0].arguments["query"], "Miguel Alvarez");
  ASSERT_EQ(next.propose.size(), 1u);
  EXPECT_EQ(next.propose[0].arguments["attendees"], json::array({"miguel.alvarez@example.com"}));
}

TEST(MeetingFlowTest, NoDropsTheMeetingAndAFailureIsSaid) {
  std::vector<ToolStep> calls;
  const Move asked =
      Turn(Request(kTwoPm, "schedule"),
           {Contacts({{"Sarah Chen", "s@example.com"}}),
            Contacts({{"John Doe", "d@example.net"}, {"John Smith", "j@example.com"}})},
           &calls);
  calls.clear();
  const Move dropped = Turn(Answer(asked, "no", 0, intentpb::REPLY_KIND_REJECT), {}, &calls);
  EXPECT_EQ(dropped.reply, "All right, nothing is booked.");
  EXPECT_TRUE(dropped.propose.empty());

  PolicyInput in = Request(kTwoPm, "schedule");
  MeetingState m = MeetingAtStart(in);
  TakeMeetingResult(m, {"contacts__find_contacts"},
                    {{"status", "error"}, {"limitations", {"the database is unavailable"}}}, true,
                    kClock);
  EXPECT_THAT(NextMeetingStep(m, kClock).move.reply,
              HasSubstr("contacts__find_contacts failed: the database is unavailable"));
}

TEST(MeetingFlowTest, AChangeToTheBookingFindsTheTimeAnew) {
  std::vector<ToolStep> calls;
  const Move preview =
      Turn(Request({{"attendees", "Priya"},
                    {"day", "tomorrow"},
                    {"part_of_day", "afternoon"},
                    {"title", "Call"}},
                   "book"),
           {Contacts({{"Priya Patel", "priya.patel@example.org"}}), Slots({{"13:00", "13:30"}})},
           &calls);
  FlowState last = Saved(preview);
  last.pending = preview.propose;
  intentpb::IntentAnalysis said;
  (*said.mutable_entities())["time"] = "16:00";
  std::optional<MeetingState> changed = MeetingChanged(last, said);
  ASSERT_TRUE(changed.has_value());
  EXPECT_EQ(changed->at("time"), "16:00");
  EXPECT_FALSE(changed->contains("part_of_day"));
  const MeetingStep step = NextMeetingStep(*changed, kClock);
  ASSERT_TRUE(step.call.has_value());
  EXPECT_EQ(step.call->arguments["window_start"], "2026-11-26T16:00:00+00:00");
  EXPECT_EQ(step.call->arguments["attendees"], json::array({"priya.patel@example.org"}));

  EXPECT_FALSE(MeetingChanged(last, intentpb::IntentAnalysis{}).has_value());  // nothing said
  last.pending.clear();
  EXPECT_FALSE(MeetingChanged(last, said).has_value());  // no booking waits
}

TEST(MeetingFlowTest, NotAMeetingTurnWithoutAttendeesOrInAnotherFlow) {
  PolicyInput in = Request({{"agent_name", "digest"}}, "run digest");
  EXPECT_FALSE(IsMeetingTurn(in));
  in = Request(kTwoPm, "thanks");
  in.last = FlowState{};
  in.goal = "schedule a call";
  EXPECT_FALSE(IsMeetingTurn(in));
}

TEST(MeetingFlowTest, BookedEventInWords) {
  const json booked = Domain({{"event",
                               {{"id", "event-1"},
                                {"title", "Call with Sarah Chen"},
                                {"start", "2026-11-26T15:30:00+00:00"},
                                {"end", "2026-11-26T16:00:00+00:00"},
                                {"attendees", {"sarah.chen@example.com"}}}}});
  EXPECT_EQ(DescribeMeetingResult({"calendar__create_event"}, booked, false),
            "Booked \"Call with Sarah Chen\" on 2026-11-26 15:30–16:00 (+00:00) with "
            "sarah.chen@example.com. It is in your calendar (event-1).");
  EXPECT_EQ(DescribeMeetingResult({"list_agents"}, booked, false), "");
  const json conflict = {{"status", "error"},
                         {"data", {{"error", {{"code", "conflict"}, {"message", "overlaps"}}}}}};
  EXPECT_EQ(DescribeMeetingResult({"calendar__create_event"}, conflict, true),
            "It was not booked: overlaps");
}

// Saturday 2026-11-28 10:00 UTC and Friday 2026-11-27 19:00 UTC.
const MeetingClock kSaturday{1795860000LL * 1000000, ""};
const MeetingClock kFridayEvening{1795806000LL * 1000000, ""};

// A free-slot answer whose busy time is `busy` ({start, end} in UTC, on
// any day), with no slots: the flow reads the days' free times from it.
json Busy(const std::vector<std::pair<std::string, std::string>>& busy) {
  json out = json::array();
  for (const auto& [start, end] : busy) {
    out.push_back({{"who", "you"}, {"title", "Busy"}, {"start", start}, {"end", end}});
  }
  return Domain({{"slots", json::array()}, {"busy", out}, {"time_zone", "UTC"}});
}

const std::map<std::string, std::string> kPriyaTomorrowAtTwo = {
    {"attendees", "Priya"}, {"day", "tomorrow"}, {"time", "14:00"}, {"title", "Call"}};

TEST(MeetingFlowTest, TomorrowOnASaturdayIsSundayTheNearestWorkingDayTimesAreOffered) {
  std::vector<ToolStep> calls;
  const Move asked = Turn(Request(kPriyaTomorrowAtTwo, "book"),
                          {Contacts({{"Priya Patel", "priya.patel@example.org"}}),
                           Busy({{"2026-11-30T13:00:00+00:00", "2026-11-30T14:00:00+00:00"}})},
                          &calls, kSaturday);
  ASSERT_EQ(calls.size(), 2u);
  // No call over Sunday: the working days after it, for a week.
  EXPECT_EQ(calls[1].arguments["window_start"], "2026-11-30T09:00:00+00:00");
  EXPECT_EQ(calls[1].arguments["window_end"], "2026-12-06T18:00:00+00:00");
  EXPECT_THAT(asked.reply, HasSubstr("Sunday (29 Nov) is not a working day. The nearest free "
                                     "times are on Monday (30 Nov)."));
  // Monday, nearest to 14:00 (13:00-14:00 is busy).
  EXPECT_THAT(asked.listed_agents, ElementsAre("Mon 30 Nov 14:00–14:30", "Mon 30 Nov 14:30–15:00",
                                               "Mon 30 Nov 15:00–15:30"));
  EXPECT_TRUE(asked.propose.empty());

  // "yes, 14:30": that option, on Monday.
  calls.clear();
  const Move preview =
      Turn(Answer(asked, "yes, 14:30", 1, intentpb::REPLY_KIND_APPROVE, {{"time", "14:30"}}), {},
           &calls, kSaturday);
  ASSERT_EQ(preview.propose.size(), 1u);
  EXPECT_EQ(preview.propose[0].arguments["start"], "2026-11-30T14:30:00+00:00");

  // A time not offered is checked on the day the options were for.
  calls.clear();
  const Move other =
      Turn(Answer(asked, "16:00", 0, intentpb::REPLY_KIND_ANSWER, {{"time", "16:00"}}),
           {Slots({}), Busy({})}, &calls, kSaturday);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].arguments["window_start"], "2026-11-30T16:00:00+00:00");
  EXPECT_THAT(other.listed_agents, ::testing::Contains("Mon 30 Nov 16:30–17:00"));
}

TEST(MeetingFlowTest, OnAFridayEveningNoDayIsMondayAndTomorrowMorningIsOfferedOnMonday) {
  std::vector<ToolStep> calls;
  const Move first = Turn(
      Request({{"attendees", "Priya"}, {"title", "Call"}}, "book"),
      {Contacts({{"Priya Patel", "priya.patel@example.org"}}),
       Domain(
           {{"slots",
             {{{"start", "2026-11-30T09:00:00+00:00"}, {"end", "2026-11-30T09:30:00+00:00"}}}}})},
      &calls, kFridayEvening);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[1].arguments["window_start"], "2026-11-30T09:00:00+00:00");
  ASSERT_EQ(first.propose.size(), 1u);

  calls.clear();
  const Move morning = Turn(Request({{"attendees", "Priya"},
                                     {"day", "tomorrow"},
                                     {"part_of_day", "morning"},
                                     {"title", "Call"}},
                                    "book"),
                            {Contacts({{"Priya Patel", "priya.patel@example.org"}}),
                             Busy({{"2026-11-30T09:00:00+00:00", "2026-11-30T11:30:00+00:00"}})},
                            &calls, kFridayEvening);
  EXPECT_THAT(morning.reply, HasSubstr("Saturday (28 Nov) is not a working day. The nearest free "
                                       "times are on Monday (30 Nov)."));
  // Monday morning's free half hours, then Tuesday morning's earliest.
  EXPECT_THAT(morning.listed_agents, ElementsAre("Mon 30 Nov 11:30–12:00", "Tue 1 Dec 09:00–09:30",
                                                 "Tue 1 Dec 09:30–10:00"));
}

TEST(MeetingFlowTest, AWorkingDayWithNoFreeTimeOffersTheFollowingDays) {
  std::vector<ToolStep> calls;
  const Move asked = Turn(Request({{"attendees", "Priya"},
                                   {"day", "tomorrow"},
                                   {"part_of_day", "afternoon"},
                                   {"title", "Call"}},
                                  "book"),
                          {Contacts({{"Priya Patel", "priya.patel@example.org"}}), Slots({}),
                           Busy({{"2026-11-27T09:00:00+00:00", "2026-11-27T18:00:00+00:00"}})},
                          &calls);
  ASSERT_EQ(calls.size(), 3u);
  // Thursday afternoon is full; Friday is busy all day: Monday afternoon.
  EXPECT_EQ(calls[2].arguments["window_start"], "2026-11-27T09:00:00+00:00");
  EXPECT_THAT(asked.reply, HasSubstr("There is no free time for Priya Patel and you tomorrow "
                                     "afternoon. The nearest free times are on Monday (30 Nov)."));
  EXPECT_THAT(asked.listed_agents, ElementsAre("Mon 30 Nov 12:00–12:30", "Mon 30 Nov 12:30–13:00",
                                               "Mon 30 Nov 13:00–13:30"));
}

TEST(MeetingFlowTest, ATimeOutsideWorkingHoursIsSaidAndTheDaysTimesOffered) {
  std::vector<ToolStep> calls;
  const Move asked = Turn(
      Request({{"attendees", "Priya"}, {"day", "tomorrow"}, {"time", "20:00"}, {"title", "Call"}},
              "book"),
      {Contacts({{"Priya Patel", "priya.patel@example.org"}}), Busy({})}, &calls);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[1].arguments["window_start"], "2026-11-26T09:00:00+00:00");
  EXPECT_THAT(asked.reply, HasSubstr("20:00 on Thursday (26 Nov) is outside working hours"));
  EXPECT_THAT(asked.listed_agents,
              ElementsAre("tomorrow (Thu 26 Nov) 17:30–18:00", "tomorrow (Thu 26 Nov) 17:00–17:30",
                          "tomorrow (Thu 26 Nov) 16:30–17:00"));
}

}  // namespace
}  // namespace omniforge::orchestrator
