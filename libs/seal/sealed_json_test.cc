#include "libs/seal/sealed_json.h"

#include <gtest/gtest.h>
#include <sodium.h>

#include "libs/seal/sealed_text.h"

namespace omniforge::seal {
namespace {

DataKey Key(int id, unsigned char fill) {
  DataKey key{id, {}};
  key.bytes.fill(fill);
  return key;
}

class SealedJsonTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_GE(sodium_init(), 0); }
  // Keys 1 and 2 of a tenant.
  static absl::StatusOr<DataKey> ById(int id) {
    if (id == 1) return Key(1, 7);
    if (id == 2) return Key(2, 8);
    return absl::DataLossError("no such key");
  }
};

TEST_F(SealedJsonTest, EveryStringIsSealedAndTheShapeStays) {
  const nlohmann::json original = {
      {"summary", "the Zanzibar merger"},
      {"count", 3},
      {"done", true},
      {"empty", ""},
      {"items", {{{"title", "call Zanzibar"}, {"n", 1}}, "Zanzibar again"}},
      {"none", nullptr}};
  nlohmann::json doc = original;
  SealStrings(doc, Key(1, 7), "platform|acme");
  const std::string stored = doc.dump();
  EXPECT_EQ(stored.find("Zanzibar"), std::string::npos);
  EXPECT_EQ(doc["count"], 3);
  EXPECT_EQ(doc["done"], true);
  EXPECT_EQ(doc["empty"], "");
  EXPECT_TRUE(IsSealedText(doc["items"][0]["title"].get<std::string>()));
  ASSERT_TRUE(OpenStrings(doc, ById, "platform|acme").ok());
  EXPECT_EQ(doc, original);
}

TEST_F(SealedJsonTest, OpeningFindsSealedStringsWhereverTheyAreAndLeavesOthers) {
  // As SQL builds a result: sealed values of rows sealed with two keys,
  // nested under other names, beside plain ones.
  const std::string ad = "platform|acme";
  nlohmann::json doc = {{"projects",
                         {{{"name", "Atlas"}, {"about", SealText(Key(1, 7), "merger files", ad)}},
                          {{"name", "Borealis"}, {"about", SealText(Key(2, 8), "the audit", ad)}}}},
                        {"note", "plain words"}};
  ASSERT_TRUE(OpenStrings(doc, ById, ad).ok());
  EXPECT_EQ(doc["projects"][0]["about"], "merger files");
  EXPECT_EQ(doc["projects"][1]["about"], "the audit");
  EXPECT_EQ(doc["note"], "plain words");
}

TEST_F(SealedJsonTest, AStringOfAnotherTenantOrAMissingKeyIsDataLoss) {
  nlohmann::json doc = {{"d", SealText(Key(1, 7), "words", "platform|globex")}};
  EXPECT_EQ(OpenStrings(doc, ById, "platform|acme").code(), absl::StatusCode::kDataLoss);
  nlohmann::json unknown = {{"d", SealText(Key(3, 7), "words", "platform|acme")}};
  EXPECT_EQ(OpenStrings(unknown, ById, "platform|acme").code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace omniforge::seal
