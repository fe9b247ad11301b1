#include "libs/schedule/schedule.h"

#include <array>
#include <cctype>
#include <set>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"

namespace omniforge::schedule {
namespace {

// Debian's Abseil has its own string_view: these take the standard one.
absl::string_view A(std::string_view s) { return {s.data(), s.size()}; }
bool ToInt(std::string_view s, int* value) { return absl::SimpleAtoi(A(s), value); }
std::string Lower(std::string_view s) { return absl::AsciiStrToLower(A(s)); }
std::string_view Strip(std::string_view s) {
  const absl::string_view stripped = absl::StripAsciiWhitespace(A(s));
  return {stripped.data(), stripped.size()};
}
bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
// `s` split at any of `separators`; empty parts kept unless `skip_empty`.
std::vector<std::string_view> Split(std::string_view s, std::string_view separators,
                                    bool skip_empty) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t end = s.find_first_of(separators, start);
    const std::string_view part =
        s.substr(start, end == std::string_view::npos ? s.npos : end - start);
    if (!part.empty() || !skip_empty) parts.push_back(part);
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

constexpr std::array<std::string_view, 7> kDayNames = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                                       "Thursday", "Friday", "Saturday"};
constexpr std::array<std::string_view, 12> kMonthNames = {
    "January", "February", "March",     "April",   "May",      "June",
    "July",    "August",   "September", "October", "November", "December"};

struct FieldSpec {
  const char* name;
  int min;
  int max;
  bool weekday;  // names sun..sat, and 7 is Sunday
  bool month;    // names jan..dec
};

constexpr FieldSpec kFields[5] = {{"minute", 0, 59, false, false},
                                  {"hour", 0, 23, false, false},
                                  {"day of month", 1, 31, false, false},
                                  {"month", 1, 12, false, true},
                                  {"day of week", 0, 7, true, false}};

// A number or a three-letter name of the field.
std::optional<int> FieldValue(const FieldSpec& spec, std::string_view text) {
  int value = 0;
  if (ToInt(text, &value)) {
    if (value < spec.min || value > spec.max) return std::nullopt;
    return value;
  }
  const std::string lower = Lower(text);
  if (lower.size() != 3) return std::nullopt;
  if (spec.weekday) {
    for (int i = 0; i < 7; ++i) {
      if (Lower(kDayNames[i].substr(0, 3)) == lower) return i;
    }
  }
  if (spec.month) {
    for (int i = 0; i < 12; ++i) {
      if (Lower(kMonthNames[i].substr(0, 3)) == lower) return i + 1;
    }
  }
  return std::nullopt;
}

// The values one field allows (bit v for value v; weekday 7 folded to 0).
absl::StatusOr<std::bitset<60>> ParseField(const FieldSpec& spec, std::string_view text) {
  std::bitset<60> bits;
  const auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("the cron ", spec.name, " field '", A(text), "' ", A(why)));
  };
  if (text.empty()) return bad("is empty");
  for (std::string_view item : Split(text, ",", false)) {
    int step = 1;
    if (size_t slash = item.find('/'); slash != std::string_view::npos) {
      if (!ToInt(item.substr(slash + 1), &step) || step < 1 || step > spec.max) {
        return bad("has a step that is not a number in range");
      }
      item = item.substr(0, slash);
    }
    int lo = spec.min, hi = spec.weekday ? 6 : spec.max;
    if (item != "*") {
      const size_t dash = item.find('-');
      auto first = FieldValue(spec, item.substr(0, dash));
      auto last = dash == std::string_view::npos ? first : FieldValue(spec, item.substr(dash + 1));
      if (!first || !last) {
        return bad(absl::StrCat("is not a list of values ", spec.min, "-", spec.max));
      }
      lo = *first;
      hi = *last;
      // a single value with a step ("5/15") runs from it to the end
      if (dash == std::string_view::npos && step != 1) hi = spec.weekday ? 6 : spec.max;
      if (lo > hi) return bad("has a range that runs backwards");
    }
    for (int v = lo; v <= hi; v += step) bits.set(spec.weekday && v == 7 ? 0 : v);
  }
  return bits;
}

