// A service's master keys from its config (`encryption.*`): the current key
// that wraps new tenant keys, and earlier ones still accepted for unwrapping
// while keys move to the current one (rewrap-keys).
#pragma once

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "libs/core/config.h"
#include "libs/seal/keys.h"

namespace omniforge::seal {

struct MasterKeySettings {
  std::string key;       // encryption.master_key: the key itself (tests, env)
  std::string key_file;  // encryption.master_key_file
  std::string key_id = "primary";
  std::map<std::string, std::string> previous;        // id -> key text
  std::map<std::string, std::string> previous_files;  // id -> path
};

struct MasterKeySet {
  KeyBytes current{};
  std::string current_id;
  MasterKeys previous;
};

MasterKeySettings ReadMasterKeySettings(core::ConfigReader& config);

// FAILED_PRECONDITION when no key is configured or a file cannot be read;
// INVALID_ARGUMENT when a key is malformed or the current id is also a
// previous one.
absl::StatusOr<MasterKeySet> LoadMasterKeys(const MasterKeySettings& settings);

// A key for one use (`purpose`: exactly 8 characters, such as "ofspool1")
// derived from a master key with libsodium's KDF: the same master key and
// purpose always give the same key, and it reveals nothing of the master.
KeyBytes DerivedKey(const KeyBytes& master, const char (&purpose)[9]);

// The keys derived for `purpose` from the current and every previous master
// key, by master key id (what a sealed value names to be opened).
std::map<std::string, DataKey> DerivedKeys(const MasterKeySet& keys, const char (&purpose)[9]);

}  // namespace omniforge::seal
