#include "services/intent/entities/entities.h"

#include <re2/re2.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "libs/words/lists.h"
#include "services/intent/src/text.h"

namespace omniforge::intent {
namespace {

// Words too common in agent names to identify one on their own.
const std::set<std::string_view>& WeakNameWords() {
  static const std::set<std::string_view> words = {
      "agent", "bot", "the", "a", "my", "our", "weekly", "daily", "monthly", "hourly", "nightly",
      "report", "reports", "summary", "update", "updates", "sync", "alert", "alerts", "new", "auto",
      "email", "emails", "team", "notifier", "helper", "assistant", "tracker", "watcher", "monitor",
      "digest",
      // Verbs and words every request uses.
      "run", "runs", "runner", "send", "sender", "post", "poster", "check", "checker", "get",
      "make", "maker", "syncer", "list", "data", "and", "for", "from", "all", "one", "it", "writer",
      "generator", "builder", "bot", "collector", "reminder", "remind"};
  return words;
}

bool SameWord(std::string_view a, std::string_view b) {
  if (a == b) return true;
  // Plural or possessive forms: "invoices" / "invoice".
  auto strip = [](std::string_view w) {
    return w.size() > 3 && w.back() == 's' ? w.substr(0, w.size() - 1) : w;
  };
  return strip(a) == strip(b);
}

struct NameMatch {
  int strong = 0;  // distinctive name words present
  int total = 0;   // all name words present
  int words = 0;   // name words
  bool exact = false;
};

NameMatch Score(std::string_view lowered_text, const std::vector<std::string_view>& words,
                const CatalogItem& item) {
  NameMatch m;
  const std::string name = Lowercase(item.name);
  if (!name.empty() && name.size() >= 3) {
    // The exact name, not inside a longer one.
    size_t pos = 0;
    while ((pos = lowered_text.find(name, pos)) != std::string_view::npos) {
      auto is_name_char = [](char c) {
        return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
      };
      const bool left = pos == 0 || !is_name_char(lowered_text[pos - 1]);
      const size_t end = pos + name.size();
      const bool right = end >= lowered_text.size() || !is_name_char(lowered_text[end]);
      if (left && right) {
        m.exact = true;
        break;
      }
      pos = end;
    }
  }
  const std::string normalized_name = NormalizeText(item.name);
  for (std::string_view part : Words(normalized_name)) {
    ++m.words;
    const bool present = std::any_of(words.begin(), words.end(),
                                     [&](std::string_view w) { return SameWord(w, part); });
    if (!present) continue;
    ++m.total;
    if (!WeakNameWords().contains(part) && part.size() >= 3) ++m.strong;
  }
  return m;
}

// A loose match names at least one distinctive word of the name; two items
// matching equally well are a tie, resolved by nobody.
bool LooseMatch(const NameMatch& m) { return m.strong > 0; }

}  // namespace

std::optional<std::string> MatchCatalogItem(std::string_view text,
                                            const std::vector<CatalogItem>& items) {
  if (items.empty()) return std::nullopt;
  const std::string lowered = Lowercase(text);
  const std::string normalized = NormalizeText(text);
  const std::vector<std::string_view> words = Words(normalized);
  const CatalogItem* best = nullptr;
  NameMatch best_match;
  bool tie = false;
  for (const CatalogItem& item : items) {
    const NameMatch m = Score(lowered, words, item);
    if (m.exact) {
      // The longest exact name wins ("sales-digest" inside "weekly-sales-digest"
      // cannot happen thanks to the boundary check, but two exact names can).
      if (best == nullptr || !best_match.exact || item.name.size() > best->name.size()) {
        best = &item;
        best_match = m;
        tie = false;
      }
      continue;
    }
    if (best_match.exact || !LooseMatch(m)) continue;
    const auto key = [](const NameMatch& x) { return std::make_pair(x.strong, x.total); };
    if (best == nullptr || key(m) > key(best_match)) {
      best = &item;
      best_match = m;
      tie = false;
    } else if (key(m) == key(best_match)) {
      tie = true;
    }
  }
  if (best == nullptr || (tie && !best_match.exact)) return std::nullopt;
  return best->name;
}

std::vector<std::string> CatalogItemsInOrder(std::string_view text,
                                             const std::vector<CatalogItem>& items) {
  const std::string lowered = Lowercase(text);
  std::vector<std::pair<size_t, std::string>> found;
  for (const CatalogItem& item : items) {
    const std::string name = Lowercase(item.name);
    if (name.empty()) continue;
    const size_t pos = lowered.find(name);
    if (pos != std::string::npos) found.emplace_back(pos, item.name);
  }
  // A name inside a longer one at the same place ("digest" in
  // "sales-digest") is not a separate item.
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second.size() > b.second.size();
  });
  std::vector<std::string> out;
  size_t covered_until = 0;
  for (const auto& [pos, name] : found) {
    if (!out.empty() && pos < covered_until) continue;
    out.push_back(name);
    covered_until = pos + name.size();
  }
  return out;
}

