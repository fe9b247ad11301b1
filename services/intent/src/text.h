// Text as the intent layers see it: lowercase words without punctuation.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace omniforge::intent {

// Lowercases ASCII, drops apostrophes ("don't" -> "dont"), keeps "?" as a
// word of its own (questions are a strong signal), turns every other ASCII
// punctuation into a space (so "weekly-sales-digest" reads as three words)
// and collapses whitespace. Non-ASCII UTF-8 passes through unchanged.
// The result is what the fastText model is trained on and asked about.
std::string NormalizeText(std::string_view text);

// ASCII-lowercased copy of `s`.
std::string Lowercase(std::string_view s);

// `s` without leading and trailing ASCII whitespace.
std::string_view TrimWhitespace(std::string_view s);

// The non-blank pieces of `s` between any of the `delimiters`, trimmed.
std::vector<std::string_view> SplitAny(std::string_view s, std::string_view delimiters);

// The words of a normalized text.
std::vector<std::string_view> Words(std::string_view normalized);

// True when `words` contains `phrase` (normalized, one or more words) as
// consecutive words.
bool ContainsPhrase(const std::vector<std::string_view>& words, std::string_view phrase);

// True when `words` contains any of `phrases` (see ContainsPhrase).
bool ContainsAnyPhrase(const std::vector<std::string_view>& words,
                       std::initializer_list<std::string_view> phrases);

// Index of the first word of the first occurrence of `phrase` (normalized,
// up to 8 words), or -1.
int FindPhrase(const std::vector<std::string_view>& words, std::string_view phrase);

}  // namespace omniforge::intent
