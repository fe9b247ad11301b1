#include "libs/core/secrets.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

#include "libs/core/api_keys.h"

namespace omniforge::core {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// Fake credentials are assembled at run time so that secret scanners on the
// repository do not flag this file.
std::string Fake(std::string_view prefix, size_t n, char fill = 'a') {
  std::string s(prefix);
  for (size_t i = 0; i < n; ++i) {
    s += static_cast<char>(fill + i % 26);
  }
  return s;
}

struct Case {
  const char* kind;
  std::string secret;
};

std::vector<Case> TokenCases() {
  return {
      {"openai_api_key", Fake("sk-", 40)},
      {"openai_api_key", Fake(std::string("sk-") + "proj-", 60)},
      {"anthropic_api_key", Fake(std::string("sk-") + "ant-api03-", 80)},
      {"aws_access_key", std::string("AKIA") + "IOSFODNN7EXAMPLE"},
      {"aws_access_key", std::string("ASIA") + "ABCDEFGHIJKLMNOP"},
      {"github_token", Fake(std::string("gh") + "p_", 36)},
      {"github_token", Fake(std::string("github") + "_pat_", 82)},
      {"slack_token", std::string("xox") + "b-123456789012-abcdefghijkl"},
      {"google_api_key", Fake(std::string("AI") + "za", 35, 'A')},
      {"stripe_key", Fake(std::string("sk_") + "live_", 24)},
      {"stripe_key", Fake(std::string("rk_") + "test_", 24)},
      // omniforge's own API keys (api_keys.h): ofk_<key id>_<secret>, hex.
      {"omniforge_api_key", std::string("ofk_") + "3f9a0c12d4e5_" + std::string(64, 'b')},
      {"jwt", std::string("eyJ") + "hbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0." +
                  "dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk"},
  };
}

TEST(SecretsTest, DetectsAndRedactsEachTokenKind) {
  for (const Case& c : TokenCases()) {
    const std::string text = "value: [" + c.secret + "] end";
    EXPECT_THAT(DetectSecrets(text), ElementsAre(c.kind)) << c.secret;
    EXPECT_EQ(RedactSecrets(text), "value: [[REDACTED]] end") << c.secret;
  }
}

TEST(SecretsTest, AFreshOmniforgeKeyIsDetectedAndAnIdAloneIsNot) {
  auto key = GenerateApiKey({"acme", "alice"}, "laptop");
  ASSERT_TRUE(key.ok());
  EXPECT_THAT(DetectSecrets("my key is " + key->key), ElementsAre("omniforge_api_key"));
  EXPECT_EQ(RedactSecrets("my key is " + key->key + "."), "my key is [REDACTED].");
  // The key id names a key without proving anything.
  EXPECT_THAT(DetectSecrets("key id " + key->key.substr(4, 12)), IsEmpty());
}

TEST(SecretsTest, AnthropicKeyIsNotReportedAsOpenAi) {
  const std::string key = Fake(std::string("sk-") + "ant-api03-", 40);
  EXPECT_THAT(DetectSecrets("key " + key), ElementsAre("anthropic_api_key"));
}

TEST(SecretsTest, PrivateKeyBlockIsRedactedThroughEndLine) {
  const std::string text =
      "cert follows\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n"
      "abc+/=\n-----END RSA PRIVATE KEY-----\nafter";
  EXPECT_THAT(DetectSecrets(text), ElementsAre("private_key"));
  EXPECT_EQ(RedactSecrets(text), "cert follows\n[REDACTED]\nafter");
}

TEST(SecretsTest, TruncatedPrivateKeyIsRedactedToTheEnd) {
  const std::string text = "oops -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA";
  EXPECT_THAT(DetectSecrets(text), ElementsAre("private_key"));
  EXPECT_EQ(RedactSecrets(text), "oops [REDACTED]");
}

TEST(SecretsTest, BearerTokenIsRedacted) {
  const std::string text = "Authorization: Bearer abcDEF0123456789xyz.~+/";
  EXPECT_THAT(DetectSecrets(text), ElementsAre("bearer_token"));
  EXPECT_EQ(RedactSecrets(text), "Authorization: [REDACTED]");
  EXPECT_THAT(DetectSecrets("the bearer of this letter"), IsEmpty());
}

TEST(SecretsTest, BearerJwtReportsBothKindsAndOneMask) {
  const std::string jwt = TokenCases().back().secret;
  const std::string text = "authorization: bearer " + jwt + " ok";
  EXPECT_THAT(DetectSecrets(text), ElementsAre("jwt", "bearer_token"));
  EXPECT_EQ(RedactSecrets(text), "authorization: [REDACTED] ok");
}

TEST(SecretsTest, PasswordAssignmentsRedactOnlyTheValue) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"password: hunter2", "password: [REDACTED]"},
      {"db PASSWORD=hunter2 user=app", "db PASSWORD=[REDACTED] user=app"},
      {"pwd=abc123", "pwd=[REDACTED]"},
      {"passwd = 'two words'", "passwd = '[REDACTED]'"},
      {R"({"password": "correct horse", "user": "bob"})",
       R"({"password": "[REDACTED]", "user": "bob"})"},
      {"client secret=xyz;next", "client secret=[REDACTED];next"},
      {"?api_key=abc&page=2", "?api_key=[REDACTED]&page=2"},
      {"Api-Key: 123", "Api-Key: [REDACTED]"},
      {"postgres://app:s3cret@db:5432/app", "postgres://app:[REDACTED]@db:5432/app"},
  };
  for (const auto& [text, redacted] : cases) {
    EXPECT_THAT(DetectSecrets(text), ElementsAre("password")) << text;
    EXPECT_EQ(RedactSecrets(text), redacted) << text;
  }
}