std::string MaskCatalogNames(std::string_view text, const std::vector<CatalogItem>& items,
                             std::string_view stand_in) {
  // Only names of several parts: a one-word name ("sync", "summarize")
  // may be the very verb of the message.
  std::vector<std::string> names;
  names.reserve(items.size());
  for (const CatalogItem& item : items) {
    if (item.name.size() >= 3 && item.name.find_first_of("-_ ") != std::string::npos) {
      names.push_back(Lowercase(item.name));
    }
  }
  std::sort(names.begin(), names.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  const auto is_name_char = [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
  };
  std::string out(text);
  // Kept in step with `out`: a stand-in replaces the same bytes in both.
  std::string lowered = Lowercase(out);
  for (const std::string& name : names) {
    for (size_t pos = lowered.find(name); pos != std::string::npos;
         pos = lowered.find(name, pos + 1)) {
      const size_t end = pos + name.size();
      // Not inside a longer name, a #channel or an address ("#cert-watch",
      // "alerts@cert-watch.io"); a full stop ending the sentence is fine.
      const char before = pos > 0 ? lowered[pos - 1] : ' ';
      const char after = end < lowered.size() ? lowered[end] : ' ';
      const bool dotted =
          after == '.' && end + 1 < lowered.size() && is_name_char(lowered[end + 1]);
      if (is_name_char(before) || before == '#' || before == '@' || before == '.' ||
          is_name_char(after) || after == '@' || dotted) {
        continue;
      }
      out.replace(pos, name.size(), stand_in);
      lowered.replace(pos, name.size(), stand_in);
      pos += stand_in.empty() ? 0 : stand_in.size() - 1;
    }
  }
  return out;
}

namespace {

// "every monday at 9am", "daily", "on fridays", "cron 0 9 * * 1-5".
std::optional<std::string> ScheduleOf(const std::string& lowered) {
  static const RE2 kSchedule(
      R"(((?:every|each)\s+(?:other\s+)?(?:\d+\s+)?(?:day|morning|evening|night|weekday|week|month|quarter|year|hour|minute|minutes|hours|monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tue|wed|thu|fri|sat|sun)s?(?:\s+(?:at|by|around)\s+\d{1,2}(?::\d{2})?\s*(?:am|pm)?)?|\b(?:daily|weekly|biweekly|monthly|quarterly|hourly|nightly|yearly|annually)\b(?:\s+(?:at|by|around)\s+\d{1,2}(?::\d{2})?\s*(?:am|pm)?)?|\bon\s+(?:mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays|weekdays|weekends)\b|\b(?:at|by)\s+\d{1,2}(?::\d{2})?\s*(?:am|pm)\b|\bcron\s+[\d*/,\- ]{9,}))");
  re2::StringPiece schedule;
  if (!RE2::PartialMatch(lowered, kSchedule, &schedule)) return std::nullopt;
  return std::string(TrimWhitespace(std::string_view(schedule.data(), schedule.size())));
}

// Known tools and stores: a phrase and the id it stands for.
constexpr std::pair<std::string_view, std::string_view> kSources[] = {
    {"google sheets", "google_sheets"},
    {"google sheet", "google_sheets"},
    {"spreadsheet", "google_sheets"},
    {"google drive", "google_drive"},
    {"gdrive", "google_drive"},
    {"google calendar", "google_calendar"},
    {"notion", "notion"},
    {"slack", "slack"},
    {"gmail", "gmail"},
    {"outlook", "outlook"},
    {"hubspot", "hubspot"},
    {"salesforce", "salesforce"},
    {"sfdc", "salesforce"},
    {"jira", "jira"},
    {"github", "github"},
    {"gitlab", "gitlab"},
    {"stripe", "stripe"},
    {"postgres", "postgres"},
    {"postgresql", "postgres"},
    {"mysql", "mysql"},
    {"bigquery", "bigquery"},
    {"snowflake", "snowflake"},
    {"zendesk", "zendesk"},
    {"intercom", "intercom"},
    {"airtable", "airtable"},
    {"linear", "linear"},
    {"asana", "asana"},
    {"trello", "trello"},
    {"shopify", "shopify"},
    {"confluence", "confluence"},
    {"quickbooks", "quickbooks"},
    {"xero", "xero"},
    {"mailchimp", "mailchimp"},
    {"dropbox", "dropbox"},
    {"excel", "excel"},
    {"teams", "teams"},
    {"zoom", "zoom"},
    {"s3", "s3"},
    {"pipedrive", "pipedrive"},
    {"freshdesk", "freshdesk"},
    {"calendly", "calendly"},
    {"typeform", "typeform"},
};

// The ids of the known tools and stores the normalized `words` name, in order of
// appearance, comma-separated; empty when there are none.
std::string DataSourcesOf(const std::vector<std::string_view>& words) {
  std::vector<std::pair<int, std::string_view>> sources;
  for (const auto& [phrase, id] : kSources) {
    const int at = FindPhrase(words, phrase);
    if (at < 0) continue;
    if (std::none_of(sources.begin(), sources.end(),
                     [&id = id](const auto& s) { return s.second == id; })) {
      sources.emplace_back(at, id);
    }
  }
  std::sort(sources.begin(), sources.end());
  std::vector<std::string> ids;
  ids.reserve(sources.size());
  for (const auto& s : sources) ids.emplace_back(s.second);
  return absl::StrJoin(ids, ",");
}

// Recipients: e-mail addresses, #channels, "to/cc <someone>" phrases.
std::vector<std::string> RecipientsOf(const std::string& lowered) {
  std::vector<std::string> recipients;
  static const RE2 kEmail(R"(([a-z0-9._%+\-]+@[a-z0-9.\-]+\.[a-z]{2,}))");
  static const RE2 kChannel(R"((?:^|\s)(#[a-z][a-z0-9_\-]{1,79}))");
  static const RE2 kTeam(
      R"(\b(?:to|cc|for|with|notify|ping|tell)\s+((?:the\s+)?[a-z]+(?:\s+[a-z]+)?\s+(?:team|channel|group|department|managers|leads))\b)");
  static const RE2 kPerson(
      R"(\b(?:cc|notify|ping|loop in)\s+([a-z]+)\b|\b(?:to|email|tell)\s+(me|us|everyone)\b)");
  re2::StringPiece input(lowered);
  std::string match;
  while (RE2::FindAndConsume(&input, kEmail, &match)) recipients.push_back(match);
  input = re2::StringPiece(lowered);
  while (RE2::FindAndConsume(&input, kChannel, &match)) recipients.push_back(match);
  input = re2::StringPiece(lowered);
  while (RE2::FindAndConsume(&input, kTeam, &match)) recipients.push_back(match);
  if (recipients.empty()) {
    input = re2::StringPiece(lowered);
    std::string person, group;
    if (RE2::FindAndConsume(&input, kPerson, &person, &group)) {
      recipients.push_back(person.empty() ? group : person);
    }
  }
  return recipients;
}

// The kind of agent a request describes: the kind of its first word that
// names one (libs/words/data/agent_kinds.txt); empty when none does.
std::string AgentKindOf(const std::vector<std::string_view>& words) {
  int first = -1;
  std::string kind;
  for (const words::Entry& entry : words::Entries("agent_kinds")) {
    const int at = FindPhrase(words, entry.text);
    if (at >= 0 && (first < 0 || at < first)) {
      first = at;
      kind = entry.value;
    }
  }
  return kind;
}

// A project the message names as such: project "Harbor" (quoted), or the
// words right before "project" back to the nearest small word, when the
// first of them is capitalised or a small word ("the", "of") stands before
// them: "the Website relaunch project", "tasks in the Harbor project",
// "Harbor project's tasks". Not "this project", "the whole project",
// "Summarize my project", "status of the project".
std::string ProjectOf(std::string_view text) {
  static const RE2 kQuoted(R"((?i)\bproject\s+(?:called\s+|named\s+)?["“']([^"”']{1,80})["”'])");
  std::string name;
  if (RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), kQuoted, &name)) {
    return std::string(TrimWhitespace(name));
  }
  static const std::set<std::string, std::less<>> kStops = {
      "the",   "a",     "an",   "of",    "in",    "on",     "for",  "to",    "from",    "about",
      "at",    "with",  "and",  "or",    "my",    "our",    "your", "their", "this",    "that",
      "these", "those", "each", "every", "whole", "entire", "same", "new",   "current", "next",
      "last",  "any",   "one",  "other", "big",   "side",   "is",   "by",    "me"};
  std::vector<std::string> words;
  for (absl::string_view w : absl::StrSplit(absl::string_view(text.data(), text.size()),
                                            absl::ByAnyChar(" \t\n,;:!?()"), absl::SkipEmpty())) {
    words.emplace_back(w);
  }
  for (size_t i = 1; i < words.size(); ++i) {
    const std::string word = Lowercase(words[i]);
    if (word != "project" && word != "project's" && word != "projects") continue;
    size_t first = i;
    while (first > 0 && first + 3 > i && !kStops.contains(Lowercase(words[first - 1]))) --first;
    if (first == i) continue;
    const bool after_small_word = first > 0 && kStops.contains(Lowercase(words[first - 1]));
    const bool capitalised = std::isupper(static_cast<unsigned char>(words[first][0])) != 0;
    if (!(capitalised ? first > 0 : after_small_word)) continue;
    std::string found;
    for (size_t j = first; j < i; ++j) absl::StrAppend(&found, found.empty() ? "" : " ", words[j]);
    return found;
  }
  return "";
}

