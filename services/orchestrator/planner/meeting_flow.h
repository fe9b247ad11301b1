// The meeting flow of local mode: "schedule a 30-minute call with Sarah and
// John tomorrow afternoon" booked over the calendar and contacts domain
// tools, turn by turn through the flow's state.
//
//   1. each attendee the intent service read (`attendees`) is looked up
//      with contacts__find_contacts: two or more matches are offered as
//      numbered options ("Which John do you mean?"); none: the user is
//      told and asked who they mean;
//   2. a requested time (`day`, `time`) is checked with
//      calendar__find_free_slots over exactly that time; when someone is
//      busy, what conflicts is named and up to three free times of the
//      same day in working hours (09:00-18:00) are offered, the nearest to
//      the requested time first (of two as near, the later). A part of the
//      day (`part_of_day`), or no time at all, takes the first free slot;
//   3. the booking, calendar__create_event (WRITE), is proposed: the
//      approval gate previews it (title, time, attendees) and books it on
//      the user's "yes", or drops it on "no".
//
// The flow reads no words of the user's: what is asked for is the intent
// service's reading (the attendees, duration_minutes, day, time,
// part_of_day and title entities), an answer is the option the service
// read or the day and time it found; a name given in answer is looked up
// by the contacts tool as written. The flow's progress is kept in the
// flow's entities (the keys below), so any replica goes on with it.
//
// Pure functions: no I/O, deterministic given the clock, thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "omniforge/intent/v1/intent_service.pb.h"
#include "services/orchestrator/flow/flow_state.h"
#include "services/orchestrator/flow/move.h"
#include "services/orchestrator/planner/local_policy.h"

namespace omniforge::orchestrator {

// What a clarifying question of the meeting flow asks for (Move::asked):
// which contact, or which time.
inline constexpr char kAskedMeeting[] = "meeting";

// The meeting's state as the flow's entities hold it: the intent's
// entities of the request, and what the flow found so far.
using MeetingState = std::map<std::string, std::string>;

// The moment and zone "today" and "tomorrow" are read in (the user's time
// zone; UTC when empty or unknown).
struct MeetingClock {
  int64_t now_micros = 0;
  std::string time_zone;
};

// One step of a turn of the flow: a READ call to run (its result goes to
// TakeMeetingResult, then NextMeetingStep again), or the turn's move.
struct MeetingStep {
  std::optional<ToolStep> call;
  Move move;
};

// True when this turn starts a meeting flow (an EXECUTE_TASK with
// attendees) or answers the flow's own question.
bool IsMeetingTurn(const PolicyInput& input);

// The meeting's state at the start of the turn: a new request's entities,
// or the flow's state with the answer to its question applied (the option
// picked, a time, a name to look up).
MeetingState MeetingAtStart(const PolicyInput& input);

// The meeting's state for a change the user asked to its booking while
// the booking waits for approval ("make it 4pm instead", "friday morning
// instead"): the flow's state with the day, time or part of the day
// `said` (the intent service's reading of this reply) gives, and the time
// to be found anew. nullopt when `last` is no meeting waiting for its
// booking's approval or `said` gives none of the three.
std::optional<MeetingState> MeetingChanged(const FlowState& last,
                                           const ::omniforge::intent::v1::IntentAnalysis& said);

// The next step of the turn. Updates `meeting` with what the step asks.
MeetingStep NextMeetingStep(MeetingState& meeting, const MeetingClock& clock);

// Takes in the result of `call` (as the executor returns a domain tool's
// result: {"status", "data", ...}, or an error result).
void TakeMeetingResult(MeetingState& meeting, const ToolStep& call, const nlohmann::json& result,
                       bool is_error, const MeetingClock& clock);

// The analysis of the user's answer to the flow's question: the flow's
// action and state, with what `heard` (the intent service's analysis of
// the answer) read: the option it picked, whether it approves or declines,
// a day, time or part of the day; and the answer as written, for the
// contacts tool to look up when the question was about a contact.
::omniforge::intent::v1::IntentAnalysis MeetingAnswer(
    const FlowState& last, const ::omniforge::intent::v1::IntentAnalysis& heard,
    const std::string& message);

// True for the keys of the flow's own progress in its entities (which
// contacts were found, the options offered, the time chosen): state to
// carry, not what the user said.
bool IsMeetingProgress(const std::string& key);

// The words for a booked event (or a booking refused), for the reply after
// an approved calendar__create_event; empty for any other tool.
std::string DescribeMeetingResult(const ToolStep& step, const nlohmann::json& result,
                                  bool is_error);

}  // namespace omniforge::orchestrator
