#include "services/sandbox/src/sandbox_time.h"

#include "absl/strings/str_cat.h"
#include "libs/core/text.h"

namespace omniforge::sandbox {
namespace {

absl::Time ToAbsl(core::TimePoint t) { return absl::FromUnixMicros(core::MicrosOf(t)); }
core::TimePoint FromAbsl(absl::Time t) { return core::TimePointFromMicros(absl::ToUnixMicros(t)); }

}  // namespace

absl::StatusOr<core::TimePoint> ParseRfc3339(const std::string& field, const std::string& text) {
  absl::Time parsed;
  std::string error;
  // A time with an offset, and nothing absl would also take (a bare date,
  // "infinite-future").
  // RFC 3339 allows the "T" and "Z" in lower case too.
  const bool shaped =
      text.size() >= 20 && text.size() <= 40 && (text[10] == 'T' || text[10] == 't');
  if (!shaped || !absl::ParseTime(absl::RFC3339_full, text, &parsed, &error)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": expected an RFC 3339 time with an offset, such as ",
                     "2026-11-29T14:00:00+01:00 or 2026-11-29T13:00:00Z; got \"",
                     std::string(core::Utf8Prefix(text, 60)), "\""));
  }
  return FromAbsl(parsed);
}

std::string FormatRfc3339(core::TimePoint t, const absl::TimeZone& zone) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%S%Ez", ToAbsl(t), zone);
}

core::TimePoint StartOfDay(core::TimePoint t, const absl::TimeZone& zone, int days) {
  const absl::CivilDay day = absl::ToCivilDay(ToAbsl(t), zone) + days;
  return FromAbsl(absl::FromCivil(day, zone));
}

core::TimePoint AtTime(core::TimePoint day, const absl::TimeZone& zone, int hour, int minute) {
  const absl::CivilDay civil = absl::ToCivilDay(ToAbsl(day), zone);
  return FromAbsl(absl::FromCivil(
      absl::CivilMinute(civil.year(), civil.month(), civil.day(), hour, minute), zone));
}

bool IsWeekend(core::TimePoint t, const absl::TimeZone& zone) {
  const absl::Weekday weekday = absl::GetWeekday(absl::ToCivilDay(ToAbsl(t), zone));
  return weekday == absl::Weekday::saturday || weekday == absl::Weekday::sunday;
}

int MinuteOfDay(core::TimePoint t, const absl::TimeZone& zone) {
  const absl::CivilMinute minute = absl::ToCivilMinute(ToAbsl(t), zone);
  return minute.hour() * 60 + minute.minute();
}

}  // namespace omniforge::sandbox
