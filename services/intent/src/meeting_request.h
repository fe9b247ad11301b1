// A request to book a meeting ("schedule a 30-minute call with Sarah and
// John tomorrow afternoon", "set up a meeting with John Smith and Sarah
// tomorrow at 2pm", "book 45 minutes with Priya on Friday morning"), read
// from the message's words for a caller that books without a model of its
// own (the orchestrator's meeting flow): who, how long, which day, what
// time or part of the day, and what it is. The same readers give the
// time, day and part of the day of an answer to a question about a
// meeting ("15:30", "friday morning instead"). Pure functions, thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "services/intent/entities/entities.h"  // the meeting entity keys
#include "services/intent/src/model.h"

namespace omniforge::intent {

struct MeetingRequest {
  // The names after "with", as written ("John Smith", "Sarah"), in order.
  std::vector<std::string> attendees;
  int duration_minutes = 0;  // 0: not said
  std::string day;           // today, tomorrow or a weekday, lower case; empty: not said
  std::string time;          // HH:MM on the 24-hour clock; empty: not said
  std::string part_of_day;   // morning, afternoon or evening; empty: not said
  std::string title;         // the kind of meeting ("Call", "Meeting", "Sync")
};

// The meeting `message` asks to book: a verb of booking (schedule, book,
// set up, arrange, organise, plan) with a kind of meeting or a length, and
// at least one name after "with". nullopt for anything else.
std::optional<MeetingRequest> ReadMeetingRequest(std::string_view message);

// The day, time and part of the day `message` names, as entities (only
// those it names): what an answer to a question about a meeting gives.
std::map<std::string, std::string> ReadMeetingTime(std::string_view message);

// The entities of `request` (attendees joined with ", "; a field not said
// is left out).
std::map<std::string, std::string> MeetingEntities(const MeetingRequest& request);

// Sets in `analysis` (once its action and details are settled) what a
// meeting request asks: EXECUTE_TASK, sure and unambiguous, with the
// meeting's entities and no agent, question or draft details. A message
// about an agent or a recurring schedule ("an agent that books a call with
// Sarah every week") is not a meeting to book. A reply to what is pending
// (a question, or actions previewed: "make it 4pm instead") gets the day,
// time and part of the day it names.
void ApplyMeetingRequest(const IntentRequest& request, IntentAnalysis& analysis);

}  // namespace omniforge::intent
