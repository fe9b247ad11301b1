// When an agent runs: a schedule as people write it ("every monday at 9am",
// "weekdays at 7:30", "on the 1st of each month", "every 2 hours", a cron
// expression) read into a normalised five-field cron expression and an IANA
// time zone, and the slots it fires at. No I/O; thread-safe.
//
// Cron semantics are Vixie cron's: minute hour day-of-month month
// day-of-week (0 or 7 is Sunday), lists, ranges, steps and names; when both
// day fields are restricted a day matching either fires. Slots are wall
// clock minutes in the schedule's zone: a minute that a daylight-saving
// change skips fires at the first instant after the change, a minute that
// repeats fires once (the first time).
#pragma once

#include <bitset>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "libs/core/clock.h"

namespace omniforge::schedule {

class Cron final {
 public:
  // Five fields, or @hourly, @daily (@midnight), @weekly, @monthly,
  // @yearly (@annually). INVALID_ARGUMENT says which field is wrong.
  static absl::StatusOr<Cron> Parse(std::string_view expression);

  // The normalised expression: five fields, numbers only, Sunday as 0.
  const std::string& text() const { return text_; }

  // The first slot strictly after `after` in `time_zone` (an IANA name);
  // nullopt when there is none in the next five years (e.g. "0 0 30 2 *")
  // or the zone is unknown.
  std::optional<core::TimePoint> NextAfter(core::TimePoint after, std::string_view time_zone) const;

  // Whether a wall-clock minute fires (month 1-12, day 1-31, weekday 0-6
  // with 0 Sunday, hour 0-23, minute 0-59).
  bool Matches(int month, int day, int weekday, int hour, int minute) const;

  // People's words for it: "every Monday at 09:00", "weekdays at 07:30",
  // "every 2 hours", "on day 1 of every month at 09:00"; the expression
  // itself when it has no simple wording.
  std::string Describe() const;

 private:
  std::bitset<60> minutes_;
  std::bitset<24> hours_;
  std::bitset<32> days_;     // 1..31
  std::bitset<13> months_;   // 1..12
  std::bitset<7> weekdays_;  // 0 = Sunday
  bool days_restricted_ = false;
  bool weekdays_restricted_ = false;
  std::string text_;
};

// A schedule as stored with an agent.
struct Schedule {
  std::string cron;         // normalised (Cron::text)
  std::string time_zone;    // IANA name, e.g. "UTC", "Europe/Berlin"
  std::string description;  // "every Monday at 09:00 (Europe/Berlin)"
};

// Reads `text`: a cron expression (optionally after "cron"), or a phrase:
// a frequency ("every 15 minutes", "hourly", "every 2 hours", "daily",
// "every day", "every morning", "weekdays", "weekends", "every monday",
// "mondays and thursdays", "weekly", "monthly", "on the 1st of each month",
// "quarterly", "yearly") with an optional time ("at 9am", "7:30", "noon",
// "at 9am and 5pm") and an optional zone ("UTC", "Europe/Berlin"); a time
// alone ("at 6pm") is every day. Days without a time run at 09:00; "weekly"
// on Monday and "monthly" on the 1st. `default_zone` applies when the text
// names none. INVALID_ARGUMENT, saying what could not be read and how to
// say it, for anything else ("every other week", "tomorrow", an unknown
// zone, "every 7 minutes", which no clock schedule keeps).
absl::StatusOr<Schedule> ParseSchedule(std::string_view text,
                                       std::string_view default_zone = "UTC");

// Whether `name` is a time zone this machine knows.
bool IsTimeZone(std::string_view name);

}  // namespace omniforge::schedule
