#include "libs/seal/master_keys.h"

#include <sodium.h>

#include "libs/core/files.h"
#include "libs/seal/key_ring.h"

namespace omniforge::seal {
namespace {

absl::StatusOr<KeyBytes> ParseNamedMasterKey(const std::string& id, const std::string& text) {
  auto key = KeyRing::ParseMasterKey(text);
  if (!key.ok()) {
    return absl::InvalidArgumentError("encryption master key '" + id +
                                      "': " + std::string(key.status().message()));
  }
  return key;
}

absl::StatusOr<std::string> ReadKeyFile(const std::string& what, const std::string& path) {
  auto text = core::ReadFile(path);
  if (!text.ok()) {
    return absl::FailedPreconditionError(what + ": " + std::string(text.status().message()));
  }
  return text;
}

absl::StatusOr<MasterKeys> LoadPrevious(const MasterKeySettings& s) {
  MasterKeys keys;
  for (const auto& [id, text] : s.previous) {
    auto key = ParseNamedMasterKey(id, text);
    if (!key.ok()) return key.status();
    keys[id] = *key;
  }
  for (const auto& [id, path] : s.previous_files) {
    auto text = ReadKeyFile("encryption master key '" + id + "'", path);
    if (!text.ok()) return text.status();
    auto key = ParseNamedMasterKey(id, *text);
    if (!key.ok()) return key.status();
    keys[id] = *key;
  }
  if (keys.contains(s.key_id)) {
    return absl::InvalidArgumentError("encryption.master_key_id '" + s.key_id +
                                      "' is also listed as a previous master key");
  }
  return keys;
}

absl::StatusOr<KeyBytes> LoadCurrent(const MasterKeySettings& s) {
  if (!s.key.empty()) return KeyRing::ParseMasterKey(s.key);
  if (s.key_file.empty()) {
    return absl::FailedPreconditionError(
        "no encryption master key: set encryption.master_key_file or "
        "OMNIFORGE_ENCRYPTION_MASTER_KEY (32 bytes as hex or base64)");
  }
  auto text = ReadKeyFile("encryption master key", s.key_file);
  if (!text.ok()) return text.status();
  return KeyRing::ParseMasterKey(*text);
}

}  // namespace

MasterKeySettings ReadMasterKeySettings(core::ConfigReader& c) {
  MasterKeySettings s;
  s.key = c.String("encryption.master_key", "");
  s.key_file = c.String("encryption.master_key_file", "");
  s.key_id = c.String("encryption.master_key_id", "primary");
  s.previous = c.StringMap("encryption.previous_master_keys");
  s.previous_files = c.StringMap("encryption.previous_master_key_files");
  return s;
}

absl::StatusOr<MasterKeySet> LoadMasterKeys(const MasterKeySettings& s) {
  auto current = LoadCurrent(s);
  if (!current.ok()) return current.status();
  auto previous = LoadPrevious(s);
  if (!previous.ok()) return previous.status();
  return MasterKeySet{*current, s.key_id, *std::move(previous)};
}

KeyBytes DerivedKey(const KeyBytes& master, const char (&purpose)[9]) {
  static_assert(crypto_kdf_CONTEXTBYTES == 8 && crypto_kdf_KEYBYTES == sizeof(KeyBytes));
  KeyBytes key{};
  crypto_kdf_derive_from_key(key.data(), key.size(), 1, purpose, master.data());
  return key;
}

std::map<std::string, DataKey> DerivedKeys(const MasterKeySet& keys, const char (&purpose)[9]) {
  std::map<std::string, DataKey> derived;
  derived[keys.current_id] = DataKey{1, DerivedKey(keys.current, purpose)};
  for (const auto& [id, master] : keys.previous)
    derived[id] = DataKey{1, DerivedKey(master, purpose)};
  return derived;
}

}  // namespace omniforge::seal
