// The text form of a one-dimensional PostgreSQL array, to pass a batch of
// values as one statement parameter (`$1::uuid[]`) that SQL reads back with
// unnest(): a batch of N rows becomes a few parameters instead of N × columns
// placeholders or a JSON document the server has to parse.
//
// Every element is double-quoted with `"` and `\` escaped, so any text
// (commas, braces, quotes, the word NULL) comes back exactly; a null element
// is the bare word NULL. bytea elements use the hex form.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace omniforge::pg {

class ArrayLiteral final {
 public:
  ArrayLiteral() : text_("{") {}

  void Add(std::string_view element);
  void Add(int64_t element);
  void AddBytes(std::string_view bytes);
  void AddNull();

  // The literal, e.g. {"a","b \"quoted\"",NULL}.
  std::string Text() const { return text_ + "}"; }

 private:
  void Separate() {
    if (text_.size() > 1) text_ += ',';
  }

  std::string text_;
};

}  // namespace omniforge::pg
