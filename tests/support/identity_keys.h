// The caller-assertion keys of test stacks (grpc_identity.h): one Ed25519
// signing key (test data only), written with its public key to files of a
// temporary directory the first time a test program asks, removed when it
// exits. Test stacks trust it and sign with it, as a deployment trusts and
// signs with the orchestrator's key.
#pragma once

#include <string>
#include <vector>

namespace omniforge::testing {

inline constexpr char kTestIdentityKeyId[] = "test";

struct IdentityKeyFiles {
  std::string signing_key;  // the seed, 64 hex digits
  std::string public_key;   // its public key, 64 hex digits
};
const IdentityKeyFiles& TestIdentityKeys();

// Environment entries for a service: trust the test key; sign with it.
std::string TrustTestKeyEnv();
std::string SignWithTestKeyEnv();    // the key file
std::string SignWithTestKeyIdEnv();  // its key id

// Makes this test process's own calls to the services carry assertions
// signed with the test key (core::AttachIdentity), as the orchestrator's do.
void SignCallsWithTestKey();

// What a service under test runs with, as deployed: it trusts the test key
// (kVerify: the conversation and intent services), signs its own calls with
// it (kSign: the orchestrator), or both (the executor). Also makes this test
// process's calls signed (SignCallsWithTestKey), so the service believes
// them.
enum class TestKeyUse { kVerify, kSign, kBoth };
std::vector<std::string> TestIdentityEnv(TestKeyUse use);

}  // namespace omniforge::testing
