// API keys: how the public entry point knows who is calling.
//
// A key is `ofk_<key id>_<secret>`: the key id (12 hex digits) finds the
// entry, the secret (64 hex digits, 256 random bits) proves possession. The
// key file never holds a key, only its SHA-256, with the tenant and user the
// key acts for, one key per line, optionally until when (`expires=`, UTC:
// RFC 3339 or a date, meaning its midnight UTC), then a label:
//
//   # key id     sha256 of the whole key                   tenant  user   [expires=...]       label
//   3f9a0c12d4e5 sha256:9b74c9897bac770ffc029102a200c5de...  acme    alice  expires=2027-03-01
//   laptop CLI
//
// Blank lines and lines starting with `#` are ignored. A fast hash is right
// here: the secret has 256 bits of entropy, so there is nothing to guess.
// ApiKeyStore is one reading of the file, thread-safe after construction
// (read-only); ApiKeyFile reads the file again when it changes.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "libs/core/clock.h"
#include "libs/core/identity.h"

namespace omniforge::core {

inline constexpr char kApiKeyPrefix[] = "ofk_";
// The header a gateway key names the end user of a call in.
inline constexpr char kOnBehalfOfHeader[] = "x-omniforge-on-behalf-of";

// What a key may do: act for one user, or (a gateway key) for one tenant,
// naming the user of each call itself.
enum class KeyKind { kUser, kGateway };

// Who a presented key acts for. A gateway key's identity has no user.
struct KeyGrant {
  Identity identity;
  KeyKind kind = KeyKind::kUser;
};

// Who a presented API key acts for. Thread-safe in every implementation.
class ApiKeys {
 public:
  virtual ~ApiKeys() = default;
  // UNAUTHENTICATED, with the same message, for a malformed key, an
  // unknown key id and a wrong secret (the comparison of the hash takes the
  // same time wherever it differs); for the right secret of an expired key,
  // a message saying when it expired.
  virtual absl::StatusOr<Identity> Authenticate(std::string_view key) const = 0;
  // The same with the key's kind; a source without gateway keys grants user
  // keys only.
  virtual absl::StatusOr<KeyGrant> Grant(std::string_view key) const {
    absl::StatusOr<Identity> who = Authenticate(key);
    if (!who.ok()) return who.status();
    return KeyGrant{*std::move(who), KeyKind::kUser};
  }
};

// The key id of a well-formed key `ofk_<key id>_<secret>`; empty for
// anything else.
std::string_view ApiKeyIdOf(std::string_view key);
// The SHA-256 of a whole key, as the key file and the database store it.
std::array<uint8_t, 32> ApiKeyHash(std::string_view key);
// Whether a presented key's hash is `stored`, in constant time.
bool ApiKeyHashMatches(const std::array<uint8_t, 32>& presented,
                       const std::array<uint8_t, 32>& stored);
// A new random secret for key id `key_id` (a new random id when empty):
// the whole key `ofk_<key id>_<secret>`. INTERNAL when libsodium cannot start.
absl::StatusOr<std::string> NewApiKeySecret(std::string_view key_id = {});
// The refusal of an expired key, naming when it expired.
absl::Status ApiKeyExpired(int64_t expires_micros);
// The same refusal for every unknown, malformed or wrong key.
absl::Status InvalidApiKey();
// An admin key file's tenant column naming every tenant.
inline constexpr char kAllTenants[] = "*";

class ApiKeyStore final : public ApiKeys {
 public:
  // Parses key-file text. INVALID_ARGUMENT naming the line for a malformed
  // line, a key id that is not 12 hex digits, a hash that is not
  // `sha256:` and 64 hex digits, a tenant or user outside
  // [A-Za-z0-9._:@-]{1,128}, an expiry that is not a time, or a key id
  // listed twice. With `all_tenants_allowed` (an admin key file) the
  // tenant may also be `*` (kAllTenants).
  static absl::StatusOr<ApiKeyStore> Parse(std::string_view text, bool all_tenants_allowed = false);
  // Reads and parses the file at `path` (NOT_FOUND when missing).
  static absl::StatusOr<ApiKeyStore> Load(const std::string& path,
                                          bool all_tenants_allowed = false);

