#include "libs/schedule/schedule.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/time/civil_time.h"
#include "absl/time/time.h"

namespace omniforge::schedule {
namespace {

core::TimePoint At(int y, int mo, int d, int h, int mi, const char* zone = "UTC") {
  absl::TimeZone tz;
  EXPECT_TRUE(absl::LoadTimeZone(zone, &tz));
  return core::TimePointFromMicros(
      absl::ToUnixMicros(absl::FromCivil(absl::CivilMinute(y, mo, d, h, mi), tz)));
}

std::string Civil(core::TimePoint t, const char* zone = "UTC") {
  absl::TimeZone tz;
  EXPECT_TRUE(absl::LoadTimeZone(zone, &tz));
  return absl::FormatTime("%Y-%m-%d %a %H:%M", absl::FromUnixMicros(core::MicrosOf(t)), tz);
}

std::string CronOf(const std::string& text) {
  absl::StatusOr<Schedule> s = ParseSchedule(text);
  return s.ok() ? s->cron : "error: " + std::string(s.status().message());
}

TEST(ParseSchedule, ReadsThePhrasesPeopleUse) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"every monday at 9am", "0 9 * * 1"},
      {"weekdays at 7:30", "30 7 * * 1-5"},
      {"on the 1st of each month", "0 9 1 * *"},
      {"every 2 hours", "0 */2 * * *"},
      {"Every Monday 08:00", "0 8 * * 1"},
      {"every friday at 4pm", "0 16 * * 5"},
      {"daily", "0 9 * * *"},
      {"daily at 6pm", "0 18 * * *"},
      {"every day at 08:15", "15 8 * * *"},
      {"weekly", "0 9 * * 1"},
      {"monthly", "0 9 1 * *"},
      {"hourly", "0 * * * *"},
      {"every hour", "0 * * * *"},
      {"every minute", "* * * * *"},
      {"every 15 minutes", "*/15 * * * *"},
      {"every 30 mins", "*/30 * * * *"},
      {"every morning", "0 9 * * *"},
      {"every evening at 7", "0 19 * * *"},
      {"nightly", "0 0 * * *"},
      {"at noon", "0 12 * * *"},
      {"at 6pm", "0 18 * * *"},
      {"mondays and thursdays at 10am", "0 10 * * 1,4"},
      {"mon, wed, fri at 9", "0 9 * * 1,3,5"},
      {"monday to friday at 8:45 am", "45 8 * * 1-5"},
      {"mon-fri 17:00", "0 17 * * 1-5"},
      {"every business day at 9am", "0 9 * * 1-5"},
      {"weekends at 10", "0 10 * * 0,6"},
      {"every sunday", "0 9 * * 0"},
      {"on the 15th of every month at 14:30", "30 14 15 * *"},
      {"1st and 15th of the month", "0 9 1,15 * *"},
      {"quarterly", "0 9 1 */3 *"},
      {"yearly", "0 9 1 1 *"},
      {"at 9am and 5pm", "0 9,17 * * *"},
      {"every hour from 9am to 5pm on weekdays", "0 9-17 * * 1-5"},
      {"every 15 minutes from 9am to 5pm", "*/15 9-16 * * *"},
      {"every 2 hours between 8 and 18", "0 8,10,12,14,16,18 * * *"},
      {"every night at 11", "0 23 * * *"},
      {"every night at 2", "0 2 * * *"},
      {"every 120 minutes", "0 */2 * * *"},
      {"cron 0 9 * * 1-5", "0 9 * * 1-5"},
      {"0 9 * * MON", "0 9 * * 1"},
      {"*/10 * * * *", "*/10 * * * *"},
      {"@daily", "0 0 * * *"},
      {"0 8 * * 7", "0 8 * * 0"},
      {"every thursday at 12:00.", "0 12 * * 4"},
      {"every tuesday at 9 a.m.", "0 9 * * 2"},
      {"9am every monday and friday", "0 9 * * 1,5"},
      {"1st of every month 9am", "0 9 1 * *"},
      {"every friday night", "0 22 * * 5"},
      {"every day at 5pm", "0 17 * * *"},
      {"mondays 9am", "0 9 * * 1"},
      {"every weekday morning", "0 9 * * 1-5"},
      {"at 9:00 every tuesday and thursday", "0 9 * * 2,4"},
      {"every 30 minutes on weekdays", "*/30 * * * 1-5"},
      {"each friday at noon UTC", "0 12 * * 5"},
      {"0 9 15 * 0-6", "0 9 15 * 0-6"},
  };
  for (const auto& [text, cron] : cases) EXPECT_EQ(CronOf(text), cron) << text;
}