// A field's values as cron text: "*", "*/n", or ranges and values.
std::string FieldText(const std::bitset<60>& bits, int min, int max, bool star) {
  std::vector<int> values;
  for (int v = min; v <= max; ++v) {
    if (bits.test(v)) values.push_back(v);
  }
  // A restricted day field that allows every day stays restricted: with the
  // other day field restricted too, cron fires on either.
  if (static_cast<int>(values.size()) == max - min + 1) {
    return star ? std::string("*") : absl::StrCat(min, "-", max);
  }
  if (star && values.size() > 1) {
    const int step = values[1] - values[0];
    bool series = values[0] == min;
    for (size_t i = 1; series && i < values.size(); ++i) series = values[i] == values[i - 1] + step;
    if (series && values.back() + step > max) return absl::StrCat("*/", step);
  }
  std::vector<std::string> parts;
  for (size_t i = 0; i < values.size();) {
    size_t j = i;
    while (j + 1 < values.size() && values[j + 1] == values[j] + 1) ++j;
    parts.push_back(j >= i + 2 ? absl::StrCat(values[i], "-", values[j]) : absl::StrCat(values[i]));
    if (j == i + 1) parts.push_back(absl::StrCat(values[j]));
    i = j + 1;
  }
  return absl::StrJoin(parts, ",");
}

template <size_t N>
std::bitset<N> Narrow(const std::bitset<60>& bits) {
  std::bitset<N> out;
  for (size_t i = 0; i < N; ++i) out[i] = bits[i];
  return out;
}

template <size_t N>
std::bitset<60> Widen(const std::bitset<N>& bits) {
  std::bitset<60> out;
  for (size_t i = 0; i < N; ++i) out[i] = bits[i];
  return out;
}

std::string_view Macro(std::string_view expression) {
  if (expression == "@hourly") return "0 * * * *";
  if (expression == "@daily" || expression == "@midnight") return "0 0 * * *";
  if (expression == "@weekly") return "0 0 * * 0";
  if (expression == "@monthly") return "0 0 1 * *";
  if (expression == "@yearly" || expression == "@annually") return "0 0 1 1 *";
  return expression;
}

int CronWeekday(absl::CivilDay day) {
  return (static_cast<int>(absl::GetWeekday(day)) + 1) % 7;  // absl: Monday is 0
}

// Only names of the zone database: no paths, no "file:" names (the loader
// would open them), nothing else.
std::optional<absl::TimeZone> LoadZone(std::string_view name) {
  const bool plain = !name.empty() && name.size() <= 64 && name[0] != '/' &&
                     name.find("..") == std::string_view::npos &&
                     std::all_of(name.begin(), name.end(), [](char c) {
                       return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' ||
                              c == '+' || c == '-' || c == '/';
                     });
  absl::TimeZone zone;
  if (!plain || !absl::LoadTimeZone(std::string(name), &zone)) return std::nullopt;
  return zone;
}

}  // namespace

absl::StatusOr<Cron> Cron::Parse(std::string_view expression) {
  expression = Macro(Strip(expression));
  std::vector<std::string_view> fields = Split(expression, " \t", true);
  if (fields.size() != 5) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a cron expression has five fields (minute hour day-of-month month day-of-week), '",
        A(expression), "' has ", fields.size()));
  }
  Cron cron;
  std::array<std::bitset<60>, 5> bits;
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<std::bitset<60>> field = ParseField(kFields[i], fields[i]);
    if (!field.ok()) return field.status();
    bits[i] = *field;
  }
  cron.minutes_ = Narrow<60>(bits[0]);
  cron.hours_ = Narrow<24>(bits[1]);
  cron.days_ = Narrow<32>(bits[2]);
  cron.months_ = Narrow<13>(bits[3]);
  cron.weekdays_ = Narrow<7>(bits[4]);
  cron.days_restricted_ = fields[2][0] != '*';
  cron.weekdays_restricted_ = fields[4][0] != '*';
  cron.text_ = absl::StrCat(FieldText(bits[0], 0, 59, true), " ", FieldText(bits[1], 0, 23, true),
                            " ", FieldText(bits[2], 1, 31, !cron.days_restricted_), " ",
                            FieldText(bits[3], 1, 12, true), " ",
                            FieldText(bits[4], 0, 6, !cron.weekdays_restricted_));
  return cron;
}

bool Cron::Matches(int month, int day, int weekday, int hour, int minute) const {
  if (!months_.test(month) || !hours_.test(hour) || !minutes_.test(minute)) return false;
  const bool by_day = days_.test(day), by_weekday = weekdays_.test(weekday);
  if (days_restricted_ && weekdays_restricted_) return by_day || by_weekday;
  return by_day && by_weekday;
}

