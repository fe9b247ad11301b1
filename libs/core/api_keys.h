// API keys: how the public entry point knows who is calling.
//
// A key is `ofk_<key id>_<secret>`: the key id (12 hex digits) finds the
// entry, the secret (64 hex digits, 256 random bits) proves possession. The
// key file never holds a key, only its SHA-256, with the tenant and user the
// key acts for, one key per line:
//
//   # key id     sha256 of the whole key                   tenant  user       label
//   3f9a0c12d4e5 sha256:9b74c9897bac770ffc029102a200c5de...  acme    alice      laptop CLI
//
// Blank lines and lines starting with `#` are ignored. A fast hash is right
// here: the secret has 256 bits of entropy, so there is nothing to guess.
// Thread-safe after construction (read-only).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "absl/status/statusor.h"
#include "libs/core/identity.h"

namespace omniforge::core {

inline constexpr char kApiKeyPrefix[] = "ofk_";

class ApiKeyStore final {
 public:
  // Parses key-file text. INVALID_ARGUMENT naming the line for a malformed
  // line, a key id that is not 12 hex digits, a hash that is not
  // `sha256:` and 64 hex digits, a tenant or user outside
  // [A-Za-z0-9._:@-]{1,128}, or a key id listed twice.
  static absl::StatusOr<ApiKeyStore> Parse(std::string_view text);
  // Reads and parses the file at `path` (NOT_FOUND when missing).
  static absl::StatusOr<ApiKeyStore> Load(const std::string& path);

  // The identity a presented key acts for. UNAUTHENTICATED, with the same
  // message, for a malformed key, an unknown key id and a wrong secret; the
  // comparison of the hash takes the same time wherever it differs.
  absl::StatusOr<Identity> Authenticate(std::string_view key) const;

  // Number of keys.
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::array<uint8_t, 32> key_hash;
    Identity identity;
  };
  std::unordered_map<std::string, Entry> entries_;  // by key id
};

// A new random key for `who`, and its line for the key file. The key is
// shown once; only the line is stored.
struct NewApiKey {
  std::string key;
  std::string file_line;
};
absl::StatusOr<NewApiKey> GenerateApiKey(const Identity& who, std::string_view label);

// The key a call presents: the token of `authorization: Bearer <token>`
// (scheme case-insensitive), else the `x-api-key` value; empty when neither.
std::string_view PresentedApiKey(std::string_view authorization, std::string_view x_api_key);

}  // namespace omniforge::core