// The IANA zone names of this machine's zone data (tzdata.zi: zones and
// links), read once; empty when it cannot be read.
const std::set<std::string, std::less<>>& KnownZoneNames() {
  static const auto* names = [] {
    auto* out = new std::set<std::string, std::less<>>{"UTC"};
    std::ifstream in("/usr/share/zoneinfo/tzdata.zi");
    std::string line;
    while (std::getline(in, line)) {
      std::vector<std::string> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
      if (fields.size() >= 2 && fields[0] == "Z") out->insert(fields[1]);
      if (fields.size() >= 3 && fields[0] == "L") out->insert(fields[2]);
    }
    if (out->size() == 1) out->clear();
    return out;
  }();
  return *names;
}

bool IsZoneName(const std::string& name) {
  const auto& known = KnownZoneNames();
  if (!known.empty()) return known.contains(name);
  absl::TimeZone zone;  // no zone data list: ask the library
  return absl::LoadTimeZone(name, &zone);
}

// An IANA name written out ("Europe/Berlin"); of several, the one after
// "to" ("from Europe/London to Asia/Tokyo"), else the first.
std::string IanaZoneOf(std::string_view text) {
  static const RE2 kIana(R"(\b([A-Z][A-Za-z_]+(?:/[A-Z][A-Za-z_+-]+){1,2})\b)");
  if (text.find('/') == std::string_view::npos) return "";
  re2::StringPiece input(text.data(), text.size());
  std::string name;
  std::string first;
  while (RE2::FindAndConsume(&input, kIana, &name)) {
    if (!IsZoneName(name)) continue;
    const size_t at = static_cast<size_t>(input.data() - text.data()) - name.size();
    if (at >= 3 && Lowercase(text.substr(at - 3, 3)) == "to ") return name;
    if (first.empty()) first = name;
  }
  return first;
}