std::optional<core::TimePoint> Cron::NextAfter(core::TimePoint after,
                                               std::string_view time_zone) const {
  std::optional<absl::TimeZone> zone = LoadZone(time_zone);
  if (!zone.has_value()) return std::nullopt;
  const absl::Time from = absl::FromUnixMicros(core::MicrosOf(after));
  absl::CivilMinute c = absl::ToCivilMinute(from, *zone) + 1;
  const absl::CivilMinute limit(c.year() + 5, c.month(), c.day(), c.hour(), c.minute());
  while (c < limit) {
    if (!months_.test(c.month())) {
      c = absl::CivilMinute(absl::CivilMonth(c) + 1);
      continue;
    }
    const absl::CivilDay day(c);
    const bool by_day = days_.test(c.day()), by_weekday = weekdays_.test(CronWeekday(day));
    if (!(days_restricted_ && weekdays_restricted_ ? by_day || by_weekday : by_day && by_weekday)) {
      c = absl::CivilMinute(day + 1);
      continue;
    }
    if (!hours_.test(c.hour())) {
      c = absl::CivilMinute(absl::CivilHour(c) + 1);
      continue;
    }
    if (!minutes_.test(c.minute())) {
      c += 1;
      continue;
    }
    const absl::TimeZone::TimeInfo info = zone->At(c);
    const absl::Time t = info.kind == absl::TimeZone::TimeInfo::SKIPPED ? info.trans : info.pre;
    if (t > from) return core::TimePointFromMicros(absl::ToUnixMicros(t));
    c += 1;
  }
  return std::nullopt;
}

namespace {

std::vector<int> Values(const std::bitset<60>& bits, int min, int max) {
  std::vector<int> out;
  for (int v = min; v <= max; ++v) {
    if (bits.test(v)) out.push_back(v);
  }
  return out;
}

// The step of a series min, min+step, ... that fills the field; 0 if none.
int StepOf(const std::vector<int>& values, int min, int max) {
  if (values.size() < 2 || values[0] != min) return 0;
  const int step = values[1] - values[0];
  for (size_t i = 1; i < values.size(); ++i) {
    if (values[i] != values[i - 1] + step) return 0;
  }
  return values.back() + step > max ? step : 0;
}

std::string JoinAnd(const std::vector<std::string>& parts) {
  if (parts.size() <= 1) return parts.empty() ? "" : parts[0];
  std::vector<std::string> head(parts.begin(), parts.end() - 1);
  return absl::StrCat(absl::StrJoin(head, ", "), " and ", parts.back());
}

std::string Ordinal(int n) {
  const int tens = n % 100;
  const char* suffix = (tens >= 11 && tens <= 13) ? "th"
                       : n % 10 == 1              ? "st"
                       : n % 10 == 2              ? "nd"
                       : n % 10 == 3              ? "rd"
                                                  : "th";
  return absl::StrCat(n, suffix);
}

// "on Mondays and Thursdays", "on weekdays", "" for every day.
std::string DaysPhrase(const std::vector<int>& weekdays) {
  if (weekdays.size() == 7) return "";
  if (weekdays == std::vector<int>{1, 2, 3, 4, 5}) return "weekdays";
  if (weekdays == std::vector<int>{0, 6}) return "weekends";
  std::vector<std::string> names;
  names.reserve(weekdays.size());
  for (int d : weekdays) names.emplace_back(kDayNames[d]);
  return absl::StrCat("every ", JoinAnd(names));
}

}  // namespace

std::string Cron::Describe() const {
  const std::vector<int> minutes = Values(Widen(minutes_), 0, 59);
  const std::vector<int> hours = Values(Widen(hours_), 0, 23);
  const std::vector<int> days = Values(Widen(days_), 1, 31);
  const std::vector<int> months = Values(Widen(months_), 1, 12);
  const std::vector<int> weekdays = Values(Widen(weekdays_), 0, 6);
  if (days_restricted_ && weekdays_restricted_) return absl::StrCat("cron '", text_, "'");
  const bool every_day = days.size() == 31 && months.size() == 12;
  std::string when;  // the clock part
  if (const int step = minutes.size() == 60 ? 1 : StepOf(minutes, 0, 59);
      step > 0 && hours.size() == 24) {
    when = step == 1 ? "every minute" : absl::StrCat("every ", step, " minutes");
  } else if (minutes.size() == 1 && (hours.size() == 24 || StepOf(hours, 0, 23) > 0)) {
    const int step = hours.size() == 24 ? 1 : StepOf(hours, 0, 23);
    when = step == 1 ? "every hour" : absl::StrCat("every ", step, " hours");
    if (minutes[0] != 0) absl::StrAppend(&when, " at ", minutes[0], " past");
  } else if (minutes.size() == 1 && hours.size() <= 6) {
    std::vector<std::string> times;
    times.reserve(hours.size());
    for (int h : hours) times.push_back(absl::StrFormat("%02d:%02d", h, minutes[0]));
    when = absl::StrCat("at ", JoinAnd(times));
  } else {
    return absl::StrCat("cron '", text_, "'");
  }
  if (every_day) {
    const std::string on = DaysPhrase(weekdays);
    if (on.empty()) return when.rfind("at ", 0) == 0 ? absl::StrCat("every day ", when) : when;
    return absl::StrCat(on, " ", when == "every hour" ? "every hour" : when);
  }
  if (weekdays.size() != 7 || days.size() != 1) return absl::StrCat("cron '", text_, "'");
  if (months.size() == 12)
    return absl::StrCat("on the ", Ordinal(days[0]), " of every month ", when);
  if (months == std::vector<int>{1, 4, 7, 10}) {
    return absl::StrCat("on the ", Ordinal(days[0]), " of every quarter ", when);
  }
  std::vector<std::string> names;
  names.reserve(months.size());
  for (int m : months) names.emplace_back(kMonthNames[m - 1]);
  return absl::StrCat("every year on ", JoinAnd(names), " ", Ordinal(days[0]), " ", when);
}

}  // namespace omniforge::schedule