TEST(SecretsTest, CreditCardsNeedLayoutAndLuhn) {
  const std::vector<std::string> cards = {
      "4111 1111 1111 1111", "4111-1111-1111-1111", "4111111111111111",
      "5555 5555 5555 4444", "3782 822463 10005",   "378282246310005",
  };
  for (const std::string& card : cards) {
    const std::string text = "card " + card + ", thanks";
    EXPECT_THAT(DetectSecrets(text), ElementsAre("credit_card")) << card;
    EXPECT_EQ(RedactSecrets(text), "card [REDACTED], thanks") << card;
  }
  // Expiry right after the number: the card part is still found.
  EXPECT_EQ(RedactSecrets("pay 4111 1111 1111 1111 12 26"), "pay [REDACTED] 12 26");
}

TEST(SecretsTest, NoFalsePositivesOnOrdinaryText) {
  const std::vector<std::string> texts = {
      "my card number ends in 4242",
      "order 1234 5678 shipped",
      "card 4111 1111 1111 1112 fails Luhn",
      "id 123e4567-e89b-12d3-a456-426614174000",
      "id 12345678-1234-1234-1234-123456789012",
      "id 00000000-0000-0000-0000-000000000000",
      "at 1700000000000 ms",
      "ref4111111111111111 and 4111111111111111x",
      "call +1 415 555 0100 or 4155550100",
      "The secretary said the password policy changed.",
      "sk-short and ghp_short and AKIA1234",
      "a task-force-report-with-many-words-in-it",
      "",
  };
  for (const std::string& text : texts) {
    EXPECT_THAT(DetectSecrets(text), IsEmpty()) << text;
    EXPECT_EQ(RedactSecrets(text), text);
  }
}

TEST(SecretsTest, KindsAreInFixedOrderWithoutDuplicates) {
  const std::string text = "card 4111111111111111 and " + Fake("sk-", 30) + " and password=x and " +
                           Fake("sk-", 25, 'b') +
                           "\n-----BEGIN PRIVATE KEY-----\nAAAA\n"
                           "-----END PRIVATE KEY-----";
  EXPECT_THAT(DetectSecrets(text),
              ElementsAre("private_key", "openai_api_key", "password", "credit_card"));
}

TEST(SecretsTest, RedactionIsIdempotent) {
  const std::string once = RedactSecrets("password: hunter2 token " + Fake("sk-", 30));
  EXPECT_EQ(RedactSecrets(once), once);
  EXPECT_THAT(DetectSecrets(once), IsEmpty());
}

TEST(SecretsTest, ArbitraryBytesAreHandled) {
  const std::string text =
      std::string("\xff\xfe password=\xc3\xa9t\xc3\xa9 ") + '\0' + " 4111111111111111";
  EXPECT_EQ(RedactSecrets(text),
            std::string("\xff\xfe password=[REDACTED] ") + '\0' + " [REDACTED]");
}

// Linear time: 64 KiB of text, ordinary or built to provoke backtracking,
// is scanned in a few milliseconds. The bound is loose for slow CI machines,
// and looser under ThreadSanitizer (`make tsan`), which slows this code
// down some tenfold; backtracking would still exceed it by far.
#if defined(__SANITIZE_THREAD__)
constexpr double kLargeInputBoundMs = 2500;
#else
constexpr double kLargeInputBoundMs = 250;
#endif

TEST(SecretsTest, LargeInputsAreFast) {
  constexpr size_t kSize = size_t{64} * 1024;
  std::string prose;
  while (prose.size() < kSize) {
    prose += "The quick brown fox paid 12 dollars for order 1234 5678. ";
  }
  const std::vector<std::pair<std::string, std::string>> inputs = {
      {"prose", prose},
      {"digits", std::string(kSize, '4')},
      {"spaced digits",
       [] {
         std::string s;
         while (s.size() < kSize) s += "4 ";
         return s;
       }()},
      {"key prefixes",
       [] {
         std::string s;
         while (s.size() < kSize) s += "sk-ant-eyJ.eyJ.AIza";
         return s;
       }()},
      {"assignments",
       [] {
         std::string s;
         while (s.size() < kSize) s += "password=password:";
         return s;
       }()},
      {"pem headers",
       [] {
         std::string s;
         while (s.size() < kSize) s += "-----BEGIN PRIVATE KEY-----";
         return s;
       }()},
  };
  for (const auto& [name, text] : inputs) {
    const auto start = std::chrono::steady_clock::now();
    const std::string redacted = RedactSecrets(text);
    const auto ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    RecordProperty(name, std::to_string(ms));
    EXPECT_LT(ms, kLargeInputBoundMs) << name;
  }
}

}  // namespace
}  // namespace omniforge::core