// Whether `word` is a time of day: "9am", "17:30", "9", "noon".
bool IsClockWord(std::string_view word) {
  static const RE2 kClock(R"(\d{1,2}([:.]\d{2})?(am|pm|h)?)");
  return RE2::FullMatch(re2::StringPiece(word.data(), word.size()), kClock) || word == "am" ||
         word == "pm" || word == "noon" || word == "midnight";
}

// A time zone the message names: an IANA name written out that this
// machine's zone data knows, or a place or zone name of
// libs/words/data/time_zones.txt when the message speaks of a time zone,
// says "<place> time", names a zone that ends in "time" ("Pacific time"), or
// gives an abbreviation right after a time of day ("9am PST"). Not a place
// alone ("sales in Germany", "UK invoices"). Of several, the one after "to"
// ("from London to Tokyo"), else the first in the message.
std::string TimeZoneOf(std::string_view text, const std::vector<std::string_view>& words) {
  if (std::string iana = IanaZoneOf(text); !iana.empty()) return iana;
  const bool zone_talk = FindPhrase(words, "time zone") >= 0 || FindPhrase(words, "timezone") >= 0;
  // Most messages speak of no zone: without "time" only a short word after
  // a time of day can be one.
  bool short_after_clock = false;
  for (size_t i = 1; i < words.size() && !short_after_clock; ++i) {
    short_after_clock = words[i].size() <= 4 && IsClockWord(words[i - 1]);
  }
  if (!zone_talk && !short_after_clock && FindPhrase(words, "time") < 0) return "";
  int best = -1;
  std::string zone;
  for (const words::Entry& entry : words::Entries("time_zones")) {
    const int at = FindPhrase(words, entry.text);
    if (at < 0) continue;
    const size_t after = static_cast<size_t>(at) + Words(entry.text).size();
    const bool says_time =
        absl::EndsWith(entry.text, " time") || (after < words.size() && words[after] == "time");
    const bool after_clock = at > 0 && IsClockWord(words[static_cast<size_t>(at) - 1]);
    if (!zone_talk && !says_time && !after_clock) continue;
    const bool after_to = at > 0 && words[static_cast<size_t>(at) - 1] == "to";
    if (after_to) return entry.value;
    if (best < 0 || at < best) {
      best = at;
      zone = entry.value;
    }
  }
  return zone;
}

}  // namespace

