#include "libs/core/api_keys.h"

#include <sodium.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "libs/core/digest.h"
#include "libs/core/error_catalog.h"
#include "libs/core/error_reason.h"
#include "libs/core/files.h"
#include "libs/core/logging.h"
#include "libs/core/metrics.h"
#include "libs/core/text.h"

namespace omniforge::core {
namespace {

constexpr size_t kKeyIdHexDigits = 12;
constexpr size_t kSecretBytes = 32;
constexpr char kHashPrefix[] = "sha256:";
constexpr std::string_view kExpiresPrefix = "expires=";

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string_view Strip(std::string_view s) {
  while (!s.empty() && IsBlank(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsBlank(s.back())) s.remove_suffix(1);
  return s;
}

// The blank-separated words of `line`.
std::vector<std::string_view> Words(std::string_view line) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && IsBlank(line[i])) ++i;
    size_t start = i;
    while (i < line.size() && !IsBlank(line[i])) ++i;
    if (i > start) words.push_back(line.substr(start, i - start));
  }
  return words;
}

bool IsLowerHex(std::string_view s, size_t digits) {
  if (s.size() != digits) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string ToHex(const uint8_t* bytes, size_t n) {
  std::string hex(n * 2 + 1, '\0');
  sodium_bin2hex(hex.data(), hex.size(), bytes, n);
  hex.pop_back();
  return hex;
}

std::array<uint8_t, 32> Sha256(std::string_view text) {
  std::array<uint8_t, 32> digest;
  crypto_hash_sha256(digest.data(), reinterpret_cast<const unsigned char*>(text.data()),
                     text.size());
  return digest;
}

absl::Status LineError(size_t line, std::string_view what) {
  return absl::InvalidArgumentError("API key file line " + std::to_string(line) + ": " +
                                    std::string(what));
}

}  // namespace

// The key id of a well-formed key, or empty.
std::string_view ApiKeyIdOf(std::string_view key) {
  constexpr std::string_view kPrefix = kApiKeyPrefix;
  if (key.substr(0, kPrefix.size()) != kPrefix) return {};
  key.remove_prefix(kPrefix.size());
  if (key.size() != kKeyIdHexDigits + 1 + kSecretBytes * 2 || key[kKeyIdHexDigits] != '_') {
    return {};
  }
  std::string_view id = key.substr(0, kKeyIdHexDigits);
  if (!IsLowerHex(id, kKeyIdHexDigits) ||
      !IsLowerHex(key.substr(kKeyIdHexDigits + 1), kSecretBytes * 2)) {
    return {};
  }
  return id;
}

namespace {

std::string FormatExpiry(int64_t micros) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixMicros(micros), absl::UTCTimeZone());
}

}  // namespace

std::array<uint8_t, 32> ApiKeyHash(std::string_view key) { return Sha256(key); }

bool ApiKeyHashMatches(const std::array<uint8_t, 32>& presented,
                       const std::array<uint8_t, 32>& stored) {
  return sodium_memcmp(presented.data(), stored.data(), presented.size()) == 0;
}

absl::StatusOr<std::string> NewApiKeySecret(std::string_view key_id) {
  if (sodium_init() < 0) return absl::InternalError("libsodium failed to initialise");
  std::string id(key_id);
  if (id.empty()) {
    uint8_t id_bytes[kKeyIdHexDigits / 2];
    randombytes_buf(id_bytes, sizeof(id_bytes));
    id = ToHex(id_bytes, sizeof(id_bytes));
  }
  uint8_t secret[kSecretBytes];
  randombytes_buf(secret, sizeof(secret));
  std::string key = absl::StrCat(kApiKeyPrefix, id, "_", ToHex(secret, sizeof(secret)));
  sodium_memzero(secret, sizeof(secret));
  return key;
}

absl::Status ApiKeyExpired(int64_t expires_micros) {
  return WithReason(
      absl::UnauthenticatedError("API key expired at " + FormatExpiry(expires_micros)),
      kReasonApiKeyExpired);
}

absl::Status InvalidApiKey() { return absl::UnauthenticatedError("invalid API key"); }

std::optional<int64_t> ParseApiKeyExpiry(std::string_view text) {
  absl::Time t;
  std::string error;
  const std::string value(text);  // Debian's absl::string_view is not std::string_view
  if (!absl::ParseTime(absl::RFC3339_full, value, &t, &error) &&
      !absl::ParseTime("%Y-%m-%d", value, absl::UTCTimeZone(), &t, &error)) {
    return std::nullopt;
  }
  return absl::ToUnixMicros(t);
}

