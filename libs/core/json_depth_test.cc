#include "libs/core/json_depth.h"

#include <gtest/gtest.h>

#include <string>

namespace omniforge::core {
namespace {

std::string Nested(size_t levels, char open = '[', char close = ']') {
  return std::string(levels, open) + std::string(levels, close);
}

TEST(JsonDepthTest, CountsArraysAndObjectsInsideOneAnother) {
  EXPECT_EQ(JsonDepth("42"), 0u);
  EXPECT_EQ(JsonDepth("{}"), 1u);
  EXPECT_EQ(JsonDepth(R"({"a":[1,{"b":[]}],"c":{}})"), 4u);
  EXPECT_EQ(JsonDepth(R"([[1],[2],[3]])"), 2u) << "siblings do not add up";
}

TEST(JsonDepthTest, BracketsInsideStringsDoNotCount) {
  EXPECT_EQ(JsonDepth(R"({"a":"[[[[{{{{"})"), 1u);
  EXPECT_EQ(JsonDepth(R"({"a":"quote \" then [[[["})"), 1u) << "an escaped quote ends nothing";
  EXPECT_EQ(JsonDepth(R"({"a":"backslash \\"}[)"), 1u) << "an escaped backslash ends the string";
}

TEST(JsonDepthTest, TheLimitItselfIsAllowedAndOneMoreLevelIsNot) {
  EXPECT_TRUE(JsonDepthWithin(Nested(kMaxJsonDepth)));
  EXPECT_FALSE(JsonDepthWithin(Nested(kMaxJsonDepth + 1)));
  EXPECT_FALSE(JsonDepthWithin(Nested(kMaxJsonDepth + 1, '{', '}')));
  EXPECT_TRUE(CheckJsonDepth("metadata_json", Nested(kMaxJsonDepth)).ok());
}

TEST(JsonDepthTest, ADeepTextIsRefusedWithTheFieldAndTheLimitNamed) {
  // What crashed a service before: 58,000 levels in 116 KB.
  const std::string deep = R"({"name":"x","config":{"a":)" + Nested(58000) + "}}";
  const absl::Status status = CheckJsonDepth("arguments_json", deep);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "arguments_json: JSON nested more than 64 levels deep (the limit)");
  EXPECT_EQ(JsonDepth(deep, 10), 11u) << "counting stops past the limit";
}

TEST(JsonDepthTest, MalformedTextIsLeftToTheParser) {
  EXPECT_EQ(JsonDepth("]]]]"), 0u);
  EXPECT_EQ(JsonDepth(R"("unterminated [[[)"), 0u);
  EXPECT_EQ(JsonDepth("[[[\\"), 3u);
  EXPECT_TRUE(CheckJsonDepth("x", "not json at all").ok());
}

}  // namespace
}  // namespace omniforge::core
