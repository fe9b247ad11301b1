#include "tests/support/identity_keys.h"

#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>

#include "libs/core/assertion.h"
#include "libs/core/clock.h"
#include "libs/core/grpc_identity.h"
#include "libs/core/ids.h"

namespace omniforge::testing {
namespace {

// Test data only.
constexpr char kTestSeed[] = "6f6d6e69666f7267652d746573742d6964656e746974792d6b65792d30303031";

class KeyDirectory {
 public:
  KeyDirectory()
      : dir_(std::filesystem::temp_directory_path() / ("omniforge-identity-" + core::NewUuid())) {
    std::filesystem::create_directories(dir_);
    files_.signing_key = (dir_ / "identity.key").string();
    files_.public_key = (dir_ / "identity.pub").string();
    std::ofstream(files_.signing_key) << kTestSeed << "\n";
    std::ofstream(files_.public_key)
        << core::PublicKeyHex(**core::ParseSigningKey(kTestSeed)) << "\n";
  }
  ~KeyDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  KeyDirectory(const KeyDirectory&) = delete;
  KeyDirectory& operator=(const KeyDirectory&) = delete;

  const IdentityKeyFiles& files() const { return files_; }

 private:
  std::filesystem::path dir_;
  IdentityKeyFiles files_;
};

}  // namespace

const IdentityKeyFiles& TestIdentityKeys() {
  static const KeyDirectory directory;
  return directory.files();
}

std::string TrustTestKeyEnv() {
  return std::string("OMNIFORGE_IDENTITY_TRUSTED_KEYS=") + kTestIdentityKeyId + "=" +
         TestIdentityKeys().public_key;
}

std::string SignWithTestKeyEnv() {
  return "OMNIFORGE_IDENTITY_SIGNING_KEY_FILE=" + TestIdentityKeys().signing_key;
}

std::string SignWithTestKeyIdEnv() {
  return std::string("OMNIFORGE_IDENTITY_SIGNING_KEY_ID=") + kTestIdentityKeyId;
}

void SignCallsWithTestKey() {
  static std::once_flag once;
  std::call_once(once, [] {
    core::SetCallerSigner(std::make_unique<core::AssertionSigner>(
        "test", kTestIdentityKeyId, *core::ParseSigningKey(kTestSeed), core::SystemClock()));
  });
}

std::vector<std::string> TestIdentityEnv(TestKeyUse use) {
  SignCallsWithTestKey();
  std::vector<std::string> env;
  if (use != TestKeyUse::kSign) env.push_back(TrustTestKeyEnv());
  if (use != TestKeyUse::kVerify) {
    env.push_back(SignWithTestKeyEnv());
    env.push_back(SignWithTestKeyIdEnv());
  }
  return env;
}

}  // namespace omniforge::testing
