#include "services/sandbox/src/slots.h"

#include <algorithm>
#include <cstdlib>
#include <tuple>
#include <utility>

#include "services/sandbox/src/sandbox_time.h"

namespace omniforge::sandbox {
namespace {

bool IsFree(const Interval& slot, const std::vector<Interval>& busy) {
  return std::none_of(busy.begin(), busy.end(),
                      [&](const Interval& b) { return Overlaps(slot, b); });
}

bool OverlapsAny(const Interval& slot, const std::vector<Interval>& taken) {
  return !IsFree(slot, taken);
}

core::TimePoint RoundUp(core::TimePoint t, std::chrono::minutes step) {
  const int64_t step_us = std::chrono::duration_cast<std::chrono::microseconds>(step).count();
  const int64_t us = core::MicrosOf(t);
  const int64_t rem = ((us % step_us) + step_us) % step_us;
  return core::TimePointFromMicros(rem == 0 ? us : us + (step_us - rem));
}

// Working hours of the day `midnight` (from StartOfDay) begins.
Interval WorkingHours(core::TimePoint midnight, const absl::TimeZone& zone) {
  return {AtTime(midnight, zone, kWorkdayStartMinute / 60, kWorkdayStartMinute % 60),
          AtTime(midnight, zone, kWorkdayEndMinute / 60, kWorkdayEndMinute % 60)};
}

}  // namespace

std::vector<Interval> FreeSlots(const Interval& window, std::chrono::minutes length,
                                const std::vector<Interval>& busy, core::TimePoint not_before,
                                const absl::TimeZone& zone, std::chrono::minutes step, int limit) {
  std::vector<Interval> slots;
  core::TimePoint start = RoundUp(std::max(window.start, not_before), step);
  while (static_cast<int>(slots.size()) < limit && start + length <= window.end) {
    const core::TimePoint midnight = StartOfDay(start, zone);
    const Interval hours = WorkingHours(midnight, zone);
    if (IsWeekend(midnight, zone) || start + length > hours.end) {
      start = RoundUp(WorkingHours(StartOfDay(start, zone, 1), zone).start, step);
      continue;
    }
    if (start < hours.start) {
      start = RoundUp(hours.start, step);
      continue;
    }
    const Interval slot{start, start + length};
    if (IsFree(slot, busy)) {
      slots.push_back(slot);
      start = RoundUp(slot.end, step);
    } else {
      start += step;
    }
  }
  return slots;
}

std::vector<Interval> ProposeAlternatives(const Interval& wanted, const std::vector<Interval>& busy,
                                          core::TimePoint not_before, const absl::TimeZone& zone,
                                          int limit) {
  const auto length = wanted.end - wanted.start;
  // (day, distance, earlier) orders the candidates: the wanted day by
  // nearness (of two as near, the later one first), later days by time.
  std::vector<std::pair<std::tuple<int, int64_t, bool>, Interval>> candidates;
  for (int day = 0; day <= kAlternativeDays; ++day) {
    const core::TimePoint midnight = StartOfDay(wanted.start, zone, day);
    if (IsWeekend(midnight, zone)) continue;
    const Interval hours = WorkingHours(midnight, zone);
    for (core::TimePoint start = hours.start; start + length <= hours.end;
         start += std::chrono::minutes(30)) {
      const Interval slot{start, start + length};
      if (start < not_before || !IsFree(slot, busy)) continue;
      const int64_t distance = day == 0
                                   ? std::abs(core::MicrosOf(start) - core::MicrosOf(wanted.start))
                                   : core::MicrosOf(start);
      candidates.push_back({{day, distance, start < wanted.start}, slot});
    }
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Interval> picked;
  for (const auto& [key, slot] : candidates) {
    if (static_cast<int>(picked.size()) == limit) break;
    if (!OverlapsAny(slot, picked)) picked.push_back(slot);
  }
  std::sort(picked.begin(), picked.end(),
            [](const Interval& a, const Interval& b) { return a.start < b.start; });
  return picked;
}

}  // namespace omniforge::sandbox
