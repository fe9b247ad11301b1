#include "libs/words/lists.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "libs/words/embedded_lists.h"

namespace omniforge::words {
namespace {

[[noreturn]] void Fail(std::string_view what, std::string_view name) {
  std::fprintf(stderr, "libs/words: %.*s: %.*s\n", static_cast<int>(what.size()), what.data(),
               static_cast<int>(name.size()), name.data());
  std::abort();
}

struct ParsedList {
  std::vector<Entry> entries;
  WordSet set;
  // The entries tokenized by each tokenizer, for ContainsAnyEntry.
  std::vector<std::vector<std::string>> ascii_alnum;
  std::vector<std::vector<std::string>> utf8;
  std::vector<std::vector<std::string>> normalized;
};

class Registry final {
 public:
  Registry() {
    for (const internal::EmbeddedList& list : internal::EmbeddedLists()) {
      texts_.emplace(list.name, list.text);
    }
    for (const auto& [name, text] : texts_) {
      std::vector<std::string> including;
      ParsedList parsed;
      parsed.entries = Expand(name, including);
      for (const Entry& entry : parsed.entries) {
        parsed.set.insert(entry.text);
        parsed.ascii_alnum.push_back(Tokens(entry.text, Tokenizer::kAsciiAlnum));
        parsed.utf8.push_back(Tokens(entry.text, Tokenizer::kUtf8));
        parsed.normalized.push_back(Tokens(entry.text, Tokenizer::kNormalized));
      }
      lists_.emplace(name, std::move(parsed));
    }
  }

  const ParsedList& Get(std::string_view name) const {
    auto it = lists_.find(name);
    if (it == lists_.end()) Fail("no such word list", name);
    return it->second;
  }

  std::vector<std::string> Names() const {
    std::vector<std::string> names;
    for (const auto& [name, list] : lists_) names.push_back(name);
    return names;
  }

 private:
  // The entries of `name` with its includes expanded; `including` holds the
  // lists being expanded (an include cycle is a broken data file).
  std::vector<Entry> Expand(const std::string& name, std::vector<std::string>& including) const {
    auto text = texts_.find(name);
    if (text == texts_.end()) Fail("no such word list", name);
    for (const std::string& open : including) {
      if (open == name) Fail("include cycle through", name);
    }
    including.push_back(name);
    std::vector<Entry> entries;
    for (std::string_view line : SplitAny(text->second, "\n")) {
      if (line.front() == '#') continue;
      constexpr std::string_view kInclude = "@include ";
      if (line.substr(0, kInclude.size()) == kInclude) {
        const std::string included(TrimWhitespace(line.substr(kInclude.size())));
        for (Entry& entry : Expand(included, including)) entries.push_back(std::move(entry));
        continue;
      }
      if (line.size() >= 2 && line.front() == '"' && line.back() == '"') {
        entries.push_back({std::string(line.substr(1, line.size() - 2)), ""});
        continue;
      }
      Entry entry;
      if (const size_t at = line.rfind(" = "); at != std::string_view::npos) {
        entry.text = std::string(TrimWhitespace(line.substr(0, at)));
        entry.value = std::string(TrimWhitespace(line.substr(at + 3)));
      } else {
        entry.text = std::string(line);
      }
      entries.push_back(std::move(entry));
    }
    including.pop_back();
    return entries;
  }

  std::map<std::string, std::string, std::less<>> texts_;
  std::map<std::string, ParsedList, std::less<>> lists_;
};

const Registry& Lists() {
  static const Registry registry;
  return registry;
}

bool AnyRun(const std::vector<std::string>& words,
            const std::vector<std::vector<std::string>>& entries) {
  for (const std::vector<std::string>& entry : entries) {
    if (ContainsRun(words, entry)) return true;
  }
  return false;
}

}  // namespace

const WordSet& List(std::string_view name) { return Lists().Get(name).set; }

bool Contains(std::string_view name, std::string_view entry) {
  return Lists().Get(name).set.contains(entry);
}

const std::vector<Entry>& Entries(std::string_view name) { return Lists().Get(name).entries; }

bool ContainsAnyEntry(const std::vector<std::string>& words, std::string_view name,
                      Tokenizer tokenizer) {
  const ParsedList& list = Lists().Get(name);
  switch (tokenizer) {
    case Tokenizer::kAsciiAlnum:
      return AnyRun(words, list.ascii_alnum);
    case Tokenizer::kUtf8:
      return AnyRun(words, list.utf8);
    case Tokenizer::kNormalized:
      break;
  }
  return AnyRun(words, list.normalized);
}

bool ContainsAnyEntry(const std::vector<std::string_view>& words, std::string_view name) {
  for (const std::vector<std::string>& entry : Lists().Get(name).normalized) {
    if (entry.empty() || entry.size() > words.size()) continue;
    auto same = [](std::string_view a, const std::string& b) { return a == b; };
    if (std::search(words.begin(), words.end(), entry.begin(), entry.end(), same) != words.end()) {
      return true;
    }
  }
  return false;
}

bool ContainsAnySubstring(std::string_view text, std::string_view name) {
  for (const Entry& entry : Lists().Get(name).entries) {
    if (text.find(entry.text) != std::string_view::npos) return true;
  }
  return false;
}

std::vector<std::string> ListNames() { return Lists().Names(); }

}  // namespace omniforge::words
