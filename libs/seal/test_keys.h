// A fixed master key for tests and benchmarks, never for a deployment.
#pragma once

#include <map>
#include <string>

#include "libs/seal/key_ring.h"
#include "libs/seal/master_keys.h"

namespace omniforge::seal {

inline KeyBytes TestMasterKey() { return *KeyRing::ParseMasterKey(std::string(64, '5')); }

// Master keys as a service is given them: `current_id` with a key of 64
// `fill` hex digits seals; `previous` (id -> fill) still opens.
inline MasterKeySet TestMasterKeys(const std::string& current_id, char fill,
                                   const std::map<std::string, char>& previous = {}) {
  MasterKeySet keys{*KeyRing::ParseMasterKey(std::string(64, fill)), current_id, {}};
  for (const auto& [id, key_fill] : previous) {
    keys.previous[id] = *KeyRing::ParseMasterKey(std::string(64, key_fill));
  }
  return keys;
}

}  // namespace omniforge::seal
