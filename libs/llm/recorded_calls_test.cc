#include "libs/llm/recorded_calls.h"

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

TEST(RecordedCallsTest, TakeHandsOnTheCallsRecordedSinceTheLastTakeInOrder) {
  RecordedCalls calls;
  EXPECT_TRUE(calls.Take().empty());
  calls.Record(Call("a"));
  calls.Record(Call("b"));
  const std::vector<UsageRecord> first = calls.Take();
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].operation_type, "a");
  EXPECT_EQ(first[1].operation_type, "b");
  EXPECT_TRUE(calls.Take().empty());
  calls.Record(Call("c"));
  const std::vector<UsageRecord> second = calls.Take();
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].operation_type, "c");
}

// Two requests served at once, each given its own: neither sees the
// other's calls, whichever thread makes them.
TEST(RecordedCallsTest, EachRequestKeepsOnlyTheCallsGivenIt) {
  RecordedCalls mine;
  RecordedCalls theirs;
  std::thread other([&] {
    for (int i = 0; i < 100; ++i) theirs.Record(Call("theirs"));
  });
  for (int i = 0; i < 100; ++i) mine.Record(Call("mine"));
  other.join();
  const std::vector<UsageRecord> kept = mine.Take();
  ASSERT_EQ(kept.size(), 100u);
  for (const UsageRecord& r : kept) EXPECT_EQ(r.operation_type, "mine");
  EXPECT_EQ(theirs.Take().size(), 100u);
}

// A call's failure travels by name (the intent service's ModelCall) and is
// read back as the same kind.
TEST(UsageRecordTest, EveryErrorKindIsReadBackFromItsName) {
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
