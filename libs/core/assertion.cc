#include "libs/core/assertion.h"

#include <sodium.h>

#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "libs/core/files.h"

namespace omniforge::core {
namespace {

constexpr char kVersion[] = "v1";
// Far more than an assertion of 128-byte names needs.
constexpr size_t kMaxTokenBytes = 2048;

absl::Status Unauthenticated(std::string_view why) {
  return absl::UnauthenticatedError("caller assertion " + std::string(why));
}

std::string Base64Url(const unsigned char* data, size_t size) {
  std::string out(sodium_base64_encoded_len(size, sodium_base64_VARIANT_URLSAFE_NO_PADDING), '\0');
  sodium_bin2base64(out.data(), out.size(), data, size, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
  out.resize(out.size() - 1);  // the terminating NUL
  return out;
}

bool FromBase64Url(std::string_view text, std::string& out) {
  out.assign(text.size(), '\0');
  size_t size = 0;
  if (sodium_base642bin(reinterpret_cast<unsigned char*>(out.data()), out.size(), text.data(),
                        text.size(), nullptr, &size, nullptr,
                        sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0) {
    return false;
  }
  out.resize(size);
  return true;
}

// 32 bytes from 64 hexadecimal digits.
absl::StatusOr<std::array<unsigned char, 32>> ParseHex32(std::string_view hex, const char* what) {
  while (!hex.empty() && absl::ascii_isspace(static_cast<unsigned char>(hex.front()))) {
    hex.remove_prefix(1);
  }
  while (!hex.empty() && absl::ascii_isspace(static_cast<unsigned char>(hex.back()))) {
    hex.remove_suffix(1);
  }
  std::array<unsigned char, 32> bytes{};
  size_t size = 0;
  if (hex.size() != 64 ||
      sodium_hex2bin(bytes.data(), bytes.size(), hex.data(), hex.size(), nullptr, &size, nullptr) !=
          0 ||
      size != bytes.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be 64 hexadecimal digits (32 bytes)"));
  }
  return bytes;
}

bool Init() { return sodium_init() >= 0; }

}  // namespace

SigningKey::~SigningKey() { sodium_memzero(secret.data(), secret.size()); }

absl::StatusOr<std::unique_ptr<SigningKey>> ParseSigningKey(std::string_view hex) {
  if (!Init()) return absl::InternalError("libsodium failed to initialise");
  auto seed = ParseHex32(hex, "an identity signing key");
  if (!seed.ok()) return seed.status();
  auto key = std::make_unique<SigningKey>();
  crypto_sign_seed_keypair(key->public_key.data(), key->secret.data(), seed->data());
  sodium_memzero(seed->data(), seed->size());
  return key;
}

absl::StatusOr<std::unique_ptr<SigningKey>> ReadSigningKeyFile(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  auto key = ParseSigningKey(*text);
  sodium_memzero(text->data(), text->size());
  if (!key.ok())
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", key.status().message()));
  return key;
}

absl::StatusOr<Ed25519PublicKey> ParsePublicKey(std::string_view hex) {
  if (!Init()) return absl::InternalError("libsodium failed to initialise");
  return ParseHex32(hex, "an identity public key");
}

absl::StatusOr<Ed25519PublicKey> ReadPublicKeyFile(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  auto key = ParsePublicKey(*text);
  if (!key.ok())
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", key.status().message()));
  return key;
}

std::string PublicKeyHex(const SigningKey& key) {
  std::string hex(key.public_key.size() * 2 + 1, '\0');
  sodium_bin2hex(hex.data(), hex.size(), key.public_key.data(), key.public_key.size());
  hex.pop_back();
  return hex;
}

bool IsValidKeyId(std::string_view id) {
  if (id.empty() || id.size() > 32) return false;
  for (char c : id) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

AssertionSigner::AssertionSigner(std::string issuer, std::string key_id,
                                 std::unique_ptr<SigningKey> key, const Clock& clock,
                                 std::chrono::seconds lifetime)
    : issuer_(std::move(issuer)),
      key_id_(std::move(key_id)),
      key_(std::move(key)),
      clock_(clock),
      lifetime_(lifetime) {}

std::string AssertionSigner::Assert(const Identity& who, std::string_view audience) {
  const int64_t now_ms = clock_.NowMicros() / 1000;
  std::string cache_key = std::string(audience) + "\n" + who.tenant_id + "\n" + who.user_id;
  {
    std::lock_guard lock(mu_);
    if (auto it = made_.find(cache_key); it != made_.end() && it->second.renew_at_ms > now_ms) {
      return it->second.token;
    }
  }
  const int64_t lifetime_ms = std::chrono::milliseconds(lifetime_).count();
  std::string token = Sign(who, audience, now_ms + lifetime_ms);
  std::lock_guard lock(mu_);
  if (made_.size() >= kMaxCached) made_.clear();
  made_[std::move(cache_key)] = Made{token, now_ms + lifetime_ms / 2};
  return token;
}

std::string AssertionSigner::Sign(const Identity& who, std::string_view audience,
                                  int64_t expires_at_ms) const {
  const std::string payload =
      nlohmann::json{{"iss", issuer_},
                     {"aud", audience},
                     {"ten", who.tenant_id},
                     {"usr", who.user_id},
                     {"exp", expires_at_ms}}
          // Invalid UTF-8 (a name no one validated) is replaced, not thrown.
          .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string token = absl::StrCat(
      kVersion, ".", key_id_, ".",
      Base64Url(reinterpret_cast<const unsigned char*>(payload.data()), payload.size()));
  unsigned char signature[crypto_sign_BYTES];
  crypto_sign_detached(signature, nullptr, reinterpret_cast<const unsigned char*>(token.data()),
                       token.size(), key_->secret.data());
  absl::StrAppend(&token, ".", Base64Url(signature, sizeof signature));
  return token;
}

AssertionVerifier::AssertionVerifier(std::string audience,
                                     std::map<std::string, Ed25519PublicKey> keys,
                                     const Clock& clock)
    : audience_(std::move(audience)), keys_(std::move(keys)), clock_(clock) {
  // Verifying needs an initialised libsodium (keys made elsewhere may not
  // have initialised it); a failure here leaves every check failing.
  (void)Init();
}

absl::StatusOr<CallerAssertion> AssertionVerifier::Verify(std::string_view token) const {
  if (token.empty()) return Unauthenticated("missing: a service's call carries one");
  const int64_t now_ms = clock_.NowMicros() / 1000;
  {
    std::lock_guard lock(mu_);
    if (auto it = verified_.find(std::string(token)); it != verified_.end()) {
      if (it->second.expires_at_ms > now_ms) return it->second;
      verified_.erase(it);
      return Unauthenticated("expired");
    }
  }
  auto checked = Check(token);
  if (!checked.ok()) return checked.status();
  std::lock_guard lock(mu_);
  if (verified_.size() >= kMaxCached) verified_.clear();
  verified_.emplace(std::string(token), *checked);
  return checked;
}

absl::StatusOr<CallerAssertion> AssertionVerifier::Check(std::string_view token) const {
  if (token.size() > kMaxTokenBytes) return Unauthenticated("too long");
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    const size_t dot = token.find('.', start);
    parts.push_back(token.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (parts.size() != 4 || parts[0] != kVersion) return Unauthenticated("malformed");
  auto key = keys_.find(std::string(parts[1]));
  if (key == keys_.end()) {
    return Unauthenticated("signed by unknown key '" + std::string(parts[1].substr(0, 32)) + "'");
  }
  std::string signature, payload;
  if (!FromBase64Url(parts[3], signature) || signature.size() != crypto_sign_BYTES ||
      !FromBase64Url(parts[2], payload)) {
    return Unauthenticated("malformed");
  }
  const std::string_view signed_part = token.substr(0, token.size() - parts[3].size() - 1);
  if (crypto_sign_verify_detached(reinterpret_cast<const unsigned char*>(signature.data()),
                                  reinterpret_cast<const unsigned char*>(signed_part.data()),
                                  signed_part.size(), key->second.data()) != 0) {
    return Unauthenticated("has a bad signature");
  }
  CallerAssertion assertion;
  try {
    const nlohmann::json json = nlohmann::json::parse(payload);
    assertion.issuer = json.at("iss").get<std::string>();
    assertion.audience = json.at("aud").get<std::string>();
    assertion.who = {json.at("ten").get<std::string>(), json.at("usr").get<std::string>()};
    assertion.expires_at_ms = json.at("exp").get<int64_t>();
  } catch (const nlohmann::json::exception&) {
    return Unauthenticated("malformed");
  }
  if (assertion.audience != audience_) {
    return Unauthenticated("is for " + assertion.audience.substr(0, 64) + ", not " + audience_);
  }
  if (assertion.expires_at_ms <= clock_.NowMicros() / 1000) return Unauthenticated("expired");
  if (!ValidateIdentity(assertion.who).ok()) return Unauthenticated("names no valid identity");
  return assertion;
}

}  // namespace omniforge::core