namespace omniforge::schedule {
namespace {

// What a phrase said, field by field, before it becomes cron.
struct Spoken {
  int every_minutes = 0;                          // "every 15 minutes"
  int every_hours = 0;                            // "hourly", "every 2 hours"
  std::optional<std::pair<int, int>> hour_range;  // "from 9am to 5pm"
  bool daily = false;
  bool weekly = false;
  bool monthly = false;
  std::set<int> weekdays;
  std::set<int> month_days;
  std::vector<int> months;                          // quarterly, yearly
  std::vector<std::pair<int, int>> times;           // hour, minute
  std::vector<bool> said_meridiem;                  // per time: "7pm", not "7"
  std::optional<std::pair<int, int>> default_time;  // "every morning"
  std::string zone;
};

struct Word {
  std::string lower;
  std::string original;
};

std::optional<int> WeekdayOf(std::string_view w) {
  static constexpr std::pair<std::string_view, int> kNames[] = {
      {"sunday", 0}, {"sun", 0},       {"monday", 1}, {"mon", 1}, {"tuesday", 2},  {"tues", 2},
      {"tue", 2},    {"wednesday", 3}, {"weds", 3},   {"wed", 3}, {"thursday", 4}, {"thurs", 4},
      {"thur", 4},   {"thu", 4},       {"friday", 5}, {"fri", 5}, {"saturday", 6}, {"sat", 6}};
  if (w.size() > 3 && w.back() == 's') {
    if (auto d = WeekdayOf(w.substr(0, w.size() - 1)); d && w.size() > 4) return d;
  }
  for (const auto& [name, day] : kNames) {
    if (w == name) return day;
  }
  return std::nullopt;
}

// "1st", "15th", "first", "second", "third".
std::optional<int> MonthDayOf(std::string_view w) {
  static constexpr std::pair<std::string_view, int> kWords[] = {
      {"first", 1}, {"second", 2}, {"third", 3}, {"fourth", 4}, {"fifth", 5}};
  for (const auto& [name, day] : kWords) {
    if (w == name) return day;
  }
  if (w.size() < 3) return std::nullopt;
  const std::string_view suffix = w.substr(w.size() - 2);
  if (suffix != "st" && suffix != "nd" && suffix != "rd" && suffix != "th") return std::nullopt;
  int day = 0;
  if (!ToInt(w.substr(0, w.size() - 2), &day) || day < 1 || day > 31) {
    return std::nullopt;
  }
  return day;
}

// "9am", "9:30", "09:30", "9.30pm", "17h", "noon", "midnight"; with
// `hour_alone`, a bare "9" (after "at"). `next` may be "am"/"pm".
std::optional<std::pair<int, int>> TimeOf(std::string_view w, std::string_view next,
                                          bool hour_alone, bool* used_next) {
  *used_next = false;
  if (w == "noon" || w == "midday") return std::pair{12, 0};
  if (w == "midnight") return std::pair{0, 0};
  std::string_view meridiem;
  if (EndsWith(w, "am") || EndsWith(w, "pm")) {
    meridiem = w.substr(w.size() - 2);
    w = w.substr(0, w.size() - 2);
  } else if (next == "am" || next == "pm" || next == "a.m." || next == "p.m.") {
    meridiem = next.substr(0, 1) == "a" ? "am" : "pm";
    *used_next = true;
  } else if (EndsWith(w, "h")) {
    w = w.substr(0, w.size() - 1);
    hour_alone = true;
  }
  const size_t sep = w.find_first_of(":.");
  int hour = 0, minute = 0;
  if (!ToInt(w.substr(0, sep), &hour)) return std::nullopt;
  if (sep != std::string_view::npos) {
    if (w.size() - sep != 3 || !ToInt(w.substr(sep + 1), &minute)) return std::nullopt;
  } else if (meridiem.empty() && !hour_alone) {
    return std::nullopt;
  }
  if (!meridiem.empty()) {
    if (hour < 1 || hour > 12) return std::nullopt;
    hour = hour % 12 + (meridiem == "pm" ? 12 : 0);
  }
  if (hour > 23 || minute > 59 || minute < 0) return std::nullopt;
  *used_next = *used_next && !meridiem.empty();
  return std::pair{hour, minute};
}

bool IsFiller(std::string_view w) {
  static const std::set<std::string_view> kFiller = {
      "every", "each", "on",     "at",   "the", "and",  "&",       "of",     "a",    "per",
      "in",    "by",   "around", "cron", "+",   "time", "o'clock", "oclock", "then", "starting"};
  return kFiller.count(w) > 0;
}

absl::Status CannotRead(std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "could not read the schedule '", A(text), "': ", A(why),
      ". Say it like \"every monday at 9am\", \"weekdays at 7:30\", \"on the 1st of each month\", "
      "\"every 2 hours\", or give a cron expression such as \"0 9 * * 1\""));
}

