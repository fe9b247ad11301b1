// A request to book a meeting read from its words: who, how long, which
// day, what time or part of the day, what kind (meeting_request.h).
#include "services/intent/src/meeting_request.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace omniforge::intent {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

TEST(MeetingRequestTest, ThirtyMinuteCallTomorrowAfternoon) {
  auto m = ReadMeetingRequest("schedule a 30-minute call with Sarah and John tomorrow afternoon");
  ASSERT_TRUE(m.has_value());
  EXPECT_THAT(m->attendees, ElementsAre("Sarah", "John"));
  EXPECT_EQ(m->duration_minutes, 30);
  EXPECT_EQ(m->day, "tomorrow");
  EXPECT_EQ(m->part_of_day, "afternoon");
  EXPECT_EQ(m->time, "");
  EXPECT_EQ(m->title, "Call");
}

TEST(MeetingRequestTest, MeetingWithFullNamesAtTwoPm) {
  auto m = ReadMeetingRequest("Set up a meeting with John Smith and Sarah tomorrow at 2pm.");
  ASSERT_TRUE(m.has_value());
  EXPECT_THAT(m->attendees, ElementsAre("John Smith", "Sarah"));
  EXPECT_EQ(m->duration_minutes, 0);
  EXPECT_EQ(m->time, "14:00");
  EXPECT_EQ(m->day, "tomorrow");
  EXPECT_EQ(m->title, "Meeting");
}

TEST(MeetingRequestTest, LengthWithoutAKindOnAWeekday) {
  auto m = ReadMeetingRequest("book 45 minutes with Priya on Friday morning");
  ASSERT_TRUE(m.has_value());
  EXPECT_THAT(m->attendees, ElementsAre("Priya"));
  EXPECT_EQ(m->duration_minutes, 45);
  EXPECT_EQ(m->day, "friday");
  EXPECT_EQ(m->part_of_day, "morning");
}

TEST(MeetingRequestTest, CommasHoursAndClockTimes) {
  auto m =
      ReadMeetingRequest("arrange an hour-long sync with Miguel, Priya Patel and Sarah at 15:30");
  ASSERT_TRUE(m.has_value());
  EXPECT_THAT(m->attendees, ElementsAre("Miguel", "Priya Patel", "Sarah"));
  EXPECT_EQ(m->time, "15:30");
  EXPECT_EQ(m->title, "Sync");
  EXPECT_EQ(ReadMeetingRequest("plan a 1 hour call with Sarah today")->duration_minutes, 60);
  EXPECT_EQ(ReadMeetingRequest("book half an hour with Sarah")->duration_minutes, 30);
}

TEST(MeetingRequestTest, NotAMeetingToBook) {
  EXPECT_FALSE(ReadMeetingRequest("schedule the sales digest for monday").has_value());
  EXPECT_FALSE(ReadMeetingRequest("I had a call with Sarah yesterday").has_value());
  EXPECT_FALSE(ReadMeetingRequest("schedule a call with the team").has_value());  // no name
  EXPECT_FALSE(ReadMeetingRequest("what is on my calendar tomorrow?").has_value());
}

TEST(MeetingRequestTest, TheTimeOfAnAnswer) {
  EXPECT_THAT(ReadMeetingTime("yes, 15:30"), UnorderedElementsAre(Pair("time", "15:30")));
  EXPECT_THAT(ReadMeetingTime("friday morning instead"),
              UnorderedElementsAre(Pair("day", "friday"), Pair("part_of_day", "morning")));
  EXPECT_TRUE(ReadMeetingTime("John Smith").empty());
}

TEST(MeetingRequestTest, AppliedToAnAnalysisAsATaskWithItsEntities) {
  IntentRequest request;
  request.message = "schedule a 30-minute call with Sarah and John tomorrow afternoon";
  IntentAnalysis analysis;
  analysis.action = Action::kCreateAgent;
  analysis.is_ambiguous = true;
  analysis.clarifying_question = "What should it do?";
  analysis.entities["suggested_name"] = "call-sarah-john";
  ApplyMeetingRequest(request, analysis);
  EXPECT_EQ(analysis.action, Action::kExecuteTask);
  EXPECT_FALSE(analysis.is_ambiguous);
  EXPECT_TRUE(analysis.clarifying_question.empty());
  EXPECT_THAT(analysis.entities,
              UnorderedElementsAre(Pair("attendees", "Sarah, John"), Pair("duration_minutes", "30"),
                                   Pair("day", "tomorrow"), Pair("part_of_day", "afternoon"),
                                   Pair("title", "Call")));

  IntentRequest agent;
  agent.message = "create an agent that books a call with Sarah every week";
  IntentAnalysis drafted;
  drafted.action = Action::kCreateAgent;
  ApplyMeetingRequest(agent, drafted);
  EXPECT_EQ(drafted.action, Action::kCreateAgent);
  EXPECT_FALSE(drafted.entities.contains("attendees"));
}

}  // namespace
}  // namespace omniforge::intent
