#include "libs/core/struct_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace omniforge::core {
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

TEST(StructJsonTest, JsonObjectsConvertBothWaysWithoutText) {
  const nlohmann::json routing = {{"turn_id", "t-1"},
                                  {"entities", {{"agent_name", "invoice-chaser"}}},
                                  {"listed_agents", {"a", "b"}},
                                  {"pending", nullptr},
                                  {"confidence", 0.5},
                                  {"clarifications", 2}};
  const google::protobuf::Struct s = StructFromJson(routing);
  EXPECT_EQ(s.fields().at("listed_agents").list_value().values(1).string_value(), "b");
  EXPECT_TRUE(s.fields().at("pending").has_null_value());
  EXPECT_EQ(JsonFromStruct(s), routing);
  // Counts stay integers (the routing reads them as such); fractions stay.
  EXPECT_TRUE(JsonFromStruct(s)["clarifications"].is_number_integer());
  EXPECT_TRUE(JsonFromStruct(s)["confidence"].is_number_float());
  EXPECT_TRUE(StructFromJson(nlohmann::json::array({1})).fields().empty());
  EXPECT_EQ(JsonFromStruct(google::protobuf::Struct()), nlohmann::json::object());
}

}  // namespace
}  // namespace omniforge::core