// A time zone named by `word`: "utc", "gmt", an IANA name in any case.
std::optional<std::string> ZoneOf(const Word& word) {
  if (word.lower == "utc" || word.lower == "gmt" || word.lower == "z") return std::string("UTC");
  if (word.original.find('/') == std::string::npos && word.lower.size() > 5) return std::nullopt;
  for (std::string candidate : {word.original, absl::AsciiStrToUpper(word.original)}) {
    if (IsTimeZone(candidate)) return candidate;
  }
  // "europe/berlin": each part capitalised.
  std::string titled = word.lower;
  for (size_t i = 0; i < titled.size(); ++i) {
    if (i == 0 || titled[i - 1] == '/' || titled[i - 1] == '_') {
      titled[i] = static_cast<char>(std::toupper(static_cast<unsigned char>(titled[i])));
    }
  }
  if (IsTimeZone(titled)) return titled;
  return std::nullopt;
}

}  // namespace
}  // namespace omniforge::schedule

namespace omniforge::schedule {
namespace {

// Reads a phrase's words into Spoken; INVALID_ARGUMENT names a word it
// cannot place.
class PhraseReader final {
 public:
  PhraseReader(std::string_view text, std::vector<Word> words)
      : text_(text), words_(std::move(words)) {}

  absl::StatusOr<Spoken> Read() {
    for (i_ = 0; i_ < words_.size(); ++i_) {
      if (absl::Status s = ReadWord(); !s.ok()) return s;
    }
    return spoken_;
  }

 private:
  std::string_view At(size_t i) const {
    return i < words_.size() ? std::string_view(words_[i].lower) : std::string_view();
  }

  absl::Status ReadWord() {
    const std::string_view w = At(i_);
    const bool after_at = i_ > 0 && (At(i_ - 1) == "at" || At(i_ - 1) == "by" ||
                                     At(i_ - 1) == "around" || At(i_ - 1) == "and");
    if (IsFiller(w)) return absl::OkStatus();
    if (w == "other" || w == "alternate" || w == "biweekly" || w == "bi-weekly" ||
        w == "fortnightly" || w == "fortnight") {
      return CannotRead(text_,
                        "every other week has no clock schedule (name the weeks' days, "
                        "or run it weekly)");
    }
    if (w == "last") {
      return CannotRead(text_, "the last day has no clock schedule (say a day such as the 28th)");
    }
    static const std::set<std::string_view> kLongUnits = {"days", "weeks", "months", "years"};
    if (int n = 0; ToInt(w, &n) && n > 1 && kLongUnits.count(At(i_ + 1)) > 0) {
      return CannotRead(text_, absl::StrCat("every ", n, " ", A(At(i_ + 1)),
                                            " has no clock schedule (say which days)"));
    }
    if (ReadInterval(w) || ReadDays(w) || ReadPeriod(w)) return absl::OkStatus();
    if (auto day = MonthDayOf(w)) {
      static const std::set<std::string_view> kSpans = {"day",   "days",  "week",
                                                        "weeks", "month", "months"};
      if (kSpans.count(At(i_ + 1)) > 0 && i_ > 0 && At(i_ - 1) == "every") {
        return CannotRead(text_, absl::StrCat("every ", A(w), " ", A(At(i_ + 1)),
                                              " has no clock schedule (say which days)"));
      }
      if (WeekdayOf(At(i_ + 1))) {
        return CannotRead(text_,
                          "a weekday of the month (\"the first monday\") has no clock "
                          "schedule; say a day of the month");
      }
      spoken_.month_days.insert(*day);
      return absl::OkStatus();
    }
    if (w == "from" || w == "between") return ReadHourRange();
    bool used_next = false;
    if (auto time = TimeOf(w, At(i_ + 1), after_at, &used_next)) {
      spoken_.times.push_back(*time);
      spoken_.said_meridiem.push_back(used_next || EndsWith(w, "am") || EndsWith(w, "pm"));
      i_ += used_next ? 1 : 0;
      return absl::OkStatus();
    }
    if (auto zone = ZoneOf(words_[i_])) {
      spoken_.zone = *zone;
      return absl::OkStatus();
    }
    return CannotRead(text_, absl::StrCat("'", words_[i_].original, "' is no part of a schedule"));
  }

