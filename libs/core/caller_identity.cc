#include "libs/core/caller_identity.h"

#include <memory>
#include <utility>

#include "libs/core/clock.h"
#include "libs/core/grpc_identity.h"
#include "libs/core/logging.h"

namespace omniforge::core {

CallerIdentitySettings ReadCallerIdentity(ConfigReader& c, bool verifies, bool signs) {
  CallerIdentitySettings s;
  s.verifies = verifies;
  s.signs = signs;
  if (verifies || signs) s.allow_unverified = c.Bool("identity.allow_unverified", false);
  if (verifies) s.trusted_keys = c.StringMap("identity.trusted_keys");
  if (signs) {
    s.signing_key_file = c.String("identity.signing_key_file", "");
    s.signing_key_id = c.String("identity.signing_key_id", s.signing_key_id);
    s.lifetime_s = c.Int("identity.assertion_lifetime_s", s.lifetime_s, 10, 3600);
  }
  return s;
}

namespace {

absl::Status InstallVerifier(const CallerIdentitySettings& s, std::string_view service) {
  if (s.trusted_keys.empty()) {
    SetCallerVerifier(nullptr);
    if (!s.allow_unverified) {
      return absl::FailedPreconditionError(
          "identity.trusted_keys is empty: this service would believe any identity a caller "
          "names. Give it the public keys of the services that call it (docs/security.md, "
          "caller assertions), or set identity.allow_unverified: true on a test set-up");
    }
    LogWarn(
        "identity.trusted_keys is empty and identity.allow_unverified is set: calls are "
        "believed on their identity metadata alone (a test set-up only)");
    return absl::OkStatus();
  }
  std::map<std::string, Ed25519PublicKey> keys;
  for (const auto& [id, path] : s.trusted_keys) {
    if (!IsValidKeyId(id)) {
      return absl::InvalidArgumentError("identity.trusted_keys: key id '" + id +
                                        "' is not 1..32 characters of [A-Za-z0-9_-]");
    }
    auto key = ReadPublicKeyFile(path);
    if (!key.ok()) {
      return absl::Status(key.status().code(), "identity.trusted_keys." + id + ": " +
                                                   std::string(key.status().message()));
    }
    keys.emplace(id, *key);
  }
  SetCallerVerifier(
      std::make_unique<AssertionVerifier>(std::string(service), std::move(keys), SystemClock()));
  return absl::OkStatus();
}

absl::Status InstallSigner(const CallerIdentitySettings& s, std::string_view service) {
  if (s.signing_key_file.empty()) {
    SetCallerSigner(nullptr);
    if (!s.allow_unverified) {
      return absl::FailedPreconditionError(
          "identity.signing_key_file is empty: this service's calls would carry no caller "
          "assertion, and the services it calls refuse them. Give it its signing key "
          "(docs/security.md, caller assertions), or set identity.allow_unverified: true on a "
          "test set-up");
    }
    LogWarn(
        "identity.signing_key_file is empty and identity.allow_unverified is set: calls to the "
        "other services carry no caller assertion (a test set-up only)");
    return absl::OkStatus();
  }
  if (!IsValidKeyId(s.signing_key_id)) {
    return absl::InvalidArgumentError("identity.signing_key_id '" + s.signing_key_id +
                                      "' is not 1..32 characters of [A-Za-z0-9_-]");
  }
  auto key = ReadSigningKeyFile(s.signing_key_file);
  if (!key.ok()) {
    return absl::Status(key.status().code(),
                        "identity.signing_key_file: " + std::string(key.status().message()));
  }
  SetCallerSigner(std::make_unique<AssertionSigner>(std::string(service), s.signing_key_id,
                                                    *std::move(key), SystemClock(),
                                                    std::chrono::seconds(s.lifetime_s)));
  return absl::OkStatus();
}

}  // namespace

absl::Status InstallCallerIdentity(const CallerIdentitySettings& s, std::string_view service) {
  if (s.verifies) {
    if (absl::Status status = InstallVerifier(s, service); !status.ok()) return status;
  }
  if (s.signs) return InstallSigner(s, service);
  return absl::OkStatus();
}

}  // namespace omniforge::core
