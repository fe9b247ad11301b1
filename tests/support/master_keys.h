// The executor's encryption master key for the services under test, as an
// environment entry (a test key, never a deployment's).
#pragma once

#include <string>

namespace omniforge::testing {

inline std::string ExecutorMasterKeyEnv() {
  return "OMNIFORGE_ENCRYPTION_MASTER_KEY=" + std::string(64, 'e');
}

}  // namespace omniforge::testing