  // "every 15 minutes", "every minute", "hourly", "every 2 hours".
  bool ReadInterval(std::string_view w) {
    static const std::set<std::string_view> kMinutes = {"minute", "minutes", "min", "mins", "m"};
    static const std::set<std::string_view> kHours = {"hour", "hours", "hr", "hrs", "h"};
    int n = 1, number = 0;
    std::string_view unit;
    if (ToInt(w, &number) && (n = number) > 0 &&
        (kMinutes.count(At(i_ + 1)) > 0 || kHours.count(At(i_ + 1)) > 0)) {
      unit = At(++i_);
    } else if (w == "hourly" || w == "hour" || w == "hr") {
      unit = "hour";
    } else if (w == "minute" || w == "min") {
      unit = "minute";
    } else {
      return false;
    }
    (kMinutes.count(unit) > 0 ? spoken_.every_minutes : spoken_.every_hours) = n;
    return true;
  }

  // Days of the week, "daily", "weekdays", "business days", "every morning".
  bool ReadDays(std::string_view w) {
    static constexpr std::pair<std::string_view, std::pair<int, int>> kParts[] = {
        {"morning", {9, 0}},     {"mornings", {9, 0}}, {"afternoon", {14, 0}},
        {"afternoons", {14, 0}}, {"evening", {18, 0}}, {"evenings", {18, 0}},
        {"night", {0, 0}},       {"nights", {0, 0}},   {"nightly", {0, 0}}};
    for (const auto& [part, time] : kParts) {
      if (w == part) {
        spoken_.daily = true;
        spoken_.default_time = time;
        return true;
      }
    }
    if (w == "daily" || w == "day" || w == "days" || w == "everyday") {
      spoken_.daily = true;
      return true;
    }
    if (w == "weekday" || w == "weekdays" || w == "workday" || w == "workdays" ||
        ((w == "business" || w == "working" || w == "work") &&
         (At(i_ + 1) == "day" || At(i_ + 1) == "days"))) {
      i_ += (w == "business" || w == "working" || w == "work") ? 1 : 0;
      for (int d = 1; d <= 5; ++d) spoken_.weekdays.insert(d);
      return true;
    }
    if (w == "weekend" || w == "weekends") {
      spoken_.weekdays.insert({0, 6});
      return true;
    }
    return ReadWeekdays(w);
  }

  // "monday", "mondays", "mon-fri", "monday to friday".
  bool ReadWeekdays(std::string_view w) {
    std::optional<int> first = WeekdayOf(w), last;
    if (!first) {
      const size_t dash = w.find('-');
      if (dash == std::string_view::npos) return false;
      first = WeekdayOf(w.substr(0, dash));
      last = WeekdayOf(w.substr(dash + 1));
      if (!first || !last) return false;
    } else if (const std::string_view to = At(i_ + 1);
               (to == "to" || to == "through" || to == "thru" || to == "-" || to == "till") &&
               WeekdayOf(At(i_ + 2))) {
      last = WeekdayOf(At(i_ + 2));
      i_ += 2;
    }
    if (!last) last = first;
    for (int d = *first;; d = (d + 1) % 7) {
      spoken_.weekdays.insert(d);
      if (d == *last) break;
    }
    return true;
  }

  // "weekly", "monthly", "every month", "quarterly", "yearly".
  bool ReadPeriod(std::string_view w) {
    if (w == "week" || w == "weekly") {
      spoken_.weekly = true;
    } else if (w == "month" || w == "monthly" || w == "months") {
      spoken_.monthly = true;
    } else if (w == "quarter" || w == "quarterly") {
      spoken_.months = {1, 4, 7, 10};
    } else if (w == "year" || w == "yearly" || w == "annually" || w == "annual") {
      spoken_.months = {1};
    } else {
      return false;
    }
    return true;
  }

