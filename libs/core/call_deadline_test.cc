#include "libs/core/call_deadline.h"

#include <gtest/gtest.h>

#include <thread>

namespace omniforge::core {
namespace {

using std::chrono::seconds;
using std::chrono::system_clock;

TEST(CallDeadlineTest, ScopesNestAndOnlyShorten) {
  EXPECT_FALSE(CallDeadline().has_value());
  const auto outer = system_clock::now() + seconds(10);
  {
    ScopedCallDeadline a(outer);
    EXPECT_EQ(CallDeadline(), outer);
    {
      ScopedCallDeadline longer(outer + seconds(5));
      EXPECT_EQ(CallDeadline(), outer);
      ScopedCallDeadline shorter(outer - seconds(5));
      EXPECT_EQ(CallDeadline(), outer - seconds(5));
    }
    EXPECT_EQ(CallDeadline(), outer);
  }
  EXPECT_FALSE(CallDeadline().has_value());
}

TEST(CallDeadlineTest, AnInfiniteDeadlineIsNoDeadline) {
  ScopedCallDeadline none(system_clock::time_point::max());
  EXPECT_FALSE(CallDeadline().has_value());
}

TEST(CallDeadlineTest, EachThreadHasItsOwn) {
  ScopedCallDeadline here(system_clock::now() + seconds(1));
  bool other_has_one = true;
  std::thread([&] { other_has_one = CallDeadline().has_value(); }).join();
  EXPECT_FALSE(other_has_one);
  EXPECT_TRUE(CallDeadline().has_value());
}

}  // namespace
}  // namespace omniforge::core
