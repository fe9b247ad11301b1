#include "libs/llm/usage_collection.h"

#include <gtest/gtest.h>

#include <thread>

#include "libs/llm/errors.h"

namespace omniforge::llm {
namespace {

UsageRecord Call(const std::string& operation) {
  UsageRecord record;
  record.operation_type = operation;
  return record;
}

TEST(UsageCollectionTest, TheInnermostScopeOfTheCallingThreadCollects) {
  CollectingUsageSink sink;
  sink.Record(Call("before"));  // no scope: dropped
  std::vector<UsageRecord> outer;
  std::vector<UsageRecord> inner;
  std::vector<UsageRecord> other_thread;
  {
    ScopedUsageCollection collect(&outer);
    sink.Record(Call("a"));
    {
      ScopedUsageCollection nested(&inner);
      sink.Record(Call("b"));
      // Another thread's calls are not this scope's.
      std::thread([&] {
        sink.Record(Call("elsewhere"));
        ScopedUsageCollection its_own(&other_thread);
        sink.Record(Call("c"));
      }).join();
    }
    sink.Record(Call("d"));
  }
  sink.Record(Call("after"));
  ASSERT_EQ(outer.size(), 2u);
  EXPECT_EQ(outer[0].operation_type, "a");
  EXPECT_EQ(outer[1].operation_type, "d");
  ASSERT_EQ(inner.size(), 1u);
  EXPECT_EQ(inner[0].operation_type, "b");
  ASSERT_EQ(other_thread.size(), 1u);
  EXPECT_EQ(other_thread[0].operation_type, "c");
}

// A call's failure travels by name (the intent service's ModelCall) and is
// read back as the same kind.
TEST(UsageCollectionTest, EveryErrorKindIsReadBackFromItsName) {
  for (int k = static_cast<int>(LlmErrorKind::kNone);
       k <= static_cast<int>(LlmErrorKind::kNotConfigured); ++k) {
    const auto kind = static_cast<LlmErrorKind>(k);
    EXPECT_EQ(ErrorKindFromName(ErrorKindName(kind)), kind) << ErrorKindName(kind);
  }
  EXPECT_EQ(ErrorKindFromName("unknown"), std::nullopt);
  EXPECT_EQ(ErrorKindFromName(""), std::nullopt);
}

}  // namespace
}  // namespace omniforge::llm
