#include "libs/core/assertion.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

namespace omniforge::core {
namespace {

constexpr char kSeed[] = "0f1e2d3c4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff0";
constexpr char kOtherSeed[] = "aa1e2d3c4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff0";

class MovableClock final : public Clock {
 public:
  TimePoint Now() const override { return TimePointFromMicros(micros.load()); }
  std::atomic<int64_t> micros{1'800'000'000'000'000};
};

std::unique_ptr<SigningKey> Key(const char* seed) {
  auto key = ParseSigningKey(seed);
  EXPECT_TRUE(key.ok()) << key.status();
  return *std::move(key);
}

Ed25519PublicKey PublicOf(const char* seed) { return Key(seed)->public_key; }

class AssertionTest : public ::testing::Test {
 protected:
  MovableClock clock_;
  AssertionSigner signer_{"orchestrator", "k1", Key(kSeed), clock_};
  AssertionVerifier conversation_{"conversation", {{"k1", PublicOf(kSeed)}}, clock_};
  const Identity alice_{"acme", "alice"};
};

TEST_F(AssertionTest, AVerifiedAssertionSaysWhoForWhomAndUntilWhen) {
  const std::string token = signer_.Assert(alice_, "conversation");
  auto got = conversation_.Verify(token);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->who.tenant_id, "acme");
  EXPECT_EQ(got->who.user_id, "alice");
  EXPECT_EQ(got->issuer, "orchestrator");
  EXPECT_EQ(got->audience, "conversation");
  EXPECT_EQ(got->expires_at_ms, clock_.NowMicros() / 1000 + 300'000);
  EXPECT_EQ(token.rfind("v1.k1.", 0), 0U) << token;
}

TEST_F(AssertionTest, AnAssertionForAnotherServiceIsRefused) {
  auto got = conversation_.Verify(signer_.Assert(alice_, "executor"));
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_NE(got.status().message().find("is for executor, not conversation"), std::string::npos)
      << got.status();
}

TEST_F(AssertionTest, EveryChangedCharacterIsRefused) {
  const std::string token = signer_.Assert(alice_, "conversation");
  for (size_t i = 0; i < token.size(); ++i) {
    std::string changed = token;
    changed[i] = changed[i] == 'A' ? 'B' : 'A';
    EXPECT_EQ(conversation_.Verify(changed).status().code(), absl::StatusCode::kUnauthenticated)
        << "position " << i << ": " << changed;
  }
}

TEST_F(AssertionTest, AnotherTenantsPayloadUnderTheSameSignatureIsRefused) {
  const std::string token = signer_.Assert(alice_, "conversation");
  const std::string other = signer_.Assert({"globex", "alice"}, "conversation");
  // Its payload spliced in front of alice's signature.
  const size_t sig = token.rfind('.');
  const std::string spliced = other.substr(0, other.rfind('.')) + token.substr(sig);
  EXPECT_EQ(conversation_.Verify(spliced).status().code(), absl::StatusCode::kUnauthenticated);
}

TEST_F(AssertionTest, MissingMalformedAndUnknownKeysAreRefused) {
  for (const std::string& bad : std::vector<std::string>{"", "v1", "v1.k1.x.y", "v2.k1.e30.AAAA",
                                                         "garbage", std::string(5000, 'a')}) {
    EXPECT_EQ(conversation_.Verify(bad).status().code(), absl::StatusCode::kUnauthenticated)
        << bad.substr(0, 40);
  }
  AssertionSigner stranger("orchestrator", "k9", Key(kOtherSeed), clock_);
  auto got = conversation_.Verify(stranger.Assert(alice_, "conversation"));
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_NE(got.status().message().find("unknown key 'k9'"), std::string::npos) << got.status();
  // The right key id over another key's signature.
  AssertionSigner impostor("orchestrator", "k1", Key(kOtherSeed), clock_);
  EXPECT_EQ(conversation_.Verify(impostor.Assert(alice_, "conversation")).status().code(),
            absl::StatusCode::kUnauthenticated);
}

TEST_F(AssertionTest, AnExpiredAssertionIsRefusedEvenOnceVerified) {
  const std::string token = signer_.Assert(alice_, "conversation");
  ASSERT_TRUE(conversation_.Verify(token).ok());
  clock_.micros += 301'000'000;
  auto got = conversation_.Verify(token);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_NE(got.status().message().find("expired"), std::string::npos);
  // A verifier that never saw it refuses it too.
  AssertionVerifier fresh("conversation", {{"k1", PublicOf(kSeed)}}, clock_);
  EXPECT_EQ(fresh.Verify(token).status().code(), absl::StatusCode::kUnauthenticated);
}

TEST_F(AssertionTest, TheSignerReusesAnAssertionUntilHalfItsLifeIsGone) {
  const std::string first = signer_.Assert(alice_, "conversation");
  EXPECT_EQ(signer_.Assert(alice_, "conversation"), first);
  EXPECT_NE(signer_.Assert(alice_, "executor"), first);
  EXPECT_NE(signer_.Assert({"acme", "bob"}, "conversation"), first);
  clock_.micros += 149'000'000;
  EXPECT_EQ(signer_.Assert(alice_, "conversation"), first);
  clock_.micros += 2'000'000;
  const std::string renewed = signer_.Assert(alice_, "conversation");
  EXPECT_NE(renewed, first);
  EXPECT_TRUE(conversation_.Verify(renewed).ok());
}

TEST_F(AssertionTest, KeysRotateByIdWithBothAcceptedInBetween) {
  AssertionVerifier both("conversation", {{"k1", PublicOf(kSeed)}, {"k2", PublicOf(kOtherSeed)}},
                         clock_);
  AssertionSigner next("orchestrator", "k2", Key(kOtherSeed), clock_);
  EXPECT_TRUE(both.Verify(signer_.Assert(alice_, "conversation")).ok());
  EXPECT_TRUE(both.Verify(next.Assert(alice_, "conversation")).ok());
  AssertionVerifier only_new("conversation", {{"k2", PublicOf(kOtherSeed)}}, clock_);
  EXPECT_FALSE(only_new.Verify(signer_.Assert(alice_, "conversation")).ok());
}

TEST(AssertionKeysTest, KeysAreSixtyFourHexDigits) {
  EXPECT_TRUE(ParseSigningKey(std::string(kSeed) + "\n").ok());
  EXPECT_EQ(ParseSigningKey("abc").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseSigningKey(std::string(64, 'g')).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto key = ParseSigningKey(kSeed);
  ASSERT_TRUE(key.ok());
  const std::string hex = PublicKeyHex(**key);
  EXPECT_EQ(hex.size(), 64U);
  auto public_key = ParsePublicKey(hex);
  ASSERT_TRUE(public_key.ok());
  EXPECT_EQ(*public_key, (*key)->public_key);
  EXPECT_TRUE(IsValidKeyId("k-2024_01"));
  EXPECT_FALSE(IsValidKeyId(""));
  EXPECT_FALSE(IsValidKeyId("a.b"));
  EXPECT_FALSE(IsValidKeyId(std::string(33, 'a')));
}

}  // namespace
}  // namespace omniforge::core
