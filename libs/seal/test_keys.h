// A fixed master key for tests and benchmarks, never for a deployment.
#pragma once

#include <string>

#include "libs/seal/key_ring.h"

namespace omniforge::seal {

inline KeyBytes TestMasterKey() { return *KeyRing::ParseMasterKey(std::string(64, '5')); }

}  // namespace omniforge::seal
