#include "libs/core/ids.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <set>
#include <thread>
#include <unordered_set>

namespace omniforge::core {
namespace {

TEST(UuidTest, IsCanonicalVersion7WithRfcVariant) {
  const std::string id = NewUuid();
  ASSERT_TRUE(IsUuid(id)) << id;
  EXPECT_EQ(id.size(), 36u);
  EXPECT_EQ(id, [&] {
    std::string lower = id;
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    return lower;
  }());
  EXPECT_EQ(id[14], '7');
  EXPECT_NE(std::string("89ab").find(id[19]), std::string::npos) << id;
}

TEST(UuidTest, TimestampIsUnixMilliseconds) {
  const auto now = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  const int64_t before = now();
  const std::string id = NewUuid();
  const int64_t after = now();
  const std::string hex = id.substr(0, 8) + id.substr(9, 4);
  const int64_t ms = std::stoll(hex, nullptr, 16);
  EXPECT_GE(ms, before);
  // Sequencing within a millisecond may borrow the next one.
  EXPECT_LE(ms, after + 1);
}

TEST(UuidTest, SequentialIdsAreUniqueAndSorted) {
  constexpr int kCount = 100000;
  std::vector<std::string> ids;
  ids.reserve(kCount);
  for (int i = 0; i < kCount; ++i) ids.push_back(NewUuid());
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
  EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end());
  for (const std::string& id : ids) {
    ASSERT_EQ(id[14], '7') << id;
    ASSERT_NE(std::string("89ab").find(id[19]), std::string::npos) << id;
  }
}

TEST(UuidTest, UniqueAcrossThreads) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 5000;
  std::vector<std::vector<std::string>> per_thread(kThreads);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&per_thread, t] {
      for (int i = 0; i < kPerThread; ++i) per_thread[t].push_back(NewUuid());
    });
  }
  for (auto& thread : threads) thread.join();
  std::unordered_set<std::string> all;
  for (const auto& ids : per_thread) {
    EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
    all.insert(ids.begin(), ids.end());
  }
  EXPECT_EQ(all.size(), static_cast<size_t>(kThreads * kPerThread));
}

TEST(UuidTest, CanonicalIdIsTheLowerCaseFormOfAUuidAndLeavesOtherTextAlone) {
  const std::string id = NewUuid();
  std::string upper = id;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  ASSERT_NE(upper, id);
  EXPECT_EQ(CanonicalId(upper), id);
  EXPECT_EQ(CanonicalId(id), id);
  EXPECT_EQ(CanonicalId("Not-A-UUID"), "Not-A-UUID");
  EXPECT_EQ(CanonicalId(""), "");
}

TEST(UuidTest, IsUuidChecksCanonicalForm) {
  EXPECT_TRUE(IsUuid("123e4567-e89b-12d3-a456-426614174000"));
  EXPECT_TRUE(IsUuid("123E4567-E89B-12D3-A456-426614174000"));
  EXPECT_TRUE(IsUuid("00000000-0000-0000-0000-000000000000"));
  EXPECT_FALSE(IsUuid(""));
  EXPECT_FALSE(IsUuid("123e4567e89b12d3a456426614174000"));
  EXPECT_FALSE(IsUuid("{123e4567-e89b-12d3-a456-426614174000}"));
  EXPECT_FALSE(IsUuid("123e4567-e89b-12d3-a456-42661417400"));
  EXPECT_FALSE(IsUuid("123e4567-e89b-12d3-a456-4266141740000"));
  EXPECT_FALSE(IsUuid("123e4567-e89b-12d3-a456_426614174000"));
  EXPECT_FALSE(IsUuid("g23e4567-e89b-12d3-a456-426614174000"));
  EXPECT_FALSE(IsUuid("123e4567-e89b-12d3-a4560426614174000"));
}

}  // namespace
}  // namespace omniforge::core
