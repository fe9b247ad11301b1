// Finding free time: slots of a length that overlap nothing busy, within a
// window (find_free_slots), and alternatives to a time that is taken
// (create_event's conflict answer). Pure functions of their inputs.
#pragma once

#include <chrono>
#include <vector>

#include "absl/time/time.h"
#include "services/sandbox/src/model.h"

namespace omniforge::sandbox {

// Working hours, in the sandbox's zone, Monday to Friday: free slots and
// alternatives are found only within them.
inline constexpr int kWorkdayStartMinute = 9 * 60;
inline constexpr int kWorkdayEndMinute = 18 * 60;

// Up to `limit` slots of `length` inside `window` and within working hours
// (in `zone`, Saturdays and Sundays skipped), none overlapping `busy` or
// each other, none starting before `not_before`, in order. Starts are on
// the `step` grid (from the epoch, so on the quarter hour for 15 min).
std::vector<Interval> FreeSlots(const Interval& window, std::chrono::minutes length,
                                const std::vector<Interval>& busy, core::TimePoint not_before,
                                const absl::TimeZone& zone, std::chrono::minutes step, int limit);
// How many days from the wanted day alternatives are looked for.
inline constexpr int kAlternativeDays = 7;

// Up to `limit` slots as long as `wanted`, free of `busy` (which must cover
// the wanted day and the kAlternativeDays after it), within working hours
// (Saturdays and Sundays skipped), on the half hour, not before `not_before` and not overlapping
// each other: on the wanted day the nearest to the wanted start first, then the earliest of the
// following days. In order of time.
std::vector<Interval> ProposeAlternatives(const Interval& wanted, const std::vector<Interval>& busy,
                                          core::TimePoint not_before, const absl::TimeZone& zone,
                                          int limit);

}  // namespace omniforge::sandbox
