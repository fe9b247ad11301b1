#include "libs/words/tokens.h"

#include <algorithm>
#include <cctype>

#include "absl/strings/ascii.h"

namespace omniforge::words {
namespace {

// kAsciiAlnum and kUtf8: a byte is part of a word when it is an ASCII
// letter or digit or (with `keep_non_ascii`) any byte of a non-ASCII
// character.
std::vector<std::string> ByteWords(std::string_view text, bool keep_non_ascii) {
  std::vector<std::string> words;
  std::string word;
  for (char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || (keep_non_ascii && u >= 0x80)) {
      word.push_back(static_cast<char>(u < 0x80 ? std::tolower(u) : u));
    } else if (!word.empty()) {
      words.push_back(std::move(word));
      word.clear();
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

}  // namespace

std::vector<std::string> Tokens(std::string_view text, Tokenizer tokenizer) {
  switch (tokenizer) {
    case Tokenizer::kAsciiAlnum:
      return ByteWords(text, /*keep_non_ascii=*/false);
    case Tokenizer::kUtf8:
      return ByteWords(text, /*keep_non_ascii=*/true);
    case Tokenizer::kNormalized:
      break;
  }
  const std::string normalized = Normalize(text);
  std::vector<std::string> words;
  for (std::string_view w : SplitNormalized(normalized)) words.emplace_back(w);
  return words;
}

std::string Normalize(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  bool pending_space = false;
  auto put = [&](char c) {
    if (pending_space && !out.empty()) out.push_back(' ');
    pending_space = false;
    out.push_back(c);
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      // Typographic apostrophe (U+2019) is dropped like the ASCII one.
      if (c == 0xE2 && i + 2 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0x80 &&
          static_cast<unsigned char>(text[i + 2]) == 0x99) {
        i += 2;
        continue;
      }
      put(static_cast<char>(c));
    } else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
      put(static_cast<char>(c));
    } else if (c >= 'A' && c <= 'Z') {
      put(static_cast<char>(c - 'A' + 'a'));
    } else if (c == '\'' || c == '`') {
      continue;
    } else if (c == '?') {
      pending_space = true;
      put('?');
      pending_space = true;
    } else {
      pending_space = true;
    }
  }
  return out;
}

std::vector<std::string_view> SplitNormalized(std::string_view normalized) {
  return SplitAny(normalized, " ");
}

std::string Lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string_view TrimWhitespace(std::string_view s) {
  auto space = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
  };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> SplitAny(std::string_view s, std::string_view delimiters) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find_first_of(delimiters, start);
    if (end == std::string_view::npos) end = s.size();
    std::string_view piece = TrimWhitespace(s.substr(start, end - start));
    if (!piece.empty()) out.push_back(piece);
    start = end + 1;
  }
  return out;
}

int FindPhrase(const std::vector<std::string_view>& words, std::string_view phrase) {
  // Phrases are short and normalized (single spaces): split without
  // allocating, this runs many times per message.
  std::string_view parts[8];
  size_t count = 0;
  for (size_t start = 0; start < phrase.size() && count < 8;) {
    size_t end = phrase.find(' ', start);
    if (end == std::string_view::npos) end = phrase.size();
    if (end > start) parts[count++] = phrase.substr(start, end - start);
    start = end + 1;
  }
  if (count == 0 || count > words.size()) return -1;
  for (size_t i = 0; i + count <= words.size(); ++i) {
    size_t j = 0;
    while (j < count && words[i + j] == parts[j]) ++j;
    if (j == count) return static_cast<int>(i);
  }
  return -1;
}

bool ContainsPhrase(const std::vector<std::string_view>& words, std::string_view phrase) {
  return FindPhrase(words, phrase) >= 0;
}

bool ContainsAnyPhrase(const std::vector<std::string_view>& words,
                       std::initializer_list<std::string_view> phrases) {
  for (std::string_view phrase : phrases) {
    if (FindPhrase(words, phrase) >= 0) return true;
  }
  return false;
}

bool ContainsRun(const std::vector<std::string>& words, const std::vector<std::string>& needle) {
  if (needle.empty() || needle.size() > words.size()) return false;
  return std::search(words.begin(), words.end(), needle.begin(), needle.end()) != words.end();
}

std::vector<std::string> MentionedNames(std::string_view text,
                                        const std::vector<std::string>& names) {
  const std::vector<std::string> words = Tokens(text, Tokenizer::kUtf8);
  std::vector<std::pair<std::string, std::vector<std::string>>> found;
  for (const std::string& name : names) {
    std::vector<std::string> name_words = Tokens(name, Tokenizer::kUtf8);
    if (ContainsRun(words, name_words)) found.emplace_back(name, std::move(name_words));
  }
  std::stable_sort(found.begin(), found.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  std::vector<std::string> kept;
  std::vector<const std::vector<std::string>*> kept_words;
  for (const auto& [name, name_words] : found) {
    bool inside = false;
    for (const std::vector<std::string>* longer : kept_words) {
      inside = inside || ContainsRun(*longer, name_words);
    }
    if (inside) continue;
    kept.push_back(name);
    kept_words.push_back(&name_words);
  }
  return kept;
}

bool EndsWithQuestionMark(std::string_view message) {
  while (!message.empty() && absl::ascii_isspace(static_cast<unsigned char>(message.back()))) {
    message.remove_suffix(1);
  }
  return !message.empty() && message.back() == '?';
}

}  // namespace omniforge::words
