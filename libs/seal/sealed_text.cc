#include "libs/seal/sealed_text.h"

#include <sodium.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace omniforge::seal {
namespace {

constexpr std::string_view kPrefix = "ofs1:";
constexpr int kVariant = sodium_base64_VARIANT_ORIGINAL;

std::string Base64(std::string_view bytes) {
  std::string out(sodium_base64_encoded_len(bytes.size(), kVariant), '\0');
  sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char*>(bytes.data()),
                    bytes.size(), kVariant);
  out.resize(out.size() - 1);  // the terminating NUL
  return out;
}

bool FromBase64(std::string_view text, std::string* bytes) {
  bytes->assign(text.size() / 4 * 3 + 3, '\0');
  size_t length = 0;
  if (sodium_base642bin(reinterpret_cast<unsigned char*>(bytes->data()), bytes->size(), text.data(),
                        text.size(), nullptr, &length, nullptr, kVariant) != 0) {
    return false;
  }
  bytes->resize(length);
  return true;
}

// The key id and the sealed bytes of a value in the sealed form.
bool Parse(std::string_view text, int* key_id, std::string* bytes) {
  if (!IsSealedText(text)) return false;
  text.remove_prefix(kPrefix.size());
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) return false;
  if (!absl::SimpleAtoi(std::string(text.substr(0, colon)), key_id) || *key_id < 1) return false;
  return FromBase64(text.substr(colon + 1), bytes);
}

// The sealed form inside a JSON string, or empty for any other JSON.
std::string_view SealedInJson(std::string_view json_text) {
  if (json_text.size() < 2 || json_text.front() != '"' || json_text.back() != '"') return {};
  const std::string_view inner = json_text.substr(1, json_text.size() - 2);
  return IsSealedText(inner) ? inner : std::string_view();
}

}  // namespace

std::string SealedAd(std::string_view table, std::string_view tenant, std::string_view row,
                     std::string_view column) {
  std::string ad(table);
  for (std::string_view part : {tenant, row, column}) {
    ad += '|';
    ad += part;
  }
  return ad;
}

bool IsSealedText(std::string_view text) { return text.substr(0, kPrefix.size()) == kPrefix; }

std::string SealText(const DataKey& key, std::string_view plaintext, std::string_view ad) {
  return std::string(kPrefix) + std::to_string(key.id) + ":" +
         Base64(KeyRing::Seal(key, plaintext, ad));
}

int SealedKeyId(std::string_view text) {
  int key_id = 0;
  std::string bytes;
  return Parse(text, &key_id, &bytes) ? key_id : 0;
}

absl::StatusOr<std::string> OpenTextWith(const DataKey& key, std::string_view text,
                                         std::string_view ad) {
  if (!IsSealedText(text)) return std::string(text);
  int key_id = 0;
  std::string bytes;
  if (!Parse(text, &key_id, &bytes)) return absl::DataLossError("a sealed value is malformed");
  if (key_id != key.id) {
    return absl::DataLossError(
        absl::StrCat("a value sealed with key ", key_id, " cannot be opened with key ", key.id));
  }
  return KeyRing::Open(key, bytes, ad);
}

absl::StatusOr<std::string> OpenText(KeyRing& keys, pqxx::work& tx, const std::string& tenant,
                                     std::string_view text, std::string_view ad) {
  if (!IsSealedText(text)) return std::string(text);
  const int key_id = SealedKeyId(text);
  if (key_id == 0) return absl::DataLossError("a sealed value is malformed");
  auto key = keys.KeyById(tx, tenant, key_id);
  if (!key.ok()) return key.status();
  return OpenTextWith(*key, text, ad);
}

std::string SealJson(const DataKey& key, std::string_view json_text, std::string_view ad) {
  // The sealed form has no character JSON must escape.
  return absl::StrCat("\"", SealText(key, json_text, ad), "\"");
}

absl::StatusOr<std::string> OpenJson(KeyRing& keys, pqxx::work& tx, const std::string& tenant,
                                     std::string_view json_text, std::string_view ad) {
  const std::string_view sealed = SealedInJson(json_text);
  if (sealed.empty()) return std::string(json_text);
  return OpenText(keys, tx, tenant, sealed, ad);
}

absl::StatusOr<std::string> OpenJsonWith(const DataKey& key, std::string_view json_text,
                                         std::string_view ad) {
  const std::string_view sealed = SealedInJson(json_text);
  if (sealed.empty()) return std::string(json_text);
  return OpenTextWith(key, sealed, ad);
}

std::string RowSealer::Text(std::string_view column, std::string_view plaintext) const {
  if (plaintext.empty()) return {};
  return SealText(key_, plaintext, SealedAd(table_, tenant_, row_, column));
}

std::string RowSealer::Json(std::string_view column, std::string_view json_text) const {
  return SealJson(key_, json_text, SealedAd(table_, tenant_, row_, column));
}

std::string RowOpener::Text(std::string_view column, std::string_view stored) {
  auto opened = OpenText(keys_, tx_, tenant_, stored, SealedAd(table_, tenant_, row_, column));
  if (opened.ok()) return *std::move(opened);
  if (status_.ok()) status_ = opened.status();
  return {};
}

std::string RowOpener::Json(std::string_view column, std::string_view stored,
                            std::string_view empty) {
  auto opened = OpenJson(keys_, tx_, tenant_, stored, SealedAd(table_, tenant_, row_, column));
  if (opened.ok()) return *std::move(opened);
  if (status_.ok()) status_ = opened.status();
  return std::string(empty);
}

}  // namespace omniforge::seal