std::map<std::string, std::string> ExtractEntities(std::string_view text) {
  std::map<std::string, std::string> out;
  const std::string lowered = Lowercase(text);
  // The normalized words, read once by the word-list readers.
  const std::string normalized = NormalizeText(text);
  const std::vector<std::string_view> words = Words(normalized);
  if (std::string kind = AgentKindOf(words); !kind.empty()) out["agent_kind"] = kind;
  if (std::string project = ProjectOf(text); !project.empty()) out["project"] = project;
  if (std::optional<std::string> schedule = ScheduleOf(lowered)) out["schedule"] = *schedule;
  if (std::string zone = TimeZoneOf(text, words); !zone.empty()) out["time_zone"] = zone;
  if (std::string sources = DataSourcesOf(words); !sources.empty()) out["data_source"] = sources;
  const std::vector<std::string> recipients = RecipientsOf(lowered);
  if (!recipients.empty()) out["recipients"] = absl::StrJoin(recipients, ",");
  return out;
}

namespace {

// Each ordinal word (libs/words/data/ordinals.txt) and its index: 0-based
// from the start, or -1 for the last, -2 for the one before it. A list
// without positions is a startup misconfiguration.
const std::vector<std::pair<std::string, int>>& OrdinalWords() {
  static const std::vector<std::pair<std::string, int>> ordinals = [] {
    std::vector<std::pair<std::string, int>> out;
    for (const words::Entry& entry : words::Entries("ordinals")) {
      int position = 0;
      if (!absl::SimpleAtoi(entry.value, &position) || position == 0) {
        std::fprintf(stderr, "ordinals.txt: '%s' has no position\n", entry.text.c_str());
        std::abort();
      }
      out.emplace_back(entry.text, position > 0 ? position - 1 : position);
    }
    return out;
  }();
  return ordinals;
}

// A position counted from the end at words[i]: "the second to last",
// "second-last", "2nd from the bottom", "last but one".
std::optional<OrdinalRef> CountedFromEnd(const std::vector<std::string_view>& words, size_t i) {
  static const std::vector<std::pair<std::string, int>>& kOrdinals = OrdinalWords();
  const auto at = [&](size_t k) { return k < words.size() ? words[k] : std::string_view(); };
  if (at(i) == "last" && at(i + 1) == "but") {
    for (const auto& [word, position] : words::Entries("ordinal_counts")) {
      if (at(i + 2) == word) {
        return OrdinalRef{OrdinalRef::Kind::kFromEnd, std::stoi(position),
                          "last but " + std::string(word)};
      }
    }
  }
  size_t end = 0;  // the word after the ordinal that says "from the end"
  if (at(i + 1) == "to" && at(i + 2) == "last") end = i + 3;
  if (at(i + 1) == "last") end = i + 2;
  if (at(i + 1) == "from" && at(i + 2) == "the" &&
      (at(i + 3) == "bottom" || at(i + 3) == "end" || at(i + 3) == "last")) {
    end = i + 4;
  }
  if (end == 0) return std::nullopt;
  for (const auto& [word, index] : kOrdinals) {
    if (words[i] == word && index > 0) {
      std::string text;
      for (size_t k = i; k < end; ++k) text += (k == i ? "" : " ") + std::string(words[k]);
      return OrdinalRef{OrdinalRef::Kind::kFromEnd, index, text};
    }
  }
  return std::nullopt;
}

// "b", "b pls", "option c", "(b)": a letter of a lettered list at `i`, in
// a short message or counted ("a" only then: it is an article too).
std::optional<OrdinalRef> LetterAt(const std::vector<std::string_view>& words, size_t i) {
  const std::string_view w = words[i];
  if (w.size() != 1 || w[0] < 'a' || w[0] > 'h') return std::nullopt;
  const std::string_view prev = i > 0 ? words[i - 1] : "";
  const bool counted = prev == "option" || prev == "item" || prev == "choice" || prev == "letter" ||
                       prev == "answer";
  size_t others = 0;
  for (std::string_view other : words) {
    others += other != w && !OneOf(other, {"pls", "please", "plz", "thanks", "thx", "ok", "okay",
                                           "option", "the", "one", "?", "go", "with"});
  }
  if (!counted && (others > 0 || (w == "a" && words.size() > 1))) return std::nullopt;
  return OrdinalRef{OrdinalRef::Kind::kFromStart, w[0] - 'a', std::string(w), true};
}

}  // namespace

