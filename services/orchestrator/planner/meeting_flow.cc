#include "services/orchestrator/planner/meeting_flow.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <tuple>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "libs/core/ids.h"
#include "services/intent/entities/entities.h"
#include "services/orchestrator/planner/domain_flow.h"

namespace omniforge::orchestrator {

namespace {

namespace intentpb = ::omniforge::intent::v1;
namespace execpb = ::omniforge::executor::v1;
using nlohmann::json;

// The flow's own keys in the state (beside the intent's entities).
constexpr char kPeople[] = "meeting_people";    // JSON [{name, email}] resolved, in order
constexpr char kNext[] = "meeting_next";        // the attendee looked up next (from 0)
constexpr char kQuery[] = "meeting_query";      // what to look that attendee up by instead
constexpr char kStage[] = "meeting_stage";      // what the question asks: kStageWho or kStageWhen
constexpr char kOptions[] = "meeting_options";  // JSON: the options the question offered
constexpr char kSlot[] = "meeting_slot";        // JSON {start, end}: the time to book
constexpr char kPhase[] = "meeting_phase";      // what the free-slot call running asks
constexpr char kFound[] = "meeting_found";      // words on how the time was found
constexpr char kFailed[] = "meeting_failed";    // a tool's failure, in words
constexpr char kStageWho[] = "who";
constexpr char kStageWhen[] = "when";
// The answer to the flow's question (MeetingAnswer).
constexpr char kPicked[] = "meeting_option";  // the option's position from 1
constexpr char kVerdict[] = "meeting_reply";  // approve, reject, or empty
constexpr char kAnswer[] = "meeting_answer";  // the answer as written
constexpr flows::ContactKeys kContacts{kPeople, kNext, kQuery, kStage, kOptions, kStageWho};

using flows::AndList;
using flows::At;
using flows::DataOf;
using flows::FailureWords;
using flows::JsonAt;

constexpr int kDefaultMinutes = 30;
constexpr int kWorkStartHour = 9;
constexpr int kWorkEndHour = 18;
constexpr int kAlternatives = 3;
// Calendar days after the wanted day searched for free times when that day
// has none (or is no working day): a working week.
constexpr int kLaterDays = 7;

int Minutes(const MeetingState& m) {
  const int minutes = std::atoi(At(m, intent::kDurationMinutesEntity).c_str());
  return minutes >= 5 && minutes <= 480 ? minutes : kDefaultMinutes;
}

absl::TimeZone ZoneOf(const MeetingClock& clock) {
  absl::TimeZone zone = absl::UTCTimeZone();
  if (!clock.time_zone.empty() && !absl::LoadTimeZone(clock.time_zone, &zone)) {
    zone = absl::UTCTimeZone();
  }
  return zone;
}

std::string Rfc3339(absl::Time t, absl::TimeZone zone) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%S%Ez", t, zone);
}

std::optional<absl::Time> ParseRfc3339(const std::string& text) {
  absl::Time t;
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, text, &t, &error)) return std::nullopt;
  return t;
}

// Monday to Friday: the days of working hours (as the sandbox's calendar
// keeps them).
bool IsWorkingDay(absl::CivilDay day) {
  const absl::Weekday weekday = absl::GetWeekday(day);
  return weekday != absl::Weekday::saturday && weekday != absl::Weekday::sunday;
}

absl::CivilDay NextWorkingDay(absl::CivilDay day) {
  do {
    ++day;
  } while (!IsWorkingDay(day));
  return day;
}

