#include "libs/seal/sealed_text.h"

#include <gtest/gtest.h>
#include <sodium.h>

#include <nlohmann/json.hpp>

namespace omniforge::seal {
namespace {

DataKey TestKey(int id, unsigned char fill) {
  DataKey key{id, {}};
  key.bytes.fill(fill);
  return key;
}

class SealedTextTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_GE(sodium_init(), 0); }
};

TEST_F(SealedTextTest, ARoundTripKeepsTheTextAndHidesIt) {
  const DataKey key = TestKey(3, 7);
  const std::string ad = SealedAd("orchestration.plans", "acme", "plan-1", "objective");
  const std::string secret = "find the Q3 numbers for Globex — caf\xc3\xa9 \n\"quoted\"";
  const std::string sealed = SealText(key, secret, ad);
  EXPECT_TRUE(IsSealedText(sealed));
  EXPECT_EQ(SealedKeyId(sealed), 3);
  EXPECT_EQ(sealed.find("Globex"), std::string::npos);
  auto opened = OpenTextWith(key, sealed, ad);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ(*opened, secret);
  // Sealing twice gives two different values (a fresh nonce each time).
  EXPECT_NE(SealText(key, secret, ad), sealed);
}

TEST_F(SealedTextTest, AValueMovedToAnotherRowColumnOrTenantDoesNotOpen) {
  const DataKey key = TestKey(1, 9);
  const std::string sealed = SealText(key, "hello", SealedAd("t.x", "acme", "r1", "c"));
  for (const std::string& other :
       {SealedAd("t.x", "acme", "r2", "c"), SealedAd("t.x", "acme", "r1", "d"),
        SealedAd("t.x", "globex", "r1", "c"), SealedAd("t.y", "acme", "r1", "c")}) {
    EXPECT_EQ(OpenTextWith(key, sealed, other).status().code(), absl::StatusCode::kDataLoss)
        << other;
  }
}

TEST_F(SealedTextTest, TamperedMalformedOrWrongKeyIsDataLoss) {
  const DataKey key = TestKey(2, 1);
  const std::string ad = SealedAd("t.x", "acme", "r", "c");
  std::string sealed = SealText(key, "some words", ad);
  std::string tampered = sealed;
  tampered[tampered.size() - 3] = tampered[tampered.size() - 3] == 'A' ? 'B' : 'A';
  EXPECT_EQ(OpenTextWith(key, tampered, ad).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(OpenTextWith(key, "ofs1:2:not base64!", ad).status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(SealedKeyId("ofs1:x:AAAA"), 0);
  EXPECT_EQ(OpenTextWith(TestKey(5, 1), sealed, ad).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(OpenTextWith(TestKey(2, 4), sealed, ad).status().code(), absl::StatusCode::kDataLoss);
}

TEST_F(SealedTextTest, PlaintextFromBeforeSealingReadsAsItIs) {
  const DataKey key = TestKey(1, 1);
  auto opened = OpenTextWith(key, "an old row's words", "ad");
  ASSERT_TRUE(opened.ok());
  EXPECT_EQ(*opened, "an old row's words");
  EXPECT_FALSE(IsSealedText("of course"));
}

TEST_F(SealedTextTest, SealedJsonIsAJsonStringAJsonbColumnAccepts) {
  const DataKey key = TestKey(4, 2);
  const std::string doc = R"({"goal":"chase invoices","steps":[1,2]})";
  const std::string ad = SealedAd("orchestration.flows", "acme", "f", "state");
  const std::string sealed = SealJson(key, doc, ad);
  const nlohmann::json parsed = nlohmann::json::parse(sealed);
  ASSERT_TRUE(parsed.is_string());
  EXPECT_TRUE(IsSealedText(parsed.get<std::string>()));
  EXPECT_EQ(sealed.find("invoices"), std::string::npos);
  auto opened = OpenTextWith(key, parsed.get<std::string>(), ad);
  ASSERT_TRUE(opened.ok());
  EXPECT_EQ(*opened, doc);
}

}  // namespace
}  // namespace omniforge::seal
