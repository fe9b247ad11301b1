// Text into words. Three tokenizers, one per reader, because each reader's
// rules were tuned to what it does and their answers differ on punctuation
// and non-ASCII text ("don't" is "dont" to the intent model, "don" "t" to
// the approval gate); each is kept exactly as its reader relies on it.
// Also the phrase matching the readers share. Pure functions, thread-safe.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace omniforge::words {

enum class Tokenizer {
  // ASCII letters and digits, lower-cased; every other byte (punctuation,
  // spaces, every byte of a non-ASCII character) ends a word. "Don't stop"
  // -> don, t, stop; "café" -> caf. The orchestrator's local policy.
  kAsciiAlnum,
  // ASCII letters and digits lower-cased, and every byte of a non-ASCII
  // UTF-8 character kept as part of a word, so names in any script are
  // words; ASCII punctuation and spaces end a word. "Don't" -> don, t;
  // "don’t" (typographic apostrophe) -> one word; "café" -> café. The
  // approval gate.
  kUtf8,
  // The words of Normalize(text) (see below): apostrophes dropped, "?" a
  // word of its own. "Don't stop?" -> dont, stop, ?. The intent service.
  kNormalized,
};

// The words of `text` as `tokenizer` reads them.
std::vector<std::string> Tokens(std::string_view text, Tokenizer tokenizer);

// Lowercases ASCII, drops apostrophes (ASCII ', ` and U+2019: "don't" ->
// "dont"), keeps "?" as a word of its own (questions are a strong signal),
// turns every other ASCII punctuation into a space (so
// "weekly-sales-digest" reads as three words) and collapses whitespace.
// Non-ASCII UTF-8 passes through unchanged. The intent service's fastText
// model is trained on and asked about this form.
std::string Normalize(std::string_view text);

// The words of a normalized text (split at spaces), as views into it.
std::vector<std::string_view> SplitNormalized(std::string_view normalized);

// ASCII-lowercased copy of `s`.
std::string Lowercase(std::string_view s);

// `s` without leading and trailing ASCII whitespace.
std::string_view TrimWhitespace(std::string_view s);

// The non-blank pieces of `s` between any of the `delimiters`, trimmed.
std::vector<std::string_view> SplitAny(std::string_view s, std::string_view delimiters);

// Index of the first word of the first occurrence of `phrase` (normalized,
// up to 8 words) in `words`, or -1.
int FindPhrase(const std::vector<std::string_view>& words, std::string_view phrase);

// True when `words` contains `phrase` (normalized, one or more words) as
// consecutive words.
bool ContainsPhrase(const std::vector<std::string_view>& words, std::string_view phrase);

// True when `words` contains any of `phrases` (see ContainsPhrase).
bool ContainsAnyPhrase(const std::vector<std::string_view>& words,
                       std::initializer_list<std::string_view> phrases);

// Whether `needle` occurs in `words` as consecutive words (false for an
// empty needle).
bool ContainsRun(const std::vector<std::string>& words, const std::vector<std::string>& needle);

// The names of `names` that `text` mentions as whole words
// (Tokenizer::kUtf8, so names in any script count, case-insensitive),
// longest first; a name inside a longer one the text gives ("alpha" in
// "alpha-2") is not a mention of its own.
std::vector<std::string> MentionedNames(std::string_view text,
                                        const std::vector<std::string>& names);

// Whether `message` ends with a question mark (trailing ASCII whitespace
// aside).
bool EndsWithQuestionMark(std::string_view message);

}  // namespace omniforge::words