// The day the meeting is on: today, tomorrow, the next such weekday (never
// today) or a date (2026-11-30, as the flow keeps a day it offered); with
// none said, today while working hours last on a working day, else the
// next working day. A day said is kept even when it is no working day:
// the flow says so and offers the following working days.
absl::CivilDay MeetingDay(const MeetingState& m, const MeetingClock& clock) {
  const absl::TimeZone zone = ZoneOf(clock);
  const absl::CivilSecond now = absl::ToCivilSecond(absl::FromUnixMicros(clock.now_micros), zone);
  const absl::CivilDay today(now);
  const std::string day = At(m, intent::kDayEntity);
  if (day == "today") return today;
  if (day == "tomorrow") return today + 1;
  if (absl::CivilDay date; absl::ParseCivilTime(day, &date)) return date;
  static constexpr const char* kWeekdays[] = {"monday", "tuesday",  "wednesday", "thursday",
                                              "friday", "saturday", "sunday"};
  for (int i = 0; i < 7; ++i) {
    if (day != kWeekdays[i]) continue;
    for (int ahead = 1; ahead <= 7; ++ahead) {
      if (static_cast<int>(absl::GetWeekday(today + ahead)) == i) return today + ahead;
    }
  }
  return IsWorkingDay(today) && now.hour() < kWorkEndHour - 1 ? today : NextWorkingDay(today);
}

// "Sunday (29 Nov)": a day named in full, for what is said about it.
std::string DayName(absl::CivilDay day) {
  const absl::Time t = absl::FromCivil(day, absl::UTCTimeZone());
  return absl::StrReplaceAll(absl::FormatTime("%A (%e %b)", t, absl::UTCTimeZone()), {{"( ", "("}});
}

// "tomorrow (Sun 29 Nov)", "Fri 4 Dec" for the words.
std::string DayWords(absl::Time t, const MeetingClock& clock) {
  const absl::TimeZone zone = ZoneOf(clock);
  const absl::CivilDay day(absl::ToCivilSecond(t, zone));
  const absl::CivilDay today(absl::ToCivilSecond(absl::FromUnixMicros(clock.now_micros), zone));
  const std::string date = absl::FormatTime("%a %e %b", t, zone);
  std::string trimmed = absl::StrReplaceAll(date, {{"  ", " "}});
  if (day == today) return "today (" + trimmed + ")";
  if (day == today + 1) return "tomorrow (" + trimmed + ")";
  return trimmed;
}

std::string Clock(absl::Time t, const MeetingClock& clock) {
  return absl::FormatTime("%H:%M", t, ZoneOf(clock));
}

// "tomorrow (Sun 29 Nov) 15:30–16:00" for a slot {start, end}.
std::string SlotWords(const json& slot, const MeetingClock& clock) {
  const auto start = ParseRfc3339(slot.value("start", ""));
  const auto end = ParseRfc3339(slot.value("end", ""));
  if (!start || !end) return slot.value("start", "") + "–" + slot.value("end", "");
  return DayWords(*start, clock) + " " + Clock(*start, clock) + "–" + Clock(*end, clock);
}

std::string ZoneWords(const MeetingClock& clock) {
  return clock.time_zone.empty() ? "UTC" : clock.time_zone;
}

std::vector<std::string> PeopleNames(const json& people) {
  std::vector<std::string> names;
  for (const json& p : people) names.push_back(p.value("name", p.value("email", "")));
  return names;
}

std::string Title(const MeetingState& m, const json& people) {
  std::string kind = At(m, intent::kTitleEntity);
  if (kind.empty()) kind = "Meeting";
  return kind + " with " + AndList(PeopleNames(people));
}

Move BaseMove(const MeetingState& m) {
  Move move;
  move.action_type = intentpb::ACTION_TYPE_EXECUTE_TASK;
  move.entities = m;
  for (const char* key : {kPicked, kVerdict, kAnswer, kPhase}) move.entities.erase(key);
  return move;
}

Move Ask(MeetingState& m, const char* stage, const json& options, std::string question,
         std::vector<std::string> labels) {
  m[kStage] = stage;
  m[kOptions] = options.dump();
  Move move = BaseMove(m);
  move.clarifying = true;
  move.asked = kAskedMeeting;
  move.reply = std::move(question);
  move.listed_agents = std::move(labels);
  return move;
}

// Who is asked about: the attendee looked up now, as the user named them.
std::string CurrentName(const MeetingState& m) {
  return flows::CurrentName(m, flows::NamesAt(m, intent::kAttendeesEntity), kContacts);
}

}  // namespace

