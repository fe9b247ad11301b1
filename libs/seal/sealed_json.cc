#include "libs/seal/sealed_json.h"

#include <map>

#include "libs/seal/sealed_text.h"

namespace omniforge::seal {
namespace {

template <typename Json, typename Visit>
void EachString(Json& doc, const Visit& visit) {
  if (doc.is_string()) {
    visit(doc);
  } else if (doc.is_structured()) {
    for (auto& item : doc) EachString(item, visit);
  }
}

}  // namespace

template <typename Json>
void SealStrings(Json& doc, const DataKey& key, std::string_view ad) {
  EachString(doc, [&](Json& value) {
    const std::string& text = value.template get_ref<const std::string&>();
    if (!text.empty()) value = SealText(key, text, ad);
  });
}

template <typename Json>
absl::Status OpenStrings(Json& doc, const KeyById& key_by_id, std::string_view ad) {
  absl::Status status;
  std::map<int, DataKey> keys;  // each key looked up once per document
  EachString(doc, [&](Json& value) {
    const std::string& text = value.template get_ref<const std::string&>();
    if (!status.ok() || !IsSealedText(text)) return;
    const int key_id = SealedKeyId(text);
    auto key = keys.find(key_id);
    if (key == keys.end()) {
      absl::StatusOr<DataKey> found =
          key_id == 0 ? absl::DataLossError("a sealed value is malformed") : key_by_id(key_id);
      if (!found.ok()) {
        status = found.status();
        return;
      }
      key = keys.emplace(key_id, *found).first;
    }
    absl::StatusOr<std::string> opened = OpenTextWith(key->second, text, ad);
    if (!opened.ok()) {
      status = opened.status();
      return;
    }
    value = *std::move(opened);
  });
  return status;
}

template void SealStrings(nlohmann::json&, const DataKey&, std::string_view);
template void SealStrings(nlohmann::ordered_json&, const DataKey&, std::string_view);
template absl::Status OpenStrings(nlohmann::json&, const KeyById&, std::string_view);
template absl::Status OpenStrings(nlohmann::ordered_json&, const KeyById&, std::string_view);

}  // namespace omniforge::seal
