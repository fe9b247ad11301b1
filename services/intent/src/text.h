// Text as the intent layers see it: lowercase words without punctuation.
// The tokenizer is libs/words' (Tokenizer::kNormalized); these are its
// names in the intent service.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "libs/words/tokens.h"

namespace omniforge::intent {

// Lowercases ASCII, drops apostrophes ("don't" -> "dont"), keeps "?" as a
// word of its own, turns every other ASCII punctuation into a space and
// collapses whitespace (words::Normalize). The result is what the fastText
// model is trained on and asked about.
inline std::string NormalizeText(std::string_view text) { return words::Normalize(text); }

// The words of a normalized text.
inline std::vector<std::string_view> Words(std::string_view normalized) {
  return words::SplitNormalized(normalized);
}

// Whether `word` is one of `words`: a short, fixed list spelled where it is
// read, without building a set on every call.
inline bool OneOf(std::string_view word, std::initializer_list<std::string_view> words) {
  for (std::string_view w : words) {
    if (w == word) return true;
  }
  return false;
}

using words::ContainsAnyPhrase;
using words::ContainsPhrase;
using words::FindPhrase;
using words::Lowercase;
using words::SplitAny;
using words::TrimWhitespace;

}  // namespace omniforge::intent