  // The identity a presented key acts for (ApiKeys), now.
  absl::StatusOr<Identity> Authenticate(std::string_view key) const override {
    return AuthenticateAt(key, NowMicros());
  }
  // The same at `now_micros` (expiry).
  absl::StatusOr<Identity> AuthenticateAt(std::string_view key, int64_t now_micros) const;

  // Number of keys.
  size_t size() const { return entries_.size(); }
  // Whether the file lists key id `key_id`.
  bool Has(std::string_view key_id) const { return entries_.contains(std::string(key_id)); }

 private:
  struct Entry {
    std::array<uint8_t, 32> key_hash;
    Identity identity;
    std::optional<int64_t> expires_micros;  // nullopt: never
  };
  std::unordered_map<std::string, Entry> entries_;  // by key id
};

// A new random key for `who`, and its line for the key file. The key is
// shown once; only the line is stored.
struct NewApiKey {
  std::string key;
  std::string file_line;
};
// An expiry as the key file writes it (RFC 3339, or a date: its midnight
// UTC), in microseconds since the Unix epoch; nullopt for anything else.
std::optional<int64_t> ParseApiKeyExpiry(std::string_view text);

// `expires_micros` (Unix epoch, UTC): the key is refused from then on.
// INVALID_ARGUMENT for a tenant or user outside [A-Za-z0-9._:@-]{1,128}, a
// label of more than one line or one starting with `expires=` (the file
// would read it as the expiry).
// `all_tenants_allowed`: a line of the admin key file, whose tenant may be
// `*` (kAllTenants).
absl::StatusOr<NewApiKey> GenerateApiKey(const Identity& who, std::string_view label,
                                         std::optional<int64_t> expires_micros = std::nullopt,
                                         bool all_tenants_allowed = false);

// The key file at a path, read again when it changes: a new key works and a
// removed (revoked) or expired one stops working without a restart. Reload
// reads it when its inode, size or modification time differ from the last
// read (a Kubernetes Secret update swaps the file under its mount); a file
// that cannot be read or parsed leaves the keys as they were.
class ApiKeyFile final : public ApiKeys {
 public:
  // NOT_FOUND or INVALID_ARGUMENT (as ApiKeyStore::Load) when the file
  // cannot be used at start.
  // `all_tenants_allowed`: an admin key file (ApiKeyStore::Parse).
  static absl::StatusOr<std::unique_ptr<ApiKeyFile>> Open(const std::string& path,
                                                          bool all_tenants_allowed = false);

  absl::StatusOr<Identity> Authenticate(std::string_view key) const override;

  // Reads the file again when it changed (always with `force`): true when
  // it was read, false when it had not changed; the error of a file that
  // cannot be used (the keys stay as they were).
  absl::StatusOr<bool> Reload(bool force = false);

  size_t size() const;
  // Whether the file, as last read, lists key id `key_id`.
  bool Has(std::string_view key_id) const;
  const std::string& path() const { return path_; }

 private:
  struct Stamp {
    uint64_t inode = 0;
    int64_t size = -1;
    int64_t modified_ns = 0;
    bool operator==(const Stamp&) const = default;
  };
  ApiKeyFile(std::string path, ApiKeyStore store, Stamp stamp, bool all_tenants_allowed);
  static std::optional<Stamp> StampOf(const std::string& path);

  const std::string path_;
  const bool all_tenants_allowed_;
  mutable absl::Mutex mu_;
  std::shared_ptr<const ApiKeyStore> store_ ABSL_GUARDED_BY(mu_);
  Stamp stamp_ ABSL_GUARDED_BY(mu_);
};

// The key a call presents: the token of `authorization: Bearer <token>`
// (scheme case-insensitive), else the `x-api-key` value; empty when neither.
std::string_view PresentedApiKey(std::string_view authorization, std::string_view x_api_key);

}  // namespace omniforge::core
