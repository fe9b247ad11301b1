// Reading and writing RFC 3339 times, and the calendar arithmetic of the
// sandbox's zone.
#include "services/sandbox/src/sandbox_time.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "libs/core/text.h"

namespace omniforge::sandbox {
namespace {

using ::testing::HasSubstr;

TEST(SandboxTimeTest, RfcThreeThreeThreeNineIsReadInEitherCase) {
  const auto upper = ParseRfc3339("start", "2026-11-25T13:00:00Z");
  ASSERT_TRUE(upper.ok()) << upper.status();
  const auto lower = ParseRfc3339("start", "2026-11-25t13:00:00z");
  ASSERT_TRUE(lower.ok()) << lower.status();
  EXPECT_EQ(*lower, *upper);
  const auto offset = ParseRfc3339("start", "2026-11-25t14:00:00+01:00");
  ASSERT_TRUE(offset.ok()) << offset.status();
  EXPECT_EQ(*offset, *upper);
  EXPECT_EQ(FormatRfc3339(*upper, absl::UTCTimeZone()), "2026-11-25T13:00:00+00:00");
}

TEST(SandboxTimeTest, WhatIsNotATimeIsRefusedWithAnExcerptThatKeepsUtf8Whole) {
  EXPECT_EQ(ParseRfc3339("start", "2026-11-25").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseRfc3339("start", "2026-11-25T13:00:00").status().code(),
            absl::StatusCode::kInvalidArgument);
  // 59 ASCII bytes then a two-byte character: a 60-byte cut would split it.
  const std::string text = std::string(59, 'x') + "é and more";
  const std::string refused(ParseRfc3339("start", text).status().message());
  EXPECT_THAT(refused, HasSubstr("start: expected an RFC 3339"));
  EXPECT_TRUE(core::IsValidUtf8(refused)) << refused;
  EXPECT_THAT(refused, HasSubstr(std::string(59, 'x') + "\""));
}

TEST(SandboxTimeTest, SaturdaysAndSundaysAreTheWeekendInTheZone) {
  absl::TimeZone paris;
  ASSERT_TRUE(absl::LoadTimeZone("Europe/Paris", &paris));
  EXPECT_FALSE(IsWeekend(*ParseRfc3339("t", "2026-11-27T23:30:00+01:00"), paris));  // Friday
  EXPECT_TRUE(IsWeekend(*ParseRfc3339("t", "2026-11-27T23:30:00Z"), paris));  // Saturday 00:30
  EXPECT_TRUE(IsWeekend(*ParseRfc3339("t", "2026-11-29T12:00:00+01:00"), paris));
  EXPECT_FALSE(IsWeekend(*ParseRfc3339("t", "2026-11-30T00:00:00+01:00"), paris));
}

}  // namespace
}  // namespace omniforge::sandbox
