// The keys of sealing, without the database: a 256-bit key, master keys by
// id, and a tenant's data key with its id.
#pragma once

#include <array>
#include <map>
#include <string>

namespace omniforge::seal {

using KeyBytes = std::array<unsigned char, 32>;
// Earlier master keys by id, still accepted for unwrapping.
using MasterKeys = std::map<std::string, KeyBytes>;

struct DataKey {
  int id = 0;
  KeyBytes bytes{};
};

}  // namespace omniforge::seal