absl::StatusOr<ApiKeyStore> ApiKeyStore::Parse(std::string_view text, bool all_tenants_allowed) {
  if (sodium_init() < 0) return absl::InternalError("libsodium failed to initialise");
  ApiKeyStore store;
  size_t number = 0;
  while (!text.empty()) {
    const size_t end = std::min(text.find('\n'), text.size());
    std::string_view line = Strip(text.substr(0, end));
    text.remove_prefix(std::min(end + 1, text.size()));
    ++number;
    if (line.empty() || line.front() == '#') continue;
    const std::vector<std::string_view> fields = Words(line);
    if (fields.size() < 4) {
      return LineError(number, "expected `<key id> sha256:<hex> <tenant> <user> [label]`");
    }
    if (!IsLowerHex(fields[0], kKeyIdHexDigits)) {
      return LineError(number, "the key id must be 12 lower-case hex digits");
    }
    constexpr std::string_view kHash = kHashPrefix;
    std::string_view hash = fields[1];
    if (hash.substr(0, kHash.size()) != kHash || !IsLowerHex(hash.substr(kHash.size()), 64)) {
      return LineError(number, "the hash must be sha256: and 64 lower-case hex digits");
    }
    hash.remove_prefix(kHash.size());
    Entry entry;
    size_t decoded = 0;
    if (sodium_hex2bin(entry.key_hash.data(), entry.key_hash.size(), hash.data(), hash.size(),
                       nullptr, &decoded, nullptr) != 0 ||
        decoded != entry.key_hash.size()) {
      return LineError(number, "the hash is not hex");
    }
    entry.identity = {std::string(fields[2]), std::string(fields[3])};
    const bool all_tenants = all_tenants_allowed && entry.identity.tenant_id == kAllTenants;
    if ((!all_tenants && !IsSafeToken(entry.identity.tenant_id)) ||
        !IsSafeToken(entry.identity.user_id)) {
      return LineError(number, "tenant and user must be 1..128 characters of [A-Za-z0-9._:@-]");
    }
    if (fields.size() > 4 && fields[4].starts_with(kExpiresPrefix)) {
      const std::optional<int64_t> expires =
          ParseApiKeyExpiry(fields[4].substr(kExpiresPrefix.size()));
      if (!expires) {
        return LineError(number, "expires= must be an RFC 3339 time or a date (2027-03-01)");
      }
      entry.expires_micros = *expires;
    }
    if (!store.entries_.emplace(std::string(fields[0]), std::move(entry)).second) {
      return LineError(number, "key id " + std::string(fields[0]) + " is listed twice");
    }
  }
  return store;
}

absl::StatusOr<ApiKeyStore> ApiKeyStore::Load(const std::string& path, bool all_tenants_allowed) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<ApiKeyStore> store = Parse(*text, all_tenants_allowed);
  if (!store.ok()) {
    return absl::Status(store.status().code(), path + ": " + std::string(store.status().message()));
  }
  return store;
}

absl::StatusOr<Identity> ApiKeyStore::AuthenticateAt(std::string_view key,
                                                     int64_t now_micros) const {
  const absl::Status denied = InvalidApiKey();
  std::string_view id = ApiKeyIdOf(key);
  if (id.empty()) return denied;
  auto it = entries_.find(std::string(id));
  if (it == entries_.end()) return denied;
  const std::array<uint8_t, 32> presented = Sha256(key);
  if (sodium_memcmp(presented.data(), it->second.key_hash.data(), presented.size()) != 0) {
    return denied;
  }
  // Said only to whoever holds the key.
  if (it->second.expires_micros.has_value() && now_micros >= *it->second.expires_micros) {
    return ApiKeyExpired(*it->second.expires_micros);
  }
  return it->second.identity;
}

