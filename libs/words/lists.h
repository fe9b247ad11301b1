// The word lists both services read to understand a message: yes, no,
// cancel, resume, ordinals, change markers and the filler around them. Each
// list is a data file, libs/words/data/<name>.txt, compiled into the
// library: nothing is read from disk at run time. A word added to a file is
// known to every reader of that list.
//
// File format: one entry (a word, or a phrase of words separated by single
// spaces) per line; blank lines and lines starting with '#' are ignored;
// `@include <name>` adds the entries of another list; `"text"` keeps the
// text between the quotes as it is (leading or trailing spaces included);
// `text = value` gives the entry a value (the ordinals' positions).
//
// Every function is thread-safe; the lists are parsed once, on first use,
// and live until the program exits. A list name that no data file has is a
// programming error: the process aborts with the name.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "libs/words/tokens.h"

namespace omniforge::words {

using WordSet = std::set<std::string, std::less<>>;

struct Entry {
  std::string text;   // as written (quotes removed)
  std::string value;  // after " = ", empty when none
};

// The entries of list `name`, includes expanded.
const WordSet& List(std::string_view name);

// Whether `entry` is an entry of list `name` (exact, case-sensitive: the
// files are lower case, like the words the tokenizers give).
bool Contains(std::string_view name, std::string_view entry);

// The entries of list `name` in file order (includes expanded where they
// stand), with their values.
const std::vector<Entry>& Entries(std::string_view name);

// Whether an entry of list `name`, tokenized with `tokenizer`, occurs in
// `words` as consecutive words: a one-word entry is a word of `words`, a
// phrase is a run of them. `words` must come from the same tokenizer.
bool ContainsAnyEntry(const std::vector<std::string>& words, std::string_view name,
                      Tokenizer tokenizer);
// The same over normalized words (Tokenizer::kNormalized).
bool ContainsAnyEntry(const std::vector<std::string_view>& words, std::string_view name);

// Whether an entry of list `name` occurs anywhere in `text` as a substring
// (for markers like "n't" that are not whole words).
bool ContainsAnySubstring(std::string_view text, std::string_view name);

// The names of all lists, sorted.
std::vector<std::string> ListNames();

}  // namespace omniforge::words
