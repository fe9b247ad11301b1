#include "libs/pg/array_literal.h"

namespace omniforge::pg {

void ArrayLiteral::Add(std::string_view element) {
  Separate();
  text_.reserve(text_.size() + element.size() + 2);
  text_ += '"';
  for (char c : element) {
    if (c == '"' || c == '\\') text_ += '\\';
    text_ += c;
  }
  text_ += '"';
}

void ArrayLiteral::Add(int64_t element) {
  Separate();
  text_ += std::to_string(element);
}

void ArrayLiteral::AddBytes(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  Separate();
  // "\\x..." : the array parser turns \\ into the \ of bytea's \x prefix.
  text_.reserve(text_.size() + bytes.size() * 2 + 5);
  text_ += R"("\\x)";
  for (unsigned char b : bytes) {
    text_ += kHex[b >> 4];
    text_ += kHex[b & 0xf];
  }
  text_ += '"';
}

void ArrayLiteral::AddNull() {
  Separate();
  text_ += "NULL";
}

}  // namespace omniforge::pg
