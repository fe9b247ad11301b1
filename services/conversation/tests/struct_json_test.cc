#include "services/conversation/src/struct_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace omniforge::conversation {
namespace {

TEST(StructJsonTest, NestedMetadataRoundTrips) {
  const std::string text =
      R"({"routing":{"action":"CREATE_AGENT","confidence":0.92,"alternatives":["QUERY_INFO"]},)"
      R"("approved":true,"note":null,"count":3,"empty":[],"nested":{"deep":{"x":"ü"}}})";
  google::protobuf::Struct metadata;
  ASSERT_TRUE(JsonTextToStruct(text, &metadata));
  EXPECT_EQ(metadata.fields().at("routing").struct_value().fields().at("action").string_value(),
            "CREATE_AGENT");
  EXPECT_DOUBLE_EQ(metadata.fields().at("count").number_value(), 3);
  EXPECT_TRUE(metadata.fields().at("empty").has_list_value());
  EXPECT_EQ(nlohmann::json::parse(StructToJsonText(metadata)), nlohmann::json::parse(text));
}

TEST(StructJsonTest, OnlyObjectsAreMetadata) {
  google::protobuf::Struct metadata;
  EXPECT_FALSE(JsonTextToStruct("[1,2]", &metadata));
  EXPECT_FALSE(JsonTextToStruct("not json", &metadata));
  EXPECT_TRUE(metadata.fields().empty());
  EXPECT_EQ(StructToJsonText(google::protobuf::Struct()), "{}");
}

}  // namespace
}  // namespace omniforge::conversation