namespace {

// What the answer read (MeetingAnswer): a time, a day, a part of the day.
constexpr char kAnswerTime[] = "meeting_answer_time";
constexpr char kAnswerDay[] = "meeting_answer_day";
constexpr char kAnswerPart[] = "meeting_answer_part";
constexpr char kDropped[] = "dropped";

// The free-slot call of each phase (kPhase).
constexpr char kPhaseCheck[] = "check";          // is the requested time free?
constexpr char kPhaseOthers[] = "alternatives";  // the day's free times near it
constexpr char kPhaseFirst[] = "first";          // the first free time in the window
constexpr char kPhaseLater[] = "later";          // free times on the following working days

json Emails(const json& people) {
  json emails = json::array();
  for (const json& p : people) emails.push_back(p.value("email", ""));
  return emails;
}

absl::Time AtHour(absl::CivilDay day, int hour, int minute, absl::TimeZone zone) {
  return absl::FromCivil(absl::CivilMinute(day.year(), day.month(), day.day(), hour, minute), zone);
}

// The requested start ("14:00" on the meeting's day); nullopt without one.
std::optional<absl::Time> RequestedStart(const MeetingState& m, const MeetingClock& clock) {
  const std::string time = At(m, intent::kTimeEntity);
  int hour = 0;
  int minute = 0;
  if (time.size() != 5 || std::sscanf(time.c_str(), "%d:%d", &hour, &minute) != 2) {
    return std::nullopt;
  }
  return AtHour(MeetingDay(m, clock), hour, minute, ZoneOf(clock));
}

// The hours of a part of the day (morning 09-12, afternoon 12-17,
// evening 17-20), else working hours.
std::pair<int, int> PartHours(const MeetingState& m) {
  const std::string part = At(m, intent::kPartOfDayEntity);
  if (part == "morning") return {kWorkStartHour, 12};
  if (part == "afternoon") return {12, 17};
  if (part == "evening") return {17, 20};
  return {kWorkStartHour, kWorkEndHour};
}

// The window of the part of the day on the meeting's day.
std::pair<absl::Time, absl::Time> Window(const MeetingState& m, const MeetingClock& clock) {
  const auto [from, to] = PartHours(m);
  const absl::CivilDay day = MeetingDay(m, clock);
  const absl::TimeZone zone = ZoneOf(clock);
  return {AtHour(day, from, 0, zone), AtHour(day, to, 0, zone)};
}

// Whether a meeting from `start` lies within working hours of its day.
bool InWorkingHours(absl::Time start, int minutes, absl::TimeZone zone) {
  const absl::CivilDay day(absl::ToCivilSecond(start, zone));
  return start >= AtHour(day, kWorkStartHour, 0, zone) &&
         start + absl::Minutes(minutes) <= AtHour(day, kWorkEndHour, 0, zone);
}

ToolStep FreeSlots(MeetingState& m, const char* phase, absl::Time from, absl::Time to,
                   int max_results, const MeetingClock& clock) {
  m[kPhase] = phase;
  const absl::TimeZone zone = ZoneOf(clock);
  return {"calendar__find_free_slots",
          {{"attendees", Emails(JsonAt(m, kPeople, json::array()))},
           {"duration_minutes", Minutes(m)},
           {"window_start", Rfc3339(from, zone)},
           {"window_end", Rfc3339(to, zone)},
           {"max_results", max_results}}};
}

std::string WhenWords(const MeetingState& m) {
  std::string words = At(m, intent::kDayEntity);
  if (absl::CivilDay date; absl::ParseCivilTime(words, &date)) words = "on " + DayName(date);
  if (const std::string part = At(m, intent::kPartOfDayEntity); !part.empty()) {
    words += (words.empty() ? "" : " ") + part;
  }
  return words.empty() ? "that day" : words;
}

Move AskWho(MeetingState& m) {
  const json options = JsonAt(m, kOptions, json::array());
  const std::string name = CurrentName(m);
  if (options.empty()) {
    return Ask(m, kStageWho, options, flows::NotFoundQuestion(m, name, kContacts), {});
  }
  return Ask(m, kStageWho, options, flows::WhichQuestion(name, options),
             flows::ContactNames(options));
}

Move AskWhen(MeetingState& m, const MeetingClock& clock) {
  const json options = JsonAt(m, kOptions, json::array());
  std::string question = At(m, kFound);
  if (options.empty()) {
    if (question.empty()) {
      question = "There is no free time for " +
                 AndList(PeopleNames(JsonAt(m, kPeople, json::array()))) + " and you " +
                 WhenWords(m) + ".";
    }
    return Ask(m, kStageWhen, options, question + " Which other day or time should I try?", {});
  }
  question += "\nFree for everyone (" + ZoneWords(clock) + "):";
  std::vector<std::string> labels;
  for (size_t i = 0; i < options.size(); ++i) {
    const std::string label = SlotWords(options[i], clock);
    question += "\n" + std::to_string(i + 1) + ". " + label;
    labels.push_back(label);
  }
  question += "\nWhich one should I book? You can also tell me another time.";
  return Ask(m, kStageWhen, options, question, labels);
}

Move ProposeBooking(MeetingState& m, const MeetingClock& clock) {
  const json people = JsonAt(m, kPeople, json::array());
  const json slot = JsonAt(m, kSlot, json::object());
  const std::string title = Title(m, people);
  json args = {{"title", title},
               {"start", slot.value("start", "")},
               {"end", slot.value("end", "")},
               {"attendees", Emails(people)}};
  const std::string summary = "book \"" + title + "\" for " + SlotWords(slot, clock) + " (" +
                              ZoneWords(clock) + ") with " + AndList(PeopleNames(people)) + ".";
  Move move = BaseMove(m);
  const std::string found = At(m, kFound);
  move.entities.erase(kFound);
  move.reply = (found.empty() ? "" : found + "\n") + "Ready to " + summary +
               R"( Shall I go ahead? Say "yes", tell me what to change, or "cancel".)";
  move.propose.push_back(PendingAction{core::NewUuid(), "calendar__create_event", std::move(args),
                                       execpb::TOOL_RISK_WRITE, summary});
  return move;
}

// The state with the answer to the flow's question applied.
void ApplyAnswer(MeetingState& m) {
  const std::string stage = At(m, kStage);
  const json options = JsonAt(m, kOptions, json::array());
  const int picked = std::atoi(At(m, kPicked).c_str());
  const bool in_range = picked >= 1 && picked <= static_cast<int>(options.size());
  const std::string verdict = At(m, kVerdict);
  const std::string time = At(m, kAnswerTime);
  m.erase(kStage);
  m.erase(kOptions);
  if (verdict == "reject" && !in_range && time.empty()) {
    m[kStage] = kDropped;
  } else if (stage == kStageWho) {
    if (in_range) {
      json people = JsonAt(m, kPeople, json::array());
      people.push_back(options[picked - 1]);
      m[kPeople] = people.dump();
      m[kNext] = std::to_string(std::atoi(At(m, kNext).c_str()) + 1);
      m.erase(kQuery);
    } else {
      m[kQuery] = At(m, kAnswer);
    }
  } else if (stage == kStageWhen) {
    // A time named wins over an option number read from it ("yes, 15:30").
    json chosen;
    for (const json& option : options) {
      if (chosen.is_null() && !time.empty() && option.value("start", "").substr(11, 5) == time) {
        chosen = option;
      }
    }
    if (in_range && time.empty()) chosen = options[picked - 1];
    if (chosen.is_null() && time.empty() && At(m, kAnswerDay).empty() &&
        At(m, kAnswerPart).empty() && verdict == "approve" && !options.empty()) {
      chosen = options[0];
    }
    if (!chosen.is_null()) {
      // The meeting's day is now the slot's (a change to the booking, "make
      // it 4pm instead", is on that day).
      m[kSlot] = chosen.dump();
      m[intent::kDayEntity] = chosen.value("start", "").substr(0, 10);
    } else {
      // A time alone is on the day the options were offered for (the
      // working day after a weekend's, say).
      if (!options.empty()) m[intent::kDayEntity] = options[0].value("start", "").substr(0, 10);
      if (!At(m, kAnswerDay).empty()) m[intent::kDayEntity] = At(m, kAnswerDay);
      if (!time.empty()) {
        m[intent::kTimeEntity] = time;
        m.erase(intent::kPartOfDayEntity);
      } else if (!At(m, kAnswerPart).empty()) {
        m[intent::kPartOfDayEntity] = At(m, kAnswerPart);
        m.erase(intent::kTimeEntity);
      }
    }
  }
  for (const char* key : {kPicked, kVerdict, kAnswer, kAnswerTime, kAnswerDay, kAnswerPart}) {
    m.erase(key);
  }
}

}  // namespace