TEST(ParseSchedule, AsksAboutWhatNoClockScheduleKeeps) {
  for (const std::string text :
       {"every other week", "biweekly", "tomorrow at 5", "asap", "every 7 minutes",
        "every second day", "every 2nd week", "twice a day", "every 5 hours", "every 3 days",
        "the first monday of the month", "last day of the month", "0 0 30 2 *", "cron 61 * * * *",
        "at 25:00", "", "every monday at 9am and 5:30pm", "whenever you like"}) {
    absl::StatusOr<Schedule> s = ParseSchedule(text);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << text << " -> " << s->cron;
  }
  absl::StatusOr<Schedule> s = ParseSchedule("every other week");
  EXPECT_NE(s.status().message().find("every monday at 9am"), std::string::npos)
      << "the error says how to say it: " << s.status().message();
  s = ParseSchedule("every 7 minutes");
  EXPECT_NE(s.status().message().find("5, 10, 15"), std::string::npos) << s.status().message();
}

TEST(ParseSchedule, TakesTheZoneSaidOrTheUsers) {
  absl::StatusOr<Schedule> s = ParseSchedule("every monday at 9am", "Europe/Berlin");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->time_zone, "Europe/Berlin");
  EXPECT_EQ(s->description, "every Monday at 09:00 (Europe/Berlin)");
  s = ParseSchedule("weekdays at 7:30 america/new_york");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->time_zone, "America/New_York");
  s = ParseSchedule("daily at 6pm UTC", "Asia/Tokyo");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->time_zone, "UTC");
  s = ParseSchedule("0 9 * * 1 Europe/Paris");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->time_zone, "Europe/Paris");
  EXPECT_EQ(ParseSchedule("daily", "Mars/Olympus").status().code(),
            absl::StatusCode::kInvalidArgument);
  for (const char* path : {"../../etc/passwd", "/etc/localtime", "/dev/stdin", "file:UTC"}) {
    EXPECT_EQ(ParseSchedule("daily", path).status().code(), absl::StatusCode::kInvalidArgument)
        << path;
    EXPECT_FALSE(IsTimeZone(path)) << path;
  }
  EXPECT_FALSE(IsTimeZone("Mars/Olympus"));
}

TEST(ParseSchedule, DescribesTheScheduleInWords) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"every monday at 9am", "every Monday at 09:00 (UTC)"},
      {"weekdays at 7:30", "weekdays at 07:30 (UTC)"},
      {"every 2 hours", "every 2 hours (UTC)"},
      {"every minute", "every minute (UTC)"},
      {"every 15 minutes", "every 15 minutes (UTC)"},
      {"daily at 6pm", "every day at 18:00 (UTC)"},
      {"on the 1st of each month", "on the 1st of every month at 09:00 (UTC)"},
      {"quarterly", "on the 1st of every quarter at 09:00 (UTC)"},
      {"at 9am and 5pm", "every day at 09:00 and 17:00 (UTC)"},
      {"mondays and thursdays at 10am", "every Monday and Thursday at 10:00 (UTC)"},
      {"0 9 1 * 1", "cron '0 9 1 * 1' (UTC)"},
  };
  for (const auto& [text, words] : cases) {
    absl::StatusOr<Schedule> s = ParseSchedule(text);
    ASSERT_TRUE(s.ok()) << text << ": " << s.status();
    EXPECT_EQ(s->description, words) << text;
  }
}

TEST(Cron, NextSlotsFollowTheCalendar) {
  absl::StatusOr<Cron> cron = Cron::Parse("0 9 * * 1");
  ASSERT_TRUE(cron.ok());
  // 2026-11-27 is a Friday.
  auto next = cron->NextAfter(At(2026, 11, 27, 12, 0), "UTC");
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(Civil(*next), "2026-11-30 Mon 09:00");
  // Strictly after: the slot itself is not its own next.
  EXPECT_EQ(Civil(*cron->NextAfter(*next, "UTC")), "2026-12-07 Mon 09:00");

  cron = Cron::Parse("30 7 31 * *");
  EXPECT_EQ(Civil(*cron->NextAfter(At(2026, 11, 27, 0, 0), "UTC")), "2026-12-31 Thu 07:30");
  cron = Cron::Parse("0 0 29 2 *");
  EXPECT_EQ(Civil(*cron->NextAfter(At(2026, 3, 1, 0, 0), "UTC")), "2028-02-29 Tue 00:00");
  // Both day fields restricted: either fires (Vixie cron).
  cron = Cron::Parse("0 9 1 * 1");
  EXPECT_EQ(Civil(*cron->NextAfter(At(2026, 11, 27, 0, 0), "UTC")), "2026-11-30 Mon 09:00");
  EXPECT_EQ(Civil(*cron->NextAfter(At(2026, 11, 30, 10, 0), "UTC")), "2026-12-01 Tue 09:00");
  cron = Cron::Parse("*/15 * * * *");
  EXPECT_EQ(Civil(*cron->NextAfter(At(2026, 11, 27, 23, 50), "UTC")), "2026-11-28 Sat 00:00");
  EXPECT_FALSE(Cron::Parse("0 0 30 2 *")->NextAfter(At(2026, 1, 1, 0, 0), "UTC").has_value());
  EXPECT_FALSE(Cron::Parse("0 9 * * *")->NextAfter(At(2026, 1, 1, 0, 0), "Nowhere/Else"));
}