std::optional<OrdinalRef> FindOrdinal(std::string_view text) {
  const std::string normalized = NormalizeText(text);
  const std::vector<std::string_view> words = Words(normalized);
  static const std::vector<std::pair<std::string, int>>& kOrdinals = OrdinalWords();
  // Nouns that make "last"/"first" a time or a thing rather than a list
  // position ("the last run", "first thing tomorrow").
  static const std::set<std::string_view> kNotAListItem = {
      "run",  "runs",  "time", "week", "night",  "month",   "day",   "year", "thing",   "things",
      "step", "steps", "hour", "few",  "couple", "message", "email", "sync", "quarter", "of"};
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string_view prev = i > 0 ? words[i - 1] : "";
    const std::string_view next = i + 1 < words.size() ? words[i + 1] : "";
    // "the middle one", "the middle entry", "the one in the centre of that list".
    const bool centre =
        (words[i] == "centre" || words[i] == "center") && prev == "the" && next == "of";
    if (centre || ((words[i] == "middle" || words[i] == "other") && prev == "the" &&
                   (next.empty() || next == "one" || next == "agent" || next == "bot" ||
                    next == "entry" || next == "item" || next == "?"))) {
      if (centre) return OrdinalRef{OrdinalRef::Kind::kMiddle, 0, "the centre one"};
      return OrdinalRef{words[i] == "middle" ? OrdinalRef::Kind::kMiddle : OrdinalRef::Kind::kOther,
                        0, "the " + std::string(words[i]) + " one"};
    }
    if (std::optional<OrdinalRef> from_end = CountedFromEnd(words, i)) return from_end;
    // "the 2nd of those", "the last of them", "the first of the three": a
    // position in the list just given, though "of" usually makes "first"
    // or "last" a time ("the last of the month").
    const std::string_view after_of = i + 2 < words.size() ? words[i + 2] : "";
    const bool of_the_list =
        next == "of" &&
        (after_of == "those" || after_of == "them" || after_of == "these" || after_of == "that" ||
         (after_of == "the" && i + 3 < words.size() &&
          (words[i + 3] == "list" || words[i + 3] == "three" || words[i + 3] == "two" ||
           words[i + 3] == "four" || words[i + 3] == "five")));
    for (const auto& [word, index] : kOrdinals) {
      if (words[i] != word) continue;
      if (kNotAListItem.contains(next) && !of_the_list) continue;
      // "top"/"final"/"bottom"/"last"/"first" alone mean many things; they
      // count only with a determiner before them (or alone).
      // "last one on ur list" names a position too.
      const bool determiner = prev == "the" || prev == "that" || prev == "this" ||
                              words.size() == 1 || (i == 0 && next == "one");
      const bool weak = words::Contains("ordinals_weak", word);
      if (weak && !determiner) continue;
      if (index < 0) return OrdinalRef{OrdinalRef::Kind::kFromEnd, -index - 1, std::string(word)};
      return OrdinalRef{OrdinalRef::Kind::kFromStart, index, std::string(word)};
    }
    // "item four", "position one": a counted number in words.
    static const std::vector<std::string_view> kNumberWords = {
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"};
    if (prev == "item" || prev == "position" || prev == "number" || prev == "option" ||
        prev == "entry") {
      for (size_t k = 0; k < kNumberWords.size(); ++k) {
        if (words[i] == kNumberWords[k]) {
          return OrdinalRef{OrdinalRef::Kind::kFromStart, static_cast<int>(k),
                            std::string(prev) + " " + std::string(words[i])};
        }
      }
    }
    if (std::optional<OrdinalRef> letter = LetterAt(words, i)) return letter;
    // "#2", "number 2", "no 2", "option 2", "item 2", or just "2".
    int n = 0;
    if (absl::SimpleAtoi(std::string(words[i]), &n) && n >= 1 && n <= 50) {
      const bool hash =
          i < normalized.size() && text.find("#" + std::string(words[i])) != std::string_view::npos;
      const bool counted = prev == "number" || prev == "no" || prev == "option" || prev == "item" ||
                           prev == "num" || prev == "nr";
      if (hash || counted || words.size() <= 2) {
        return OrdinalRef{OrdinalRef::Kind::kFromStart, n - 1,
                          (hash ? "#" : "") + std::string(words[i])};
      }
    }
  }
  return std::nullopt;
}

int OrdinalRef::Resolve(int size, int current) const {
  switch (kind) {
    case Kind::kFromStart:
      return index < size ? index : -1;
    case Kind::kFromEnd:
      return index < size ? size - 1 - index : -1;
    case Kind::kMiddle:
      return size % 2 == 1 ? size / 2 : -1;
    case Kind::kOther:
      return size == 2 && current >= 0 ? 1 - current : -1;
  }
  return -1;
}

bool HasAgentPronoun(std::string_view text) {
  const std::string normalized = NormalizeText(text);
  const std::vector<std::string_view> words = Words(normalized);
  return ContainsAnyPhrase(words, {"it", "its", "that one", "this one", "that agent", "this agent",
                                   "that bot", "this bot", "the same one", "that thing",
                                   "this thing", "the agent", "the bot", "him"});
}

}  // namespace omniforge::intent