bool IsMeetingTurn(const PolicyInput& in) {
  const auto& entities = in.intent.entities();
  if (in.intent.action_type() != intentpb::ACTION_TYPE_EXECUTE_TASK ||
      !entities.contains(intent::kAttendeesEntity)) {
    return false;
  }
  if (in.last && in.last->asked == kAskedMeeting && entities.contains(kVerdict)) return true;
  return !in.last || in.goal.empty() || in.goal == in.message;
}

MeetingState MeetingAtStart(const PolicyInput& in) {
  MeetingState m(in.intent.entities().begin(), in.intent.entities().end());
  m.erase(kFound);
  m.erase(kFailed);
  m.erase(kPhase);
  if (in.last && in.last->asked == kAskedMeeting && m.contains(kVerdict)) {
    ApplyAnswer(m);
  } else {
    // A new request: nothing found yet.
    for (const char* key : {kPeople, kNext, kQuery, kStage, kOptions, kSlot}) m.erase(key);
  }
  return m;
}

std::optional<MeetingState> MeetingChanged(const FlowState& last,
                                           const intentpb::IntentAnalysis& said) {
  const bool booking = std::any_of(last.pending.begin(), last.pending.end(), [](const auto& a) {
    return a.tool == "calendar__create_event";
  });
  if (!booking || !last.entities.contains(kSlot)) return std::nullopt;
  MeetingState m = last.entities;
  bool changed = false;
  for (const char* key : {intent::kDayEntity, intent::kTimeEntity, intent::kPartOfDayEntity}) {
    auto it = said.entities().find(key);
    if (it == said.entities().end()) continue;
    m[key] = it->second;
    changed = true;
  }
  if (!changed) return std::nullopt;
  // A new time replaces a part of the day and the other way round.
  if (said.entities().contains(intent::kTimeEntity) &&
      !said.entities().contains(intent::kPartOfDayEntity)) {
    m.erase(intent::kPartOfDayEntity);
  } else if (!said.entities().contains(intent::kTimeEntity)) {
    m.erase(intent::kTimeEntity);
  }
  for (const char* key : {kSlot, kStage, kOptions, kPhase, kFound, kFailed}) m.erase(key);
  return m;
}

