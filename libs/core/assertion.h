// Caller assertions: who a call between the services is for, signed by the
// service that makes it, so the service it reaches believes no identity it
// was merely told.
//
// An assertion names the tenant and user, the service it is for (its
// audience), the service that signed it (its issuer) and when it expires,
// and is signed with the issuer's Ed25519 key (libsodium). It travels as
// one gRPC metadata value (kAssertionMetadataKey, grpc_identity.h):
//
//   v1.<key id>.<payload, base64url>.<signature, base64url>
//
// where the payload is {"iss","aud","ten","usr","exp"} as JSON (exp in ms
// since the epoch) and the signature covers everything before its dot.
//
// An assertion is made per tenant, user and audience and reused until half
// its lifetime is gone (5 minutes by default), and a verifier remembers the
// assertions it has checked until they expire: signing (~30 µs) and
// checking (~80 µs) a fresh one for every call would cost a chat turn a
// tenth of its CPU time.
//
// Keys are files of 64 hexadecimal digits: the signing key is the Ed25519
// seed (32 random bytes: `od -An -tx1 -N32 /dev/urandom | tr -d ' \n'`),
// the public key what PublicKeyHex derives from it. Each verifier knows
// public keys by key id, so a key rotates by adding the new public key to
// the verifiers, then signing with the new key, then dropping the old one.
#pragma once

#include <array>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "absl/status/statusor.h"
#include "libs/core/clock.h"
#include "libs/core/identity.h"

namespace omniforge::core {

using Ed25519PublicKey = std::array<unsigned char, 32>;

// The key pair of a signing key (the seed's file, read and checked).
struct SigningKey {
  std::array<unsigned char, 64> secret{};  // libsodium's secret key (seed || public key)
  Ed25519PublicKey public_key{};
  ~SigningKey();
};

// INVALID_ARGUMENT unless `hex` is 64 hexadecimal digits (surrounding
// whitespace ignored). The file forms read the file first (NOT_FOUND etc.).
absl::StatusOr<std::unique_ptr<SigningKey>> ParseSigningKey(std::string_view hex);
absl::StatusOr<std::unique_ptr<SigningKey>> ReadSigningKeyFile(const std::string& path);
absl::StatusOr<Ed25519PublicKey> ParsePublicKey(std::string_view hex);
absl::StatusOr<Ed25519PublicKey> ReadPublicKeyFile(const std::string& path);

// The public key of a signing key, as 64 hexadecimal digits.
std::string PublicKeyHex(const SigningKey& key);

// True for a usable key id: 1..32 characters of [A-Za-z0-9_-].
bool IsValidKeyId(std::string_view id);

// What a verified assertion says.
struct CallerAssertion {
  Identity who;
  std::string issuer;
  std::string audience;
  int64_t expires_at_ms = 0;
};

// Signs assertions for one issuer with one key. Thread-safe.
class AssertionSigner {
 public:
  static constexpr std::chrono::seconds kDefaultLifetime{300};
  static constexpr size_t kMaxCached = 20000;

  // `issuer`: the signing service's name; `key_id`: valid (IsValidKeyId).
  AssertionSigner(std::string issuer, std::string key_id, std::unique_ptr<SigningKey> key,
                  const Clock& clock, std::chrono::seconds lifetime = kDefaultLifetime);

  // An assertion that `who` calls `audience`: the one made earlier for the
  // same three while more than half its lifetime is left, else a new one.
  std::string Assert(const Identity& who, std::string_view audience);

  const std::string& issuer() const { return issuer_; }

 private:
  std::string Sign(const Identity& who, std::string_view audience, int64_t expires_at_ms) const;

  const std::string issuer_;
  const std::string key_id_;
  const std::unique_ptr<SigningKey> key_;
  const Clock& clock_;
  const std::chrono::seconds lifetime_;
  struct Made {
    std::string token;
    int64_t renew_at_ms;
  };
  std::mutex mu_;
  std::unordered_map<std::string, Made> made_;  // audience \n tenant \n user
};

// Checks assertions for one audience against public keys by key id.
// Thread-safe.
class AssertionVerifier {
 public:
  static constexpr size_t kMaxCached = 20000;

  AssertionVerifier(std::string audience, std::map<std::string, Ed25519PublicKey> keys,
                    const Clock& clock);

  // The assertion's content when `token` is well formed, signed by a known
  // key, for this audience and not expired; UNAUTHENTICATED saying which
  // of these failed otherwise.
  absl::StatusOr<CallerAssertion> Verify(std::string_view token) const;

  const std::string& audience() const { return audience_; }

 private:
  absl::StatusOr<CallerAssertion> Check(std::string_view token) const;

  const std::string audience_;
  const std::map<std::string, Ed25519PublicKey> keys_;
  const Clock& clock_;
  mutable std::mutex mu_;
  mutable std::unordered_map<std::string, CallerAssertion> verified_;
};

}  // namespace omniforge::core
