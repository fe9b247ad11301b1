// calendar: list_events, find_free_slots, create_event, delete_event.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/sandbox/src/sandbox_time.h"
#include "services/sandbox/src/sandbox_tools.h"
#include "services/sandbox/src/slots.h"
#include "services/sandbox/src/tool_args.h"
#include "services/sandbox/src/views.h"

namespace omniforge::sandbox {
namespace {

using Json = nlohmann::json;
using std::chrono::hours;
using std::chrono::minutes;

constexpr int kMaxAlternatives = 3;

// Reads `start_name`/`end_name` as a span of at most `longest`.
std::optional<Interval> ReadSpan(ToolArgs& args, const char* start_name, const char* end_name,
                                 hours longest) {
  const auto start = args.Time(start_name);
  const auto end = args.Time(end_name);
  if (!start.has_value() || !end.has_value()) return std::nullopt;
  if (*end <= *start) {
    args.Fail(absl::StrCat(end_name, ": must be after ", start_name));
    return std::nullopt;
  }
  if (*end - *start > longest) {
    args.Fail(absl::StrCat(start_name, " to ", end_name, ": at most ", longest.count(), " hours"));
    return std::nullopt;
  }
  return Interval{*start, *end};
}

// Everything busy in `window`: the tenant's events, and the busy blocks of
// `attendees`.
absl::StatusOr<std::vector<Interval>> BusyTimes(ToolContext& ctx, const Interval& window,
                                                const std::vector<std::string>& attendees,
                                                Json* shown) {
  auto events = ctx.store.ListEvents(ctx.tenant, window);
  if (!events.ok()) return events.status();
  auto blocks = ctx.store.ListBusy(ctx.tenant, attendees, window);
  if (!blocks.ok()) return blocks.status();
  std::vector<Interval> busy;
  for (const Event& event : *events) {
    busy.push_back(event.when);
    if (shown != nullptr) {
      Json entry = BusyJson({"you", event.when}, ctx.zone);
      entry["title"] = event.title;
      shown->push_back(std::move(entry));
    }
  }
  for (const BusyBlock& block : *blocks) {
    busy.push_back(block.when);
    if (shown != nullptr) shown->push_back(BusyJson(block, ctx.zone));
  }
  return busy;
}

// Attendees the sandbox has no calendar for (not among the contacts).
absl::StatusOr<std::vector<std::string>> WithoutCalendar(ToolContext& ctx,
                                                         const std::vector<std::string>& emails) {
  auto contacts = ctx.store.ListContacts(ctx.tenant);
  if (!contacts.ok()) return contacts.status();
  std::vector<std::string> unknown;
  for (const std::string& email : emails) {
    bool known = false;
    for (const Contact& contact : *contacts) known = known || contact.email == email;
    if (!known) unknown.push_back(email);
  }
  return unknown;
}

ToolResult ListEvents(ToolContext& ctx, const Json& arguments) {
  ToolArgs args(arguments);
  const auto window = ReadSpan(args, "start", "end", hours(24 * 93));
  if (!args.ok()) return args.Invalid();
  auto events = ctx.store.ListEvents(ctx.tenant, *window);
  if (!events.ok()) return StoreFailure(events.status());
  Json result = {{"events", Json::array()}, {"time_zone", ctx.zone.name()}};
  for (const Event& event : *events) result["events"].push_back(EventJson(event, ctx.zone));
  return Success(std::move(result));
}

ToolResult FindFreeSlots(ToolContext& ctx, const Json& arguments) {
  ToolArgs args(arguments);
  const std::vector<std::string> attendees = args.Emails("attendees", 20, false);
  if (!args.Has("duration_minutes")) args.Fail("duration_minutes: required");
  const int duration = args.Int("duration_minutes", 5, 480, 30);
  const int max_results = args.Int("max_results", 1, 20, 5);
  const auto window = ReadSpan(args, "window_start", "window_end", hours(24 * 31));
  if (window.has_value() && window->end - window->start < minutes(duration)) {
    args.Fail("window_start to window_end: shorter than duration_minutes");
  }
  if (!args.ok()) return args.Invalid();
  Json shown = Json::array();
  auto busy = BusyTimes(ctx, *window, attendees, &shown);
  if (!busy.ok()) return StoreFailure(busy.status());
  auto unknown = WithoutCalendar(ctx, attendees);
  if (!unknown.ok()) return StoreFailure(unknown.status());
  const std::vector<Interval> slots = FreeSlots(*window, minutes(duration), *busy, ctx.clock.Now(),
                                                ctx.zone, minutes(15), max_results);
  Json result = {{"slots", Json::array()},
                 {"busy", std::move(shown)},
                 {"attendees_without_calendar", *unknown},
                 {"time_zone", ctx.zone.name()}};
  for (const Interval& slot : slots) result["slots"].push_back(IntervalJson(slot, ctx.zone));
  if (!unknown->empty()) {
    result["limitations"] = {absl::StrCat("no free/busy information for ",
                                          absl::StrJoin(*unknown, ", "),
                                          ": slots only avoid the others' busy time")};
  }
  return Success(std::move(result));
}

// The conflict answer: what overlaps, and up to three free alternatives.
ToolResult Conflict(ToolContext& ctx, const Event& wanted, const BookingOutcome& outcome) {
  const Interval around{StartOfDay(wanted.when.start, ctx.zone),
                        StartOfDay(wanted.when.start, ctx.zone, kAlternativeDays + 1)};
  auto busy = BusyTimes(ctx, around, wanted.attendees, nullptr);
  if (!busy.ok()) return StoreFailure(busy.status());
  const std::vector<Interval> alternatives =
      ProposeAlternatives(wanted.when, *busy, ctx.clock.Now(), ctx.zone, kMaxAlternatives);
  Json details = {{"requested", IntervalJson(wanted.when, ctx.zone)},
                  {"conflicts", {{"events", Json::array()}, {"busy", Json::array()}}},
                  {"alternatives", Json::array()}};
  std::vector<std::string> taken;
  for (const Event& event : outcome.conflicting_events) {
    details["conflicts"]["events"].push_back(EventJson(event, ctx.zone));
    taken.push_back(absl::StrCat("your event \"", event.title, "\" ",
                                 FormatRfc3339(event.when.start, ctx.zone), " to ",
                                 FormatRfc3339(event.when.end, ctx.zone)));
  }
  for (const BusyBlock& block : outcome.conflicting_busy) {
    details["conflicts"]["busy"].push_back(BusyJson(block, ctx.zone));
    taken.push_back(absl::StrCat(block.email, " is busy ",
                                 FormatRfc3339(block.when.start, ctx.zone), " to ",
                                 FormatRfc3339(block.when.end, ctx.zone)));
  }
  std::vector<std::string> proposed;
  for (const Interval& slot : alternatives) {
    details["alternatives"].push_back(IntervalJson(slot, ctx.zone));
    proposed.push_back(FormatRfc3339(slot.start, ctx.zone));
  }
  const std::string message = absl::StrCat(
      "\"", wanted.title, "\" was not booked: it overlaps ", absl::StrJoin(taken, "; "), ". ",
      proposed.empty()
          ? "No free alternative within a week."
          : absl::StrCat("Free alternatives starting at ", absl::StrJoin(proposed, ", "), "."));
  return Failure("conflict", message, details);
}

ToolResult CreateEvent(ToolContext& ctx, const Json& arguments) {
  ToolArgs args(arguments);
  Event event;
  event.title = args.String("title", 200);
  event.attendees = args.Emails("attendees", 50, false);
  const auto when = ReadSpan(args, "start", "end", hours(24));
  if (when.has_value() && when->start < ctx.clock.Now()) args.Fail("start: in the past");
  if (!args.ok()) return args.Invalid();
  event.when = *when;
  event.id = ctx.new_id();
  auto outcome = ctx.store.BookEvent(ctx.tenant, event);
  if (!outcome.ok()) return StoreFailure(outcome.status());
  if (!outcome->booked) return Conflict(ctx, event, *outcome);
  Json result = {{"event", EventJson(event, ctx.zone)}};
  auto unknown = WithoutCalendar(ctx, event.attendees);
  if (unknown.ok() && !unknown->empty()) {
    result["limitations"] = {absl::StrCat(
        "no free/busy information for ", absl::StrJoin(*unknown, ", "), ": they may be busy then")};
  }
  return Success(std::move(result));
}

ToolResult DeleteEvent(ToolContext& ctx, const Json& arguments) {
  ToolArgs args(arguments);
  const std::string id = args.String("event_id", 100);
  if (!args.ok()) return args.Invalid();
  auto deleted = ctx.store.DeleteEvent(ctx.tenant, id);
  if (!deleted.ok()) return StoreFailure(deleted.status());
  return Success({{"deleted", EventJson(*deleted, ctx.zone)}});
}

}  // namespace

std::vector<ToolDefinition> CalendarTools() {
  const Json time = {{"type", "string"},
                     {"format", "date-time"},
                     {"description", "RFC 3339 with an offset, e.g. 2026-11-29T14:00:00+01:00"}};
  const Json emails = {{"type", "array"},
                       {"items", {{"type", "string"}, {"maxLength", 254}}},
                       {"maxItems", 50},
                       {"description", "email addresses (contacts find_contacts resolves names)"}};
  return {
      {"list_events", "List events", "Lists your calendar's events that overlap start..end.",
       ObjectSchema({{"start", time}, {"end", time}}, {"start", "end"}), true, false, true,
       ListEvents},
      {"find_free_slots", "Find free slots",
       "Finds times of duration_minutes between window_start and window_end when you and every "
       "attendee are free (your events and the attendees' busy time), on the quarter hour, "
       "within working hours (09:00-18:00 Monday to Friday in the calendar's time zone). Also "
       "returns what is busy.",
       ObjectSchema({{"attendees", emails},
                     {"duration_minutes", {{"type", "integer"}, {"minimum", 5}, {"maximum", 480}}},
                     {"window_start", time},
                     {"window_end", time},
                     {"max_results", {{"type", "integer"}, {"minimum", 1}, {"maximum", 20}}}},
                    {"duration_minutes", "window_start", "window_end"}),
       true, false, true, FindFreeSlots},
      {"create_event", "Create an event",
       "Books an event with attendees. Refused with code `conflict` when it overlaps one of "
       "your events or an attendee's busy time: the error lists the conflicts and up to three "
       "free `alternatives` to propose instead.",
       ObjectSchema({{"title", {{"type", "string"}, {"minLength", 1}, {"maxLength", 200}}},
                     {"start", time},
                     {"end", time},
                     {"attendees", emails}},
                    {"title", "start", "end"}),
       false, false, false, CreateEvent},
      {"delete_event", "Delete an event", "Deletes one of your events by id.",
       ObjectSchema({{"event_id", {{"type", "string"}, {"minLength", 1}, {"maxLength", 100}}}},
                    {"event_id"}),
       false, true, true, DeleteEvent},
  };
}

}  // namespace omniforge::sandbox