namespace {

// The free-slot call that finds the meeting's time, by phase: the time
// asked for checked; the day's other free times; the first free time of
// the part of the day; the following working days' free times, when the
// day has none or is no working day (Saturday, Sunday).
ToolStep FindTime(MeetingState& m, const MeetingClock& clock) {
  const std::optional<absl::Time> start = RequestedStart(m, clock);
  const absl::CivilDay day = MeetingDay(m, clock);
  const absl::TimeZone zone = ZoneOf(clock);
  std::string phase = At(m, kPhase);
  if (phase.empty() && !IsWorkingDay(day)) {
    m[kFound] = DayName(day) + " is not a working day.";
    phase = kPhaseLater;
  } else if (phase.empty() && start && !InWorkingHours(*start, Minutes(m), zone)) {
    m[kFound] = Clock(*start, clock) + " on " + DayName(day) +
                " is outside working hours (09:00–18:00, Monday to Friday).";
    phase = kPhaseOthers;
  }
  if (phase == kPhaseLater) {
    return FreeSlots(m, kPhaseLater, AtHour(NextWorkingDay(day), kWorkStartHour, 0, zone),
                     AtHour(day + kLaterDays, kWorkEndHour, 0, zone), 1, clock);
  }
  if (start && phase.empty()) {
    return FreeSlots(m, kPhaseCheck, *start, *start + absl::Minutes(Minutes(m)), 1, clock);
  }
  if (start && phase == kPhaseOthers) {
    return FreeSlots(m, kPhaseOthers, AtHour(day, kWorkStartHour, 0, zone),
                     AtHour(day, kWorkEndHour, 0, zone), 20, clock);
  }
  const auto [from, to] = Window(m, clock);
  return FreeSlots(m, kPhaseFirst, from, to, 1, clock);
}

}  // namespace

