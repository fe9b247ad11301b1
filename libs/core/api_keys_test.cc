#include "libs/core/api_keys.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <string>

namespace omniforge::core {
namespace {

using ::testing::HasSubstr;

TEST(ApiKeysTest, AGeneratedKeyAuthenticatesAsItsTenantAndUser) {
  absl::StatusOr<NewApiKey> alice = GenerateApiKey({"acme", "alice"}, "laptop CLI");
  absl::StatusOr<NewApiKey> bob = GenerateApiKey({"globex", "bob"}, "");
  ASSERT_TRUE(alice.ok() && bob.ok());
  EXPECT_THAT(alice->key, ::testing::StartsWith("ofk_"));
  EXPECT_EQ(alice->key.size(), 4 + 12 + 1 + 64);
  // The file holds the hash, never the key or its secret.
  EXPECT_EQ(alice->file_line.find(alice->key.substr(17)), std::string::npos);
  EXPECT_THAT(alice->file_line, HasSubstr(" acme alice laptop CLI"));

  absl::StatusOr<ApiKeyStore> store =
      ApiKeyStore::Parse("# keys\n\n" + alice->file_line + "\n  " + bob->file_line + "  \n");
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(store->size(), 2u);
  absl::StatusOr<Identity> who = store->Authenticate(alice->key);
  ASSERT_TRUE(who.ok());
  EXPECT_EQ(who->tenant_id, "acme");
  EXPECT_EQ(who->user_id, "alice");
  who = store->Authenticate(bob->key);
  ASSERT_TRUE(who.ok());
  EXPECT_EQ(who->tenant_id, "globex");
}

TEST(ApiKeysTest, WrongUnknownAndMalformedKeysAreRefusedAlike) {
  absl::StatusOr<NewApiKey> alice = GenerateApiKey({"acme", "alice"}, "");
  absl::StatusOr<NewApiKey> stranger = GenerateApiKey({"acme", "mallory"}, "");
  ASSERT_TRUE(alice.ok() && stranger.ok());
  absl::StatusOr<ApiKeyStore> store = ApiKeyStore::Parse(alice->file_line);
  ASSERT_TRUE(store.ok());

  std::string wrong_secret = alice->key;
  wrong_secret.back() = wrong_secret.back() == '0' ? '1' : '0';
  const std::string cases[] = {
      wrong_secret,
      stranger->key,                                                    // unknown key id
      "",                                                               // nothing
      alice->key.substr(0, alice->key.size() - 1),                      // cut short
      alice->key + "0",                                                 // too long
      "ofk_" + alice->key.substr(4, 12) + "-" + alice->key.substr(17),  // bad separator
      "sk-" + alice->key.substr(3),                                     // another prefix
  };
  for (const std::string& key : cases) {
    absl::StatusOr<Identity> who = store->Authenticate(key);
    ASSERT_FALSE(who.ok()) << key;
    EXPECT_EQ(who.status().code(), absl::StatusCode::kUnauthenticated);
    EXPECT_EQ(who.status().message(), "invalid API key");
  }
  std::string upper = alice->key;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_FALSE(store->Authenticate(upper).ok());
}

TEST(ApiKeysTest, MalformedKeyFilesNameTheLine) {
  absl::StatusOr<NewApiKey> key = GenerateApiKey({"acme", "alice"}, "");
  ASSERT_TRUE(key.ok());
  const std::string hash = "sha256:" + std::string(64, 'a');
  const struct {
    std::string text;
    std::string message;
  } cases[] = {
      {"abcdefabcdef " + hash + " acme", "line 1: expected"},
      {"\nABCDEFABCDEF " + hash + " acme alice", "line 2: the key id"},
      {"abcdefabcde " + hash + " acme alice", "the key id"},
      {"abcdefabcdef md5:" + std::string(64, 'a') + " acme alice", "the hash"},
      {"abcdefabcdef sha256:" + std::string(63, 'a') + " acme alice", "the hash"},
      {"abcdefabcdef " + hash + " ac/me alice", "tenant and user"},
      {key->file_line + "\n" + key->file_line, "line 2: key id"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<ApiKeyStore> store = ApiKeyStore::Parse(c.text);
    ASSERT_FALSE(store.ok()) << c.text;
    EXPECT_EQ(store.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(store.status().message(), HasSubstr(c.message)) << c.text;
  }
  EXPECT_EQ(ApiKeyStore::Load("/nonexistent/omniforge-keys").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(ApiKeysTest, GenerationRefusesBadIdentitiesAndMultiLineLabels) {
  EXPECT_FALSE(GenerateApiKey({"", "alice"}, "").ok());
  EXPECT_FALSE(GenerateApiKey({"acme", "al ice"}, "").ok());
  EXPECT_FALSE(GenerateApiKey({"acme", "alice"}, "two\nlines").ok());
  absl::StatusOr<NewApiKey> a = GenerateApiKey({"acme", "alice"}, "");
  absl::StatusOr<NewApiKey> b = GenerateApiKey({"acme", "alice"}, "");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->key, b->key);
}

// Found by fuzz/api_keys_fuzz.cc: a label whose first word is `expires=...`
// was written where Parse reads the expiry, so the line gave the key an
// expiry nobody asked for, or did not parse at all.
TEST(ApiKeysTest, GenerationRefusesALabelTheFileWouldReadAsAnExpiry) {
  absl::StatusOr<NewApiKey> key = GenerateApiKey({"acme", "alice"}, "expires=2027-01-01 laptop");
  EXPECT_EQ(key.status().code(), absl::StatusCode::kInvalidArgument);
  key = GenerateApiKey({"acme", "alice"}, "expires=tomorrow");
  EXPECT_EQ(key.status().code(), absl::StatusCode::kInvalidArgument);
  key = GenerateApiKey({"acme", "alice"}, "laptop expires=2027-01-01");
  ASSERT_TRUE(key.ok()) << key.status();
  absl::StatusOr<ApiKeyStore> store = ApiKeyStore::Parse(key->file_line);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_TRUE(store->AuthenticateAt(key->key, INT64_MAX).ok());
}

// Found by fuzz/api_keys_fuzz.cc: an expiry at the epoch itself was read
// as "never expires".
TEST(ApiKeysTest, AKeyExpiringAtTheEpochIsExpired) {
  absl::StatusOr<NewApiKey> key = GenerateApiKey({"acme", "alice"}, "", 0);
  ASSERT_TRUE(key.ok()) << key.status();
  absl::StatusOr<ApiKeyStore> store = ApiKeyStore::Parse(key->file_line);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_TRUE(store->AuthenticateAt(key->key, -1).ok());
  EXPECT_EQ(store->AuthenticateAt(key->key, 0).status().code(), absl::StatusCode::kUnauthenticated);
}

TEST(ApiKeysTest, AKeyWithAnExpiryWorksUntilThenAndSaysWhenItExpired) {
  const int64_t expiry = *ParseApiKeyExpiry("2027-03-01T12:00:00Z");
  EXPECT_EQ(ParseApiKeyExpiry("2027-03-01"), expiry - int64_t{12} * 3600 * 1'000'000);
  EXPECT_EQ(ParseApiKeyExpiry("2027-03-01T13:00:00+01:00"), expiry);
  EXPECT_FALSE(ParseApiKeyExpiry("next tuesday").has_value());
  absl::StatusOr<NewApiKey> key = GenerateApiKey({"acme", "alice"}, "ci job", expiry);
  ASSERT_TRUE(key.ok());
  EXPECT_THAT(key->file_line, HasSubstr(" acme alice expires=2027-03-01T12:00:00Z ci job"));
  absl::StatusOr<ApiKeyStore> store = ApiKeyStore::Parse(key->file_line);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_TRUE(store->AuthenticateAt(key->key, expiry - 1).ok());
  absl::StatusOr<Identity> late = store->AuthenticateAt(key->key, expiry);
  EXPECT_EQ(late.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(late.status().message(), "API key expired at 2027-03-01T12:00:00Z");
  // Only the key's holder learns that: a wrong secret is just invalid.
  std::string wrong = key->key;
  wrong.back() = wrong.back() == '0' ? '1' : '0';
  EXPECT_EQ(store->AuthenticateAt(wrong, expiry).status().message(), "invalid API key");
  // A date alone is its midnight UTC; a label that is not `expires=` is a label.
  const std::string line = key->file_line.substr(0, key->file_line.find(" expires="));
  store = ApiKeyStore::Parse(line + " expires=2027-03-01");
  ASSERT_TRUE(store.ok());
  EXPECT_FALSE(store->AuthenticateAt(key->key, expiry - int64_t{12} * 3600 * 1'000'000).ok());
  store = ApiKeyStore::Parse(line + " expiring soon");
  ASSERT_TRUE(store.ok());
  EXPECT_TRUE(store->AuthenticateAt(key->key, expiry * 2).ok());
  EXPECT_THAT(ApiKeyStore::Parse(line + " expires=soon").status().message(),
              HasSubstr("line 1: expires="));
}

TEST(ApiKeysTest, TheKeyFileIsReadAgainWhenItChangesAndABadFileChangesNothing) {
  const std::string path =
      ::testing::TempDir() + "/omniforge-api-keys-" + std::to_string(::getpid()) + ".txt";
  absl::StatusOr<NewApiKey> alice = GenerateApiKey({"acme", "alice"}, "");
  absl::StatusOr<NewApiKey> bob = GenerateApiKey({"acme", "bob"}, "");
  ASSERT_TRUE(alice.ok() && bob.ok());
  std::ofstream(path) << alice->file_line << "\n";
  absl::StatusOr<std::unique_ptr<ApiKeyFile>> keys = ApiKeyFile::Open(path);
  ASSERT_TRUE(keys.ok()) << keys.status();
  ApiKeyFile& file = **keys;
  EXPECT_TRUE(file.Authenticate(alice->key).ok());
  EXPECT_FALSE(file.Authenticate(bob->key).ok());
  EXPECT_EQ(file.Reload().value_or(true), false) << "unchanged: not read";

  // Bob added, Alice revoked: a new file swapped in, as a Secret update does.
  const std::string next = path + ".next";
  std::ofstream(next) << bob->file_line << "\n";
  std::filesystem::rename(next, path);
  EXPECT_EQ(file.Reload().value_or(false), true);
  EXPECT_TRUE(file.Authenticate(bob->key).ok());
  EXPECT_FALSE(file.Authenticate(alice->key).ok());
  EXPECT_EQ(file.size(), 1u);

  // A broken file is refused and the keys stay; it is not read again until it changes.
  std::ofstream(next) << "not a key line\n";
  std::filesystem::rename(next, path);
  EXPECT_EQ(file.Reload().status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(file.Authenticate(bob->key).ok());
  EXPECT_EQ(file.Reload().value_or(true), false);
  EXPECT_EQ(file.Reload(/*force=*/true).status().code(), absl::StatusCode::kInvalidArgument);
  std::filesystem::remove(path);
  EXPECT_EQ(file.Reload().status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(file.Authenticate(bob->key).ok());
  EXPECT_EQ(ApiKeyFile::Open(path).status().code(), absl::StatusCode::kNotFound);
}

TEST(ApiKeysTest, TheKeyComesFromABearerTokenOrTheApiKeyHeader) {
  EXPECT_EQ(PresentedApiKey("Bearer ofk_x", ""), "ofk_x");
  EXPECT_EQ(PresentedApiKey("bearer   ofk_x  ", "ofk_y"), "ofk_x");
  EXPECT_EQ(PresentedApiKey("", " ofk_y "), "ofk_y");
  EXPECT_EQ(PresentedApiKey("Basic dXNlcjpwYXNz", "ofk_y"), "ofk_y");
  EXPECT_EQ(PresentedApiKey("Bearer ", ""), "");
  EXPECT_EQ(PresentedApiKey("", ""), "");
}

}  // namespace
}  // namespace omniforge::core