absl::StatusOr<NewApiKey> GenerateApiKey(const Identity& who, std::string_view label,
                                         std::optional<int64_t> expires_micros,
                                         bool all_tenants_allowed) {
  const bool all_tenants = all_tenants_allowed && who.tenant_id == kAllTenants;
  if ((!all_tenants && !IsSafeToken(who.tenant_id)) || !IsSafeToken(who.user_id)) {
    return absl::InvalidArgumentError(
        "tenant and user must be 1..128 characters of [A-Za-z0-9._:@-]");
  }
  for (char c : label) {
    if (c == '\n' || c == '\r') return absl::InvalidArgumentError("the label must be one line");
  }
  // Parse reads a fifth field starting with expires= as the expiry.
  if (const std::vector<std::string_view> words = Words(label);
      !words.empty() && words.front().starts_with(kExpiresPrefix)) {
    return absl::InvalidArgumentError("the label must not start with expires=");
  }
  if (sodium_init() < 0) return absl::InternalError("libsodium failed to initialise");
  uint8_t id[kKeyIdHexDigits / 2];
  uint8_t secret[kSecretBytes];
  randombytes_buf(id, sizeof(id));
  randombytes_buf(secret, sizeof(secret));
  NewApiKey out;
  const std::string key_id = ToHex(id, sizeof(id));
  out.key = kApiKeyPrefix + key_id + "_" + ToHex(secret, sizeof(secret));
  out.file_line =
      key_id + " " + kHashPrefix + Sha256Hex(out.key) + " " + who.tenant_id + " " + who.user_id;
  if (expires_micros)
    out.file_line += " " + std::string(kExpiresPrefix) + FormatExpiry(*expires_micros);
  if (!label.empty()) out.file_line += " " + std::string(label);
  sodium_memzero(secret, sizeof(secret));
  return out;
}

std::string_view PresentedApiKey(std::string_view authorization, std::string_view x_api_key) {
  authorization = Strip(authorization);
  constexpr std::string_view kScheme = "bearer ";
  if (authorization.size() > kScheme.size()) {
    bool bearer = true;
    for (size_t i = 0; i < kScheme.size(); ++i) {
      bearer = bearer && std::tolower(static_cast<unsigned char>(authorization[i])) == kScheme[i];
    }
    if (bearer) return Strip(authorization.substr(kScheme.size()));
  }
  return Strip(x_api_key);
}

ApiKeyFile::ApiKeyFile(std::string path, ApiKeyStore store, Stamp stamp, bool all_tenants_allowed)
    : path_(std::move(path)),
      all_tenants_allowed_(all_tenants_allowed),
      store_(std::make_shared<const ApiKeyStore>(std::move(store))),
      stamp_(stamp) {}

std::optional<ApiKeyFile::Stamp> ApiKeyFile::StampOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return Stamp{static_cast<uint64_t>(st.st_ino), static_cast<int64_t>(st.st_size),
               static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
}

absl::StatusOr<std::unique_ptr<ApiKeyFile>> ApiKeyFile::Open(const std::string& path,
                                                             bool all_tenants_allowed) {
  const Stamp stamp = StampOf(path).value_or(Stamp{});
  absl::StatusOr<ApiKeyStore> store = ApiKeyStore::Load(path, all_tenants_allowed);
  if (!store.ok()) return store.status();
  return std::unique_ptr<ApiKeyFile>(
      new ApiKeyFile(path, *std::move(store), stamp, all_tenants_allowed));
}

absl::StatusOr<Identity> ApiKeyFile::Authenticate(std::string_view key) const {
  std::shared_ptr<const ApiKeyStore> store;
  {
    absl::MutexLock lock(&mu_);
    store = store_;
  }
  return store->Authenticate(key);
}

absl::StatusOr<bool> ApiKeyFile::Reload(bool force) {
  static Counter& reloaded = MetricsRegistry::Global().GetCounter(
      "omniforge_api_key_reloads_total", "Readings of the API key file after start, by outcome.",
      {{"outcome", "ok"}});
  static Counter& refused = MetricsRegistry::Global().GetCounter(
      "omniforge_api_key_reloads_total", "Readings of the API key file after start, by outcome.",
      {{"outcome", "error"}});
  // Stamped before reading: a change during the read is read next time.
  // A missing file has the empty stamp: it is reported once, not at every look.
  const Stamp stamp = StampOf(path_).value_or(Stamp{});
  {
    absl::MutexLock lock(&mu_);
    if (!force && stamp == stamp_) return false;
  }
  absl::StatusOr<ApiKeyStore> store = ApiKeyStore::Load(path_, all_tenants_allowed_);
  absl::MutexLock lock(&mu_);
  stamp_ = stamp;
  if (!store.ok()) {
    refused.Inc();
    LogError("API key file not reloaded; the keys stay as they were",
             {{"path", path_}, {"error", std::string(store.status().message())}});
    return store.status();
  }
  reloaded.Inc();
  const size_t before = store_->size();
  store_ = std::make_shared<const ApiKeyStore>(*std::move(store));
  LogInfo("API keys reloaded", {{"path", path_},
                                {"keys", std::to_string(store_->size())},
                                {"before", std::to_string(before)}});
  return true;
}

bool ApiKeyFile::Has(std::string_view key_id) const {
  absl::MutexLock lock(&mu_);
  return store_->Has(key_id);
}

size_t ApiKeyFile::size() const {
  absl::MutexLock lock(&mu_);
  return store_->size();
}

}  // namespace omniforge::core
