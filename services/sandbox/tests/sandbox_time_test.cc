// The calendar arithmetic of the sandbox's zone.
#include "services/sandbox/src/sandbox_time.h"

#include <gtest/gtest.h>

namespace omniforge::sandbox {
namespace {

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
