// The `identity` section of a service's configuration: the keys of its
// caller assertions (assertion.h, grpc_identity.h).
//
//   identity:
//     trusted_keys: {k1: /run/secrets/orchestrator-identity.pub}   # services that verify
//     signing_key_file: /run/secrets/orchestrator-identity.key     # services that sign
//     signing_key_id: k1
//     assertion_lifetime_s: 300
//     allow_unverified: false    # true: a test set-up may leave the keys out
//
// The conversation and intent services verify; the orchestrator signs; the
// executor does both (it is called by the orchestrator and calls the
// conversation service for its agents). Each reads only its own keys, so a
// key given to a service that has no use for it is an unknown key.
//
// A service refuses to start without the keys of its half (trusted keys to
// verify, a signing key to sign): it would believe any identity it is told,
// or its calls would be refused. Only `allow_unverified: true`, for a test
// set-up on one machine, lets it run so, with a warning.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "libs/core/config.h"

namespace omniforge::core {

struct CallerIdentitySettings {
  bool verifies = false;
  bool signs = false;
  std::map<std::string, std::string> trusted_keys;  // key id -> public key file
  std::string signing_key_file;
  std::string signing_key_id = "k1";
  int64_t lifetime_s = 300;
  bool allow_unverified = false;
};

// Reads the keys of a service that verifies and/or signs.
CallerIdentitySettings ReadCallerIdentity(ConfigReader& c, bool verifies, bool signs);

// Reads the key files and sets the process's verifier (audience `service`)
// and signer (issuer `service`); INVALID_ARGUMENT or NOT_FOUND naming the
// key or file at fault. A half left unconfigured is FAILED_PRECONDITION,
// unless `allow_unverified`: then a warning, and a service without trusted
// keys believes the identity metadata alone.
absl::Status InstallCallerIdentity(const CallerIdentitySettings& settings,
                                   std::string_view service);

}  // namespace omniforge::core
