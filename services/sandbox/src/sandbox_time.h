// Times as the sandbox tools read and write them: RFC 3339 with an offset,
// shown in the sandbox's time zone, and the calendar arithmetic the seed and
// the slot search need (days and hours of that zone).
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "libs/core/clock.h"

namespace omniforge::sandbox {

// INVALID_ARGUMENT (naming `field`) unless `text` is RFC 3339 with a time
// and an offset ("2026-11-29T14:00:00+01:00", "...Z").
absl::StatusOr<core::TimePoint> ParseRfc3339(const std::string& field, const std::string& text);

// "2026-11-29T14:00:00+01:00": whole seconds, in `zone`.
std::string FormatRfc3339(core::TimePoint t, const absl::TimeZone& zone);

// Midnight of the day `days` after the day of `t` in `zone`.
core::TimePoint StartOfDay(core::TimePoint t, const absl::TimeZone& zone, int days = 0);

// `day` (a midnight from StartOfDay) at hh:mm in `zone`.
core::TimePoint AtTime(core::TimePoint day, const absl::TimeZone& zone, int hour, int minute);

// Whether `t` falls on a Saturday or a Sunday in `zone`.
bool IsWeekend(core::TimePoint t, const absl::TimeZone& zone);

// Minutes since midnight of `t` in `zone`.
int MinuteOfDay(core::TimePoint t, const absl::TimeZone& zone);

}  // namespace omniforge::sandbox