MeetingStep NextMeetingStep(MeetingState& m, const MeetingClock& clock) {
  MeetingStep step;
  if (At(m, kStage) == kDropped) {
    step.move = BaseMove(m);
    step.move.reply = "All right, nothing is booked.";
    return step;
  }
  if (const std::string failed = At(m, kFailed); !failed.empty()) {
    step.move = BaseMove(m);
    step.move.reply = "I could not finish the booking: " + failed;
    return step;
  }
  if (At(m, kStage) == kStageWho) {
    step.move = AskWho(m);
    return step;
  }
  if (At(m, kStage) == kStageWhen) {
    step.move = AskWhen(m, clock);
    return step;
  }
  if (const std::string name = CurrentName(m); !name.empty()) {
    step.call = flows::FindContactsCall(m, name, kContacts);
    return step;
  }
  if (!m.contains(kSlot)) {
    step.call = FindTime(m, clock);
    return step;
  }
  step.move = ProposeBooking(m, clock);
  return step;
}

namespace {

// "your event "Design review" (14:00–15:00), Sarah Chen's busy time
// (15:00–15:30)": what overlaps the requested time.
std::string Conflicts(const MeetingState& m, const json& busy, absl::Time start, absl::Time end,
                      const MeetingClock& clock) {
  std::vector<std::string> what;
  const json people = JsonAt(m, kPeople, json::array());
  for (const json& b : busy) {
    const auto from = ParseRfc3339(b.value("start", ""));
    const auto to = ParseRfc3339(b.value("end", ""));
    if (!from || !to || *from >= end || *to <= start) continue;
    const std::string span = " (" + Clock(*from, clock) + "–" + Clock(*to, clock) + ")";
    const std::string who = b.value("who", "");
    if (who == "you") {
      what.push_back("your event \"" + b.value("title", std::string("busy")) + "\"" + span);
      continue;
    }
    std::string name = who;
    for (const json& p : people) {
      if (p.value("email", "") == who) name = p.value("name", who);
    }
    what.push_back(name.append("'s busy time").append(span));
  }
  return what.empty() ? "someone's busy time" : AndList(what);
}

using Span = std::pair<absl::Time, absl::Time>;

std::vector<Span> BusySpans(const json& busy) {
  std::vector<Span> taken;
  for (const json& b : busy) {
    const auto from = ParseRfc3339(b.value("start", ""));
    const auto to = ParseRfc3339(b.value("end", ""));
    if (from && to) taken.emplace_back(*from, *to);
  }
  return taken;
}

// The free times of `day` between the hours `from` and `to` (within
// working hours) on the half hour, none in the past, given what is taken.
std::vector<Span> HalfHoursOn(absl::CivilDay day, std::pair<int, int> hours,
                              const std::vector<Span>& taken, const MeetingState& m,
                              const MeetingClock& clock) {
  std::vector<Span> out;
  const absl::TimeZone zone = ZoneOf(clock);
  const absl::Duration length = absl::Minutes(Minutes(m));
  const absl::Time now = absl::FromUnixMicros(clock.now_micros);
  const absl::Time last = AtHour(day, std::min(hours.second, kWorkEndHour), 0, zone);
  for (absl::Time t = AtHour(day, std::max(hours.first, kWorkStartHour), 0, zone);
       t + length <= last; t += absl::Minutes(30)) {
    const bool free = std::none_of(taken.begin(), taken.end(), [&](const Span& b) {
      return b.first < t + length && b.second > t;
    });
    if (free && t >= now) out.emplace_back(t, t + length);
  }
  return out;
}

// The free times of the meeting's day in working hours on the half hour
// (none in the past), from the busy time the free-slot answer listed for
// everyone; empty when it listed none.
std::vector<Span> HalfHours(const MeetingState& m, const json& busy, const MeetingClock& clock) {
  if (!busy.is_array()) return {};
  return HalfHoursOn(MeetingDay(m, clock), {kWorkStartHour, kWorkEndHour}, BusySpans(busy), m,
                     clock);
}

// Up to kAlternatives of `candidates` not overlapping each other, the
// nearest to `wanted` first; of two as near, the later.
template <typename AsJson>
json Nearest(std::vector<Span> candidates, absl::Time wanted, const AsJson& as_json) {
  std::stable_sort(candidates.begin(), candidates.end(), [&wanted](const Span& a, const Span& b) {
    const absl::Duration da = absl::AbsDuration(a.first - wanted);
    const absl::Duration db = absl::AbsDuration(b.first - wanted);
    return da != db ? da < db : a.first > b.first;
  });
  std::vector<Span> picked;
  json options = json::array();
  for (const Span& c : candidates) {
    if (picked.size() == kAlternatives) break;
    const bool overlaps = std::any_of(picked.begin(), picked.end(), [&c](const Span& p) {
      return p.first < c.second && p.second > c.first;
    });
    if (overlaps) continue;
    picked.push_back(c);
    options.push_back(as_json(c));
  }
  return options;
}

// The options on the working days after the meeting's day, from the busy
// time of the free-slot answer over them: day by day, in the part of the
// day asked for (else working hours), the nearest to the time asked for
// (else the earliest) first, up to kAlternatives. Said before them: the
// first day that has any; or that none has.
void TakeLaterTimes(MeetingState& m, const json& busy, const MeetingClock& clock) {
  const absl::TimeZone zone = ZoneOf(clock);
  const absl::CivilDay day = MeetingDay(m, clock);
  const std::vector<Span> taken = BusySpans(busy.is_array() ? busy : json::array());
  const std::string time = At(m, intent::kTimeEntity);
  int hour = kWorkStartHour;
  int minute = 0;
  const bool timed = std::sscanf(time.c_str(), "%d:%d", &hour, &minute) == 2;
  json options = json::array();
  std::optional<absl::CivilDay> first;
  for (absl::CivilDay d = NextWorkingDay(day);
       d <= day + kLaterDays && options.size() < kAlternatives; d = NextWorkingDay(d)) {
    const std::pair<int, int> hours =
        timed ? std::pair(kWorkStartHour, kWorkEndHour) : PartHours(m);
    const absl::Time wanted =
        timed ? AtHour(d, hour, minute, zone) : AtHour(d, hours.first, 0, zone);
    const json of_day =
        Nearest(HalfHoursOn(d, hours, taken, m, clock), wanted, [&zone](const Span& s) {
          return json{{"start", Rfc3339(s.first, zone)}, {"end", Rfc3339(s.second, zone)}};
        });
    if (!of_day.empty() && !first) first = d;
    for (const json& option : of_day) {
      if (options.size() < kAlternatives) options.push_back(option);
    }
  }
  std::string& found = m[kFound];
  found += found.empty() ? "" : " ";
  found += first ? "The nearest free times are on " + DayName(*first) + "."
                 : "Nothing is free for everyone on the working days of the week after either.";
  m[kStage] = kStageWhen;
  m[kOptions] = options.dump();
}

void TakeFreeSlots(MeetingState& m, const json& data, const MeetingClock& clock) {
  const std::string phase = At(m, kPhase);
  const absl::TimeZone zone = ZoneOf(clock);
  std::vector<Span> slots;
  for (const json& slot : data.value("slots", json::array())) {
    const auto from = ParseRfc3339(slot.value("start", ""));
    const auto to = ParseRfc3339(slot.value("end", ""));
    if (from && to) slots.emplace_back(*from, *to);
  }
  auto as_json = [&zone](const Span& s) {
    return json{{"start", Rfc3339(s.first, zone)}, {"end", Rfc3339(s.second, zone)}};
  };
  const std::optional<absl::Time> start = RequestedStart(m, clock);
  if (phase == kPhaseCheck && start) {
    const absl::Time end = *start + absl::Minutes(Minutes(m));
    if (!slots.empty() && slots.front().first == *start) {
      m[kSlot] = as_json(slots.front()).dump();
      m[kFound] = SlotWords(as_json(slots.front()), clock) + " is free for everyone.";
      return;
    }
    const std::string wanted =
        SlotWords(json{{"start", Rfc3339(*start, zone)}, {"end", Rfc3339(end, zone)}}, clock);
    m[kFound] = *start < absl::FromUnixMicros(clock.now_micros)
                    ? wanted + " has already begun."
                    : wanted + " is taken: it overlaps " +
                          Conflicts(m, data.value("busy", json::array()), *start, end, clock) + ".";
    m[kPhase] = kPhaseOthers;
    return;
  }
  if (phase == kPhaseOthers && start) {
    std::vector<Span> candidates = HalfHours(m, data.value("busy", json()), clock);
    if (candidates.empty()) candidates = slots;
    if (candidates.empty()) {
      m[kFound] += " Nothing else is free for everyone that day.";
      m[kPhase] = kPhaseLater;
      return;
    }
    m[kStage] = kStageWhen;
    m[kOptions] = Nearest(candidates, *start, as_json).dump();
    return;
  }
  if (phase == kPhaseLater) {
    TakeLaterTimes(m, data.value("busy", json::array()), clock);
    return;
  }
  if (!slots.empty()) {
    m[kSlot] = as_json(slots.front()).dump();
    m[kFound] = "The first time everyone is free " + WhenWords(m) + " is " +
                SlotWords(as_json(slots.front()), clock) + ".";
    return;
  }
  m[kFound] = "There is no free time for " +
              AndList(PeopleNames(JsonAt(m, kPeople, json::array()))) + " and you " + WhenWords(m) +
              ".";
  m[kPhase] = kPhaseLater;
}

}  // namespace

