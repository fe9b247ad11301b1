#include "libs/llm/testing/fake_wire.h"

#include <array>

namespace omniforge::llm::testing::internal {
namespace {

bool IsContinuationByte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The byte length of the first `chars` code points of `text` (or all of it).
size_t PrefixBytes(std::string_view text, int chars) {
  size_t end = 0;
  for (int i = 0; i < chars && end < text.size(); ++i) {
    ++end;
    while (end < text.size() && IsContinuationByte(text[end])) ++end;
  }
  return end;
}

}  // namespace

std::vector<std::string> SplitText(std::string_view text, int chars) {
  std::vector<std::string> pieces;
  while (!text.empty()) {
    const size_t n = PrefixBytes(text, chars);
    pieces.emplace_back(text.substr(0, n));
    text.remove_prefix(n);
  }
  return pieces;
}

std::vector<std::string> SplitArguments(std::string_view json_text) {
  static constexpr std::array<int, 3> kFragmentChars = {2, 5, 3};
  std::vector<std::string> fragments;
  for (size_t i = 0; !json_text.empty(); ++i) {
    const size_t n = PrefixBytes(json_text, kFragmentChars[i % kFragmentChars.size()]);
    fragments.emplace_back(json_text.substr(0, n));
    json_text.remove_prefix(n);
  }
  return fragments;
}

std::string Dump(const nlohmann::ordered_json& value) {
  return value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string StringOr(const nlohmann::json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string JsonTypeName(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::object:
      return "an object";
    case nlohmann::json::value_t::array:
      return "an array";
    case nlohmann::json::value_t::string:
      return "a string";
    case nlohmann::json::value_t::boolean:
      return "a boolean";
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
      return "an integer";
    default:
      return "a number";
  }
}

}  // namespace omniforge::llm::testing::internal