  // "from 9am to 5pm", "between 8 and 18": the hours an interval runs in.
  absl::Status ReadHourRange() {
    bool used = false;
    auto from = TimeOf(At(i_ + 1), At(i_ + 2), true, &used);
    size_t j = i_ + 2 + (used ? 1 : 0);
    const std::string_view to = At(j);
    auto until = TimeOf(At(j + 1), At(j + 2), true, &used);
    if (!from || !until ||
        (to != "to" && to != "and" && to != "until" && to != "till" && to != "-" &&
         to != "through")) {
      return CannotRead(text_, "a range of hours reads \"from 9am to 5pm\"");
    }
    spoken_.hour_range = std::pair{from->first, until->first};
    i_ = j + 1 + (used ? 1 : 0);
    return absl::OkStatus();
  }

  std::string_view text_;
  std::vector<Word> words_;
  size_t i_ = 0;
  Spoken spoken_;
};

std::vector<Word> WordsOf(std::string_view text) {
  std::vector<Word> words;
  for (std::string_view part : Split(text, " \t,;", true)) {
    while (!part.empty() && (part.back() == '.' || part.back() == '!') &&
           !EndsWith(Lower(part), "a.m.") && !EndsWith(Lower(part), "p.m.")) {
      part.remove_suffix(1);
    }
    if (!part.empty()) words.push_back({Lower(part), std::string(part)});
  }
  return words;
}

}  // namespace
}  // namespace omniforge::schedule

namespace omniforge::schedule {
namespace {

std::string ListOf(const std::set<int>& values) { return absl::StrJoin(values, ","); }

// The minute and hour fields of what was said.
absl::StatusOr<std::pair<std::string, std::string>> ClockFields(std::string_view text,
                                                                const Spoken& s) {
  if ((s.every_minutes > 0 || s.every_hours > 0) && !s.times.empty()) {
    return CannotRead(text, "it gives both an interval and a time of day");
  }
  // "every 15 minutes from 9am to 5pm" ends at 16:45: minutes run within the
  // hours before the end; "every hour from 9am to 5pm" fires at 17:00 too.
  const bool within = s.every_minutes > 0 && s.every_minutes < 60 && s.hour_range &&
                      s.hour_range->second > s.hour_range->first;
  const std::string range =
      s.hour_range ? absl::StrCat(s.hour_range->first, "-", s.hour_range->second - (within ? 1 : 0))
                   : "*";
  if (s.hour_range && s.hour_range->first > s.hour_range->second) {
    return CannotRead(text, "its range of hours runs backwards");
  }
  if (s.every_minutes > 0 && s.every_minutes < 60) {
    if (60 % s.every_minutes != 0) {
      return CannotRead(text, absl::StrCat("every ", s.every_minutes,
                                           " minutes does not divide the hour (say 5, 10, 15, "
                                           "20 or 30)"));
    }
    return std::pair{s.every_minutes == 1 ? std::string("*") : absl::StrCat("*/", s.every_minutes),
                     range};
  }
  const int hours = s.every_minutes > 0 ? s.every_minutes / 60 : s.every_hours;
  if (s.every_minutes % 60 != 0 || hours > 24 || (hours > 0 && 24 % hours != 0)) {
    return CannotRead(text,
                      "its interval does not divide the day (say every 1, 2, 3, 4, 6, 8 or "
                      "12 hours)");
  }
  if (hours > 0) {
    return std::pair{std::string("0"), hours == 1 ? range : absl::StrCat(range, "/", hours)};
  }
  std::vector<std::pair<int, int>> times = s.times;
  // "every evening at 7" is 19:00, "every night at 11" 23:00.
  const int part_of_day = s.default_time ? s.default_time->first : 9;
  for (size_t i = 0; i < times.size(); ++i) {
    int& hour = times[i].first;
    if (!s.said_meridiem[i] && (part_of_day >= 14  ? hour >= 1 && hour < 12
                                : part_of_day == 0 ? hour >= 6 && hour < 12
                                                   : false)) {
      hour += 12;
    }
  }
  // "every friday night" is that evening, not the midnight that starts it.
  const bool night_of_a_day = s.default_time && s.default_time->first == 0 && !s.weekdays.empty();
  if (times.empty()) {
    times.push_back(night_of_a_day ? std::pair{22, 0} : s.default_time.value_or(std::pair{9, 0}));
  }
  std::set<int> hour_set;
  for (const auto& [hour, minute] : times) {
    if (minute != times[0].second) {
      return CannotRead(text,
                        "its times differ in minutes (one agent runs at one minute of "
                        "the hour)");
    }
    hour_set.insert(hour);
  }
  return std::pair{absl::StrCat(times[0].second), ListOf(hour_set)};
}

absl::StatusOr<std::string> CronOf(std::string_view text, const Spoken& s) {
  const bool said_when = s.every_minutes > 0 || s.every_hours > 0 || s.daily || s.weekly ||
                         s.monthly || !s.weekdays.empty() || !s.month_days.empty() ||
                         !s.months.empty() || !s.times.empty();
  if (!said_when) return CannotRead(text, "it says no time or how often");
  if ((s.monthly || !s.months.empty()) && !s.weekdays.empty() && s.month_days.empty()) {
    return CannotRead(text,
                      "a weekday of the month has no clock schedule; say a day of the "
                      "month");
  }
  absl::StatusOr<std::pair<std::string, std::string>> clock = ClockFields(text, s);
  if (!clock.ok()) return clock.status();
  const std::string weekdays =
      !s.weekdays.empty() ? ListOf(s.weekdays) : (s.weekly ? std::string("1") : std::string("*"));
  const std::string days = !s.month_days.empty()              ? ListOf(s.month_days)
                           : (s.monthly || !s.months.empty()) ? std::string("1")
                                                              : std::string("*");
  const std::string months =
      s.months.empty() ? std::string("*") : ListOf(std::set<int>(s.months.begin(), s.months.end()));
  return absl::StrCat(clock->first, " ", clock->second, " ", days, " ", months, " ", weekdays);
}

// Whether `field` reads as a cron field: numbers, '*' and three-letter
// names joined by ',', '-' and '/' ("9am" does not).
bool CronToken(std::string_view field) {
  for (std::string_view piece : Split(field, ",-/", false)) {
    const bool number = !piece.empty() && std::all_of(piece.begin(), piece.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c)) != 0 || c == '*';
    });
    const bool name = piece.size() == 3 && std::all_of(piece.begin(), piece.end(), [](char c) {
                        return std::isalpha(static_cast<unsigned char>(c)) != 0;
                      });
    if (!number && !name) return false;
  }
  return true;
}

