#include "libs/core/json_depth.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace omniforge::core {

size_t JsonDepth(std::string_view text, size_t stop_above) {
  size_t depth = 0;
  size_t deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, whatever it is
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest) {
        deepest = depth;
        if (deepest > stop_above) return deepest;
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

absl::Status CheckJsonDepth(std::string_view field, std::string_view text, size_t limit) {
  if (JsonDepthWithin(text, limit)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(std::string(field), ": JSON nested more than ",
                                                 limit, " levels deep (the limit)"));
}

}  // namespace omniforge::core