TEST(Cron, SlotsAreWallClockMinutesInTheZone) {
  absl::StatusOr<Cron> cron = Cron::Parse("0 9 * * *");
  ASSERT_TRUE(cron.ok());
  auto next = cron->NextAfter(At(2026, 11, 27, 15, 0), "America/New_York");
  // 09:00 in New York in winter is 14:00 UTC.
  EXPECT_EQ(Civil(*next), "2026-11-28 Sat 14:00");
  EXPECT_EQ(Civil(*next, "America/New_York"), "2026-11-28 Sat 09:00");
  // Across the spring change (2027-03-14 in New York) 09:00 stays 09:00.
  next = cron->NextAfter(At(2027, 3, 14, 0, 0), "America/New_York");
  EXPECT_EQ(Civil(*next), "2027-03-14 Sun 13:00");
}

TEST(Cron, AMinuteTheClockSkipsFiresAfterTheChangeAndARepeatedOneOnce) {
  // 2027-03-28: Berlin skips 02:00-03:00; a 02:30 job runs at 03:00 local.
  absl::StatusOr<Cron> cron = Cron::Parse("30 2 * * *");
  ASSERT_TRUE(cron.ok());
  auto next = cron->NextAfter(At(2027, 3, 27, 12, 0, "Europe/Berlin"), "Europe/Berlin");
  EXPECT_EQ(Civil(*next, "Europe/Berlin"), "2027-03-28 Sun 03:00");
  EXPECT_EQ(Civil(*cron->NextAfter(*next, "Europe/Berlin"), "Europe/Berlin"),
            "2027-03-29 Mon 02:30");
  // 2026-10-25: Berlin repeats 02:00-03:00; a 02:30 job runs once.
  next = cron->NextAfter(At(2026, 10, 24, 12, 0, "Europe/Berlin"), "Europe/Berlin");
  ASSERT_TRUE(next.has_value());
  auto after = cron->NextAfter(*next, "Europe/Berlin");
  EXPECT_EQ(Civil(*after, "Europe/Berlin"), "2026-10-26 Mon 02:30");
  // Every 30 minutes through the repeated hour: no slot twice.
  cron = Cron::Parse("*/30 * * * *");
  std::vector<int64_t> slots;
  core::TimePoint t = At(2026, 10, 25, 0, 0, "UTC");
  for (int i = 0; i < 6; ++i) {
    t = *cron->NextAfter(t, "Europe/Berlin");
    slots.push_back(core::MicrosOf(t));
  }
  for (size_t i = 1; i < slots.size(); ++i) EXPECT_GT(slots[i], slots[i - 1]);
}

TEST(Cron, RejectsMalformedFieldsByName) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"60 * * * *", "minute"}, {"* 24 * * *", "hour"},       {"* * 0 * *", "day of month"},
      {"* * * 13 *", "month"},  {"* * * * 8", "day of week"}, {"5-1 * * * *", "backwards"},
      {"*/0 * * * *", "step"},  {"* * * *", "five fields"},   {"a b c d e", "minute"},
  };
  for (const auto& [expression, says] : cases) {
    absl::StatusOr<Cron> cron = Cron::Parse(expression);
    ASSERT_FALSE(cron.ok()) << expression;
    EXPECT_NE(cron.status().message().find(says), std::string::npos)
        << expression << ": " << cron.status().message();
  }
}

TEST(Cron, NormalisesNamesAndSundaySeven) {
  EXPECT_EQ(Cron::Parse("0 9 * jan-mar mon-fri")->text(), "0 9 * 1-3 1-5");
  EXPECT_EQ(Cron::Parse("0,15,30,45 * * * *")->text(), "*/15 * * * *");
  EXPECT_EQ(Cron::Parse("0 0 * * 5-7")->text(), "0 0 * * 0,5,6");
  EXPECT_EQ(Cron::Parse("@weekly")->text(), "0 0 * * 0");
  EXPECT_EQ(Cron::Parse("1,2 * * * *")->text(), "1,2 * * * *");
}

}  // namespace
}  // namespace omniforge::schedule