void TakeMeetingResult(MeetingState& m, const ToolStep& call, const json& result, bool is_error,
                       const MeetingClock& clock) {
  if (is_error || (result.is_object() && result.value("status", "") == "error")) {
    m[kFailed] = call.tool + " failed: " + FailureWords(result);
    return;
  }
  const json data = DataOf(result);
  if (call.tool == "contacts__find_contacts") {
    flows::TakeContacts(m, data, kContacts);
  } else if (call.tool == "calendar__find_free_slots") {
    TakeFreeSlots(m, data, clock);
  }
}

intentpb::IntentAnalysis MeetingAnswer(const FlowState& last, const intentpb::IntentAnalysis& heard,
                                       const std::string& message) {
  intentpb::IntentAnalysis analysis =
      flows::AnswerAnalysis(last.entities, heard, message, "meeting", {kPicked, kVerdict, kAnswer});
  auto& entities = *analysis.mutable_entities();
  const auto& said = heard.entities();
  for (const auto& [key, into] :
       {std::pair{intent::kTimeEntity, kAnswerTime}, std::pair{intent::kDayEntity, kAnswerDay},
        std::pair{intent::kPartOfDayEntity, kAnswerPart}}) {
    if (auto it = said.find(key); it != said.end()) entities[into] = it->second;
  }
  return analysis;
}

bool IsMeetingProgress(const std::string& key) { return key.rfind("meeting_", 0) == 0; }

std::string DescribeMeetingResult(const ToolStep& step, const json& result, bool is_error) {
  if (step.tool != "calendar__create_event") return "";
  const json data = DataOf(result);
  if (is_error || !data.contains("event") || !data["event"].is_object()) {
    return "It was not booked: " + FailureWords(result);
  }
  const json& event = data["event"];
  const std::string start = event.value("start", "");
  const std::string end = event.value("end", "");
  std::vector<std::string> attendees;
  for (const json& a : event.value("attendees", json::array())) {
    if (a.is_string()) attendees.push_back(a.get<std::string>());
  }
  const std::string when = start.size() >= 16 && end.size() >= 16
                               ? start.substr(0, 10) + " " + start.substr(11, 5) + "–" +
                                     end.substr(11, 5) + " (" + start.substr(19) + ")"
                               : start + " – " + end;
  return "Booked \"" + event.value("title", std::string("the meeting")) + "\" on " + when +
         (attendees.empty() ? "" : " with " + AndList(attendees)) + ". It is in your calendar (" +
         event.value("id", std::string("new event")) + ").";
}

}  // namespace omniforge::orchestrator
