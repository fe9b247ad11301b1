// The PostgreSQL array literal builder (libs/pg/array_literal.h): the input
// is a list of elements separated by NUL bytes (an element never holds one:
// PostgreSQL text cannot), each led by a byte choosing how it is added
// (text, integer, bytea or NULL). The literal built must be well-formed and
// read back, by a reference parser following PostgreSQL's array_in rules
// for one dimension (the forms the builder writes), as exactly the elements added: text byte for
// byte (invalid UTF-8 included), integers in decimal, bytea in hex form.
#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "libs/pg/array_literal.h"

namespace {

// An element as array_in yields it: nullopt for NULL.
using Element = std::optional<std::string>;

bool IsArraySpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// The one-dimensional literal's elements, or nullopt when it is malformed.
std::optional<std::vector<Element>> ParseArrayLiteral(std::string_view text) {
  if (text.size() < 2 || text.front() != '{' || text.back() != '}') return std::nullopt;
  text = text.substr(1, text.size() - 2);
  std::vector<Element> elements;
  if (text.empty()) return elements;
  size_t i = 0;
  for (;;) {
    while (i < text.size() && IsArraySpace(text[i])) ++i;
    std::string value;
    bool quoted = false;
    if (i < text.size() && text[i] == '"') {
      quoted = true;
      for (++i;; ++i) {
        if (i >= text.size()) return std::nullopt;
        if (text[i] == '"') break;
        if (text[i] == '\\') {
          if (++i >= text.size()) return std::nullopt;
        }
        value += text[i];
      }
      ++i;
    } else {
      while (i < text.size() && text[i] != ',' && !IsArraySpace(text[i])) {
        if (text[i] == '"' || text[i] == '\\' || text[i] == '{' || text[i] == '}') {
          return std::nullopt;
        }
        value += text[i++];
      }
      if (value.empty()) return std::nullopt;
    }
    while (i < text.size() && IsArraySpace(text[i])) ++i;
    std::string lower = value;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const bool is_null = !quoted && lower == "null";
    elements.push_back(is_null ? Element() : Element(value));
    if (i == text.size()) return elements;
    if (text[i] != ',') return std::nullopt;
    ++i;
  }
}

std::string Hex(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\\x";
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 0xf];
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  omniforge::pg::ArrayLiteral literal;
  std::vector<Element> expected;
  while (!input.empty()) {
    const size_t end = std::min(input.find('\0'), input.size());
    std::string_view piece = input.substr(0, end);
    input.remove_prefix(std::min(end + 1, input.size()));
    if (piece.empty()) continue;
    const unsigned char kind = static_cast<unsigned char>(piece.front()) % 4;
    piece.remove_prefix(1);
    if (kind == 0) {
      literal.Add(piece);
      expected.emplace_back(std::string(piece));
    } else if (kind == 1) {
      int64_t value = 0;
      std::memcpy(&value, piece.data(), std::min(piece.size(), sizeof value));
      literal.Add(value);
      expected.emplace_back(std::to_string(value));
    } else if (kind == 2) {
      literal.AddBytes(piece);
      expected.emplace_back(Hex(piece));
    } else {
      literal.AddNull();
      expected.emplace_back();
    }
  }
  const std::string text = literal.Text();
  OMNIFORGE_FUZZ_CHECK(text.find('\0') == std::string::npos);
  const std::optional<std::vector<Element>> parsed = ParseArrayLiteral(text);
  OMNIFORGE_FUZZ_CHECK(parsed.has_value());
  OMNIFORGE_FUZZ_CHECK(*parsed == expected);
  return 0;
}