// `text` as a cron expression, optionally after "cron" and before a zone.
std::optional<absl::StatusOr<Schedule>> AsCron(std::string_view text, std::string_view zone) {
  const bool said_cron = Lower(text.substr(0, 5)) == "cron ";
  if (said_cron) text = Strip(text.substr(5));
  std::vector<std::string_view> fields = Split(text, " \t", true);
  std::string named_zone(zone);
  if (fields.size() == 6 || (fields.size() == 2 && fields[0][0] == '@')) {
    if (auto z = ZoneOf({Lower(fields.back()), std::string(fields.back())})) {
      named_zone = *z;
      fields.pop_back();
    }
  }
  const bool looks = !fields.empty() &&
                     (fields[0][0] == '@' ||
                      (fields.size() == 5 && std::all_of(fields.begin(), fields.end(), CronToken)));
  if (!said_cron && !looks) return std::nullopt;
  std::string joined;
  for (std::string_view f : fields) absl::StrAppend(&joined, joined.empty() ? "" : " ", A(f));
  absl::StatusOr<Cron> cron = Cron::Parse(joined);
  if (!cron.ok()) return absl::StatusOr<Schedule>(cron.status());
  return absl::StatusOr<Schedule>(Schedule{cron->text(), named_zone, ""});
}

}  // namespace

bool IsTimeZone(std::string_view name) { return LoadZone(name).has_value(); }

absl::StatusOr<Schedule> ParseSchedule(std::string_view text, std::string_view default_zone) {
  text = Strip(text);
  if (text.empty()) return CannotRead(text, "it is empty");
  if (text.size() > 200) return CannotRead(text.substr(0, 40), "it is longer than 200 characters");
  if (!IsTimeZone(default_zone)) {
    return absl::InvalidArgumentError(absl::StrCat("unknown time zone '", A(default_zone), "'"));
  }
  absl::StatusOr<Schedule> schedule;
  if (auto cron = AsCron(text, default_zone)) {
    schedule = *std::move(cron);
  } else {
    absl::StatusOr<Spoken> spoken = PhraseReader(text, WordsOf(text)).Read();
    if (!spoken.ok()) return spoken.status();
    absl::StatusOr<std::string> expression = CronOf(text, *spoken);
    if (!expression.ok()) return expression.status();
    schedule =
        Schedule{*expression, spoken->zone.empty() ? std::string(default_zone) : spoken->zone, ""};
  }
  if (!schedule.ok()) return schedule.status();
  absl::StatusOr<Cron> cron = Cron::Parse(schedule->cron);
  if (!cron.ok()) return cron.status();
  if (!cron->NextAfter(core::TimePointFromMicros(0), schedule->time_zone).has_value()) {
    return CannotRead(text, "that date never comes");
  }
  schedule->cron = cron->text();
  schedule->description = absl::StrCat(cron->Describe(), " (", schedule->time_zone, ")");
  return schedule;
}

}  // namespace omniforge::schedule
