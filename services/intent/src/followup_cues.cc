#include "services/intent/src/followup_cues.h"

#include <algorithm>
#include <cctype>
#include <memory>
#include <string>
#include <vector>

#include "libs/words/lists.h"
#include "re2/re2.h"
#include "services/intent/src/cues.h"
#include "services/intent/src/text.h"

namespace omniforge::intent {
namespace {

using WordSet = words::WordSet;

// A correction longer than this is a new request.
constexpr size_t kMaxCorrectionWords = 14;
// A refusal longer than this says more than no.
constexpr size_t kMaxRefusalWords = 14;

// Words around a corrected value that are not part of it: apology,
// agreement, hesitation, the "I meant" of a correction.
const WordSet& AroundValue() {
  static const WordSet& words = words::List("followup_around_value");
  return words;
}

// Filler, or a word of agreement ("approved", "lgtm"): not a value.
bool IsFiller(std::string_view w) {
  static const WordSet& agreement = words::List("confirm_intent");
  return AroundValue().contains(w) || agreement.contains(w);
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (std::isspace(static_cast<unsigned char>(s.front())) != 0 ||
                        s.front() == ',' || s.front() == '.' || s.front() == '!')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (std::isspace(static_cast<unsigned char>(s.back())) != 0 ||
                        s.back() == ',' || s.back() == '.' || s.back() == '!' || s.back() == '?')) {
    s.remove_suffix(1);
  }
  return s;
}

// The length of the clause separator at `text[i]` (, ; : ( ) — – → " - "
// and sentence ends), or 0. The colon of a time ("5:30 am") separates
// nothing.
size_t SeparatorAt(std::string_view text, size_t i) {
  const char c = text[i];
  const auto digit = [&](size_t k) {
    return k < text.size() && std::isdigit(static_cast<unsigned char>(text[k])) != 0;
  };
  if (c == ':' && i > 0 && digit(i - 1) && digit(i + 1)) return 0;
  const bool sentence_end =
      (c == '.' || c == '!' || c == '?') && (i + 1 == text.size() || text[i + 1] == ' ');
  if (c == ',' || c == ';' || c == ':' || c == '(' || c == ')' || sentence_end) return 1;
  for (std::string_view wide : {"—", "–", "→", " - "}) {
    if (text.compare(i, wide.size(), wide) == 0) return wide.size();
  }
  return 0;
}

// Splits `text` into clauses at separators (SeparatorAt).
std::vector<std::string_view> Clauses(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    const size_t cut = i == text.size() ? 1 : SeparatorAt(text, i);
    if (cut == 0) continue;
    std::string_view clause = Trim(text.substr(start, i - start));
    if (!clause.empty()) out.push_back(clause);
    start = i + cut;
    i += cut - 1;
  }
  return out;
}

bool HasAsciiAlnum(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char ch) {
    return static_cast<unsigned char>(ch) < 0x80 &&
           std::isalnum(static_cast<unsigned char>(ch)) != 0;
  });
}

// The byte offset in `clause` of the first word that is not filler (nor
// an emoji).
size_t FirstValueWord(std::string_view clause) {
  size_t at = 0;
  while (at < clause.size()) {
    while (at < clause.size() && clause[at] == ' ') ++at;
    size_t end = at;
    while (end < clause.size() && clause[end] != ' ') ++end;
    const std::string_view token = clause.substr(at, end - at);
    const std::string word = NormalizeText(token);
    if (HasAsciiAlnum(token) && !(Words(word).size() == 1 && IsFiller(word))) return at;
    at = end;
  }
  return clause.size();
}

// The next quote mark in `text` from `from` that opens or closes a
// quotation: an apostrophe inside a word ("that's", "it's") is none.
size_t QuoteAt(std::string_view text, size_t from) {
  auto letter = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; };
  for (size_t at = text.find_first_of("'\"", from); at != std::string_view::npos;
       at = text.find_first_of("'\"", at + 1)) {
    if (text[at] == '"' || at == 0 || at + 1 >= text.size() || !letter(text[at - 1]) ||
        !letter(text[at + 1])) {
      return at;
    }
  }
  return std::string_view::npos;
}

// The text between the first pair of quote marks in `clause`, or empty.
std::string_view Quoted(std::string_view clause) {
  const size_t open = QuoteAt(clause, 0);
  if (open == std::string_view::npos) return {};
  const size_t close = QuoteAt(clause, open + 1);
  if (close == std::string_view::npos || close <= open + 1) return {};
  return Trim(clause.substr(open + 1, close - open - 1));
}

// `clause` after the last phrase that opens a value ("I said kg but I
// meant lbs", "that should have been the 14th"), when a value follows.
std::string_view AfterValueOpener(std::string_view clause) {
  const std::string lowered = " " + Lowercase(clause) + " ";
  size_t cut = std::string::npos;
  for (const words::Entry& opener : words::Entries("followup_value_openers")) {
    const size_t at = lowered.rfind(" " + opener.text + " ");
    if (at == std::string::npos) continue;
    const size_t end = at + opener.text.size() + 1;  // in `clause`, past the phrase
    if (cut == std::string::npos || end > cut) cut = end;
  }
  if (cut == std::string::npos || cut >= clause.size()) return clause;
  const std::string_view rest = Trim(clause.substr(cut));
  return rest.empty() ? clause : rest;
}

// "swap Friday for Thursday", "only change the sender name to Harbor
// Dental": after a verb of replacement the new value comes last; nullopt
// when the clause has none.
std::optional<std::string_view> ReplacementValue(std::string_view clause) {
  static const WordSet& adverbs = words::List("followup_value_adverbs");
  static const WordSet& verbs = words::List("followup_replace_verbs");
  size_t at = 0;
  while (at < clause.size()) {
    size_t end = clause.find(' ', at);
    if (end == std::string_view::npos) end = clause.size();
    const std::string word = Lowercase(clause.substr(at, end - at));
    if (verbs.contains(word)) break;
    if (!adverbs.contains(word)) return std::nullopt;
    at = end + 1;
  }
  if (at >= clause.size()) return std::nullopt;
  const std::string_view rest = clause.substr(at);
  for (std::string_view link : {" for ", " with ", " to "}) {
    const size_t found = rest.find(link);
    if (found != std::string_view::npos) return Trim(rest.substr(found + link.size()));
  }
  return std::nullopt;
}

// `clause` without the filler before its value, the "not Y" after it and
// the filler after that. A quoted value is the value.
std::string_view ValueOf(std::string_view clause) {
  if (const std::string_view quoted = Quoted(clause); !quoted.empty()) return quoted;
  clause = AfterValueOpener(clause);
  clause = clause.substr(FirstValueWord(clause));
  if (const std::optional<std::string_view> replaced = ReplacementValue(clause)) return *replaced;
  for (std::string_view negation : {" not ", " instead of ", " rather than ", " vs "}) {
    const size_t at = clause.find(negation);
    if (at != std::string_view::npos) clause = clause.substr(0, at);
  }
  // Trailing filler: "June 20 I mean", "For sunday sorry".
  while (!clause.empty()) {
    const size_t space = clause.rfind(' ');
    if (space == std::string_view::npos) break;
    const std::string last = NormalizeText(clause.substr(space + 1));
    if (!IsFiller(last) || last == "one") break;
    clause = Trim(clause.substr(0, space));
  }
  const std::string whole = NormalizeText(clause);
  const std::vector<std::string_view> words = Words(whole);
  if (std::all_of(words.begin(), words.end(),
                  [](std::string_view w) { return IsFiller(w) || !HasAsciiAlnum(w); })) {
    return {};
  }
  return Trim(clause);
}

bool HasDigit(std::string_view s) {
  return std::any_of(s.begin(), s.end(),
                     [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)) != 0; });
}

}  // namespace

namespace {

// "go ahead, just leave out the weekend", "yes please and cc Marta on it":
// after the agreement, a clause that opens with a verb of editing and
// gives it something to work on.
bool HasEditClause(std::string_view message) {
  static const WordSet& adverbs = words::List("followup_value_adverbs");
  static const WordSet& verbs = words::List("followup_edit_verbs");
  static const WordSet& empty = words::List("followup_go_ahead");
  static const WordSet& stop = words::List("clarify_stop_words");
  for (std::string_view clause : Clauses(message)) {
    const std::string normalized = NormalizeText(clause);
    const std::vector<std::string_view> words = Words(normalized);
    size_t i = 0;
    while (i < words.size() && (IsFiller(words[i]) || adverbs.contains(words[i]))) ++i;
    if (i >= words.size() || !verbs.contains(words[i])) continue;
    for (size_t k = i + 1; k < words.size(); ++k) {
      const std::string_view w = words[k];
      if (!IsFiller(w) && !empty.contains(w) && !stop.contains(w) && HasAsciiAlnum(w)) return true;
    }
  }
  return false;
}

}  // namespace

bool CarriesEdit(std::string_view message) {
  const std::string normalized = NormalizeText(message);
  const std::vector<std::string_view> words = Words(normalized);
  // A quoted value ("with the subject line 'Branch growth weekly'").
  const size_t quote = QuoteAt(message, 0);
  const size_t close = quote == std::string_view::npos ? quote : QuoteAt(message, quote + 1);
  const bool quoted = close != std::string_view::npos && close > quote + 3;
  return HasDigit(message) || quoted || words::ContainsAnyEntry(words, "followup_edit_markers") ||
         HasEditClause(message);
}

bool IsCorrection(const std::vector<std::string_view>& words) {
  if (words.empty() || words.size() > kMaxCorrectionWords) return false;
  if (words::ContainsAnyEntry(words, "followup_correction_phrases")) {
    return true;
  }
  // "Janet Kim, not Ortiz", "zone D not B": a value, then the one it
  // replaces; not a question ("why is the digest not running").
  static const WordSet& asks = words::List("followup_question_openers");
  if (ContainsPhrase(words, "?") || asks.contains(words.front())) return false;
  const int at = FindPhrase(words, "not");
  return at >= 1 && !asks.contains(words[at - 1]) && static_cast<size_t>(at) + 1 < words.size() &&
         words.size() <= 8 && !words::ContainsAnyEntry(words, "followup_not_correction");
}

namespace {

// A word that may carry a value: not filler, not a stop word.
bool IsContentWord(std::string_view w) {
  static const WordSet& stop = words::List("clarify_stop_words");
  return HasAsciiAlnum(w) && !IsFiller(w) && !stop.contains(w) && (w.size() >= 2 || HasDigit(w));
}

bool InPrevious(std::string_view w, const std::vector<std::string_view>& previous) {
  return std::any_of(previous.begin(), previous.end(), [w](std::string_view p) {
    if (p == w) return true;
    const std::string_view shorter = p.size() < w.size() ? p : w;
    const std::string_view longer = p.size() < w.size() ? w : p;
    return shorter.size() >= 4 && longer.size() == shorter.size() + 1 &&
           longer.starts_with(shorter) && longer.back() == 's';
  });
}

// "X, not Y" / "not Y, X": Y is in the previous request and X is new.
bool ContrastsWithPrevious(const std::vector<std::string_view>& words,
                           const std::vector<std::string_view>& previous) {
  const int at = FindPhrase(words, "not");
  if (at < 0 || words::ContainsAnyEntry(words, "followup_not_correction")) return false;
  bool replaced = false;
  for (size_t k = at + 1; k < words.size() && k <= static_cast<size_t>(at) + 4; ++k) {
    replaced = replaced || (IsContentWord(words[k]) && InPrevious(words[k], previous));
  }
  const bool new_value = std::any_of(words.begin(), words.end(), [&](std::string_view w) {
    return IsContentWord(w) && !InPrevious(w, previous);
  });
  return replaced && new_value;
}

// "no wait flat 4D, 4B already paid", "oops, the 2024 figures": a
// retraction, then words of the previous request beside new ones, and no
// new command.
bool RetractsPrevious(const std::vector<std::string_view>& words,
                      const std::vector<std::string_view>& previous) {
  static const WordSet& openers = words::List("followup_retraction_openers");
  if (words.empty() || !openers.contains(words.front())) return false;
  size_t start = 0;
  while (start < words.size() && IsFiller(words[start])) ++start;
  const std::vector<std::string_view> rest(words.begin() + static_cast<long>(start), words.end());
  if (rest.empty() || LeadingVerb(rest)) return false;
  // The value ends where a statement about it starts ("4B already paid",
  // "the digest failed again").
  static const WordSet& past = words::List("clarify_past_irregular");
  static const WordSet& statement = words::List("followup_statement_verbs");
  int kept = 0, fresh = 0;
  for (std::string_view w : rest) {
    if (past.contains(w) || statement.contains(w) || (w.size() >= 5 && w.ends_with("ed"))) break;
    if (!IsContentWord(w)) continue;
    (InPrevious(w, previous) ? kept : fresh) += 1;
  }
  return kept > 0 && fresh > 0 && kept + fresh <= 6;
}

}  // namespace

bool ReplacesPreviousValue(const std::vector<std::string_view>& words,
                           const std::vector<std::string_view>& previous) {
  if (words.empty() || words.size() > kMaxCorrectionWords || previous.empty() ||
      ContainsPhrase(words, "?") || words::Contains("followup_question_openers", words.front())) {
    return false;
  }
  return ContrastsWithPrevious(words, previous) || RetractsPrevious(words, previous);
}

std::string CorrectedValue(std::string_view message) {
  const std::vector<std::string_view> clauses = Clauses(message);
  std::vector<std::string_view> values;
  for (std::string_view clause : clauses) {
    const std::string normalized = NormalizeText(clause);
    const std::vector<std::string_view> words = Words(normalized);
    // "not the curators": the value being replaced; "wrong person": what
    // was wrong, not what is right.
    const auto first =
        std::find_if(words.begin(), words.end(), [](std::string_view w) { return !IsFiller(w); });
    if (!words.empty() &&
        (words.front() == "not" ||
         (words.size() > 1 && IsFiller(words.front()) && words[1] == "not") ||
         (first != words.begin() && first != words.end() && *(first - 1) == "wrong"))) {
      continue;
    }
    std::string_view value = ValueOf(clause);
    if (!value.empty()) values.push_back(value);
  }
  // A pronoun alone ("excuse me") is no value when another clause has one.
  static const WordSet& pronouns = words::List("send_pronouns");
  static const WordSet& people = words::List("send_people");
  if (values.size() > 1) {
    std::erase_if(values, [](std::string_view v) {
      const std::string word = Lowercase(v);
      return pronouns.contains(word) || people.contains(word);
    });
  }
  if (values.empty()) return "";
  // A figure is what corrections and edits most often change.
  for (std::string_view v : values) {
    if (HasDigit(v)) return std::string(v);
  }
  return std::string(values.front());
}

bool OpensWithRefusal(const std::vector<std::string_view>& words) {
  if (words.empty() || words.size() > kMaxRefusalWords) return false;
  static const WordSet& openings = words::List("followup_refusal_openings");
  size_t start = 0;
  static const WordSet& hesitation = words::List("followup_refusal_hesitation");
  // The refusal may follow a hesitation or a thanks ("hmm, no", "thanks but no").
  while (start < words.size() && start < 3 && hesitation.contains(words[start]) &&
         words[start] != "no") {
    ++start;
  }
  const std::vector<std::string_view> rest(words.begin() + static_cast<long>(start), words.end());
  bool opens = false;
  for (std::string_view phrase : openings) {
    if (FindPhrase(rest, phrase) == 0 || FindPhrase(words, phrase) == 0) opens = true;
  }
  if (!opens) return false;
  // "no, make it weekly", "no, 45": a correction, not a refusal.
  for (std::string_view w : words) {
    if (HasDigit(w)) return false;
  }
  // "no, send it to the finance channel instead": a new value.
  if (words::ContainsAnyEntry(words, "followup_refusal_new_value")) {
    return false;
  }
  // "but" brings a new value unless it only closes the refusal ("thanks but no").
  for (size_t i = 0; i < words.size(); ++i) {
    if (words[i] == "but" &&
        !(i + 1 < words.size() && OneOf(words[i + 1], {"no", "not", "nah", "thanks"}))) {
      return false;
    }
  }
  static const WordSet& refusal_verbs = words::List("followup_refusal_verbs");
  static const WordSet& between = words::List("followup_refusal_between");
  for (size_t i = 1; i < rest.size(); ++i) {
    const std::vector<std::string_view> tail(rest.begin() + static_cast<long>(i), rest.end());
    if (between.contains(rest[i])) continue;
    // "no thanks, just tell me when it runs next": a new request.
    if ((LeadingVerb(tail) || VerbAction(rest[i]).has_value()) &&
        !refusal_verbs.contains(rest[i])) {
      return false;
    }
    break;
  }
  return true;
}

namespace {

// Values with a form of their own: an address, a channel, an amount, a
// time of day, a frequency, a day, a share.
const std::vector<std::unique_ptr<RE2>>& TypedValues() {
  static const std::vector<std::unique_ptr<RE2>> patterns = [] {
    std::vector<std::unique_ptr<RE2>> out;
    for (
        const char* pattern : {
            R"((?i)([\w.+-]+@[\w-]+(?:\.[\w-]+)+))",
            R"((#[\w-]+))",
            R"((?i)([$€£] ?\d[\d,]*(?:\.\d+)?k?|\d[\d,]*(?:\.\d+)? ?(?:usd|eur|gbp|dollars|euros)\b))",
            R"((?i)(\b\d{1,2}(?::\d{2})? ?(?:am|pm)\b|\b\d{1,2}:\d{2}\b))",
            R"((?i)(\bevery (?:\d+ |other )?(?:minute|hour|day|week|month|quarter|year|morning|evening|night)s?\b|\b(?:hourly|daily|weekly|monthly|quarterly|yearly)\b))",
            R"((?i)(\b(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b))",
            R"((\d+(?:\.\d+)? ?%))",
        }) {
      out.push_back(std::make_unique<RE2>(pattern));
    }
    return out;
  }();
  return patterns;
}

std::vector<std::string> ValuesOf(const RE2& pattern, std::string_view text) {
  std::vector<std::string> out;
  re2::StringPiece input(text.data(), text.size());
  std::string value;
  while (RE2::FindAndConsume(&input, pattern, &value)) out.push_back(value);
  return out;
}

}  // namespace

std::string ReplacedTypedValue(std::string_view message, std::string_view previous) {
  for (const auto& pattern : TypedValues()) {
    const std::vector<std::string> now = ValuesOf(*pattern, message);
    if (now.size() != 1) continue;
    std::vector<std::string> before = ValuesOf(*pattern, previous);
    const std::string lowered = Lowercase(now[0]);
    const bool same = std::any_of(before.begin(), before.end(),
                                  [&](const std::string& b) { return Lowercase(b) == lowered; });
    if (!before.empty() && !same) return now[0];
  }
  return "";
}

bool AppliesASuggestion(const std::vector<std::string_view>& words) {
  static const WordSet& said = words::List("followup_suggestion_verbs");
  constexpr size_t kMaxWords = 16;
  if (words.empty() || words.size() > kMaxWords || ContainsPhrase(words, "?")) return false;
  const bool asks = ContainsAnyPhrase(words, {"do", "apply", "implement", "follow", "go with",
                                              "use", "make", "tweak", "tweaking", "change"});
  if (!asks) return false;
  // "what Kenji said", "what the team lead proposed".
  for (int at = FindPhrase(words, "what"); at >= 0 && static_cast<size_t>(at) < words.size();) {
    for (size_t k = at + 1; k < words.size() && k <= static_cast<size_t>(at) + 4; ++k) {
      if (said.contains(words[k])) return true;
    }
    break;
  }
  return words::ContainsAnyEntry(words, "followup_suggestion_phrases");
}

bool PutsItBack(const std::vector<std::string_view>& words) {
  constexpr size_t kMaxWords = 16;
  return !words.empty() && words.size() <= kMaxWords && !ContainsPhrase(words, "?") &&
         words::ContainsAnyEntry(words, "followup_back_phrases");
}

bool DoesItThemselves(const std::vector<std::string_view>& words) {
  constexpr size_t kMaxWords = 12;
  return words.size() <= kMaxWords &&
         (ContainsPhrase(words, "myself") || ContainsPhrase(words, "ourselves")) &&
         words::ContainsAnyEntry(words, "followup_self_doers");
}

bool AsksWhereThingsStand(const std::vector<std::string_view>& words) {
  static const WordSet& cues = words::List("recap_state_cues");
  static const WordSet& others = words::List("recap_state_words");
  constexpr size_t kMaxWords = 9;
  if (words.empty() || words.size() > kMaxWords) return false;
  bool cue = false;
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string_view w = words[i];
    // "where are we", "where did we get to", "where does that leave us".
    const bool where_we = (w == "where" || w == "wheres") &&
                          std::any_of(words.begin() + static_cast<long>(i), words.end(),
                                      [](std::string_view x) { return x == "we" || x == "us"; });
    if (cues.contains(w) || where_we) {
      cue = true;
    } else if (!others.contains(w)) {
      return false;
    }
  }
  return cue;
}

bool AsksAboutTheConversation(const std::vector<std::string_view>& words) {
  return words::ContainsAnyEntry(words, "recap_conversation_past") &&
         words::ContainsAnyEntry(words, "recap_asks") &&
         !words::ContainsAnyEntry(words, "platform_objects");
}

bool AsksForConversationSummary(const std::vector<std::string_view>& words) {
  // Phrases that are about the conversation by themselves.
  if (words::ContainsAnyEntry(words, "followup_recap_phrases")) {
    return true;
  }
  // A summary word, scoped to this conversation.
  const bool summary = words::ContainsAnyEntry(words, "followup_summary_words");
  const bool scoped = words::ContainsAnyEntry(words, "followup_summary_scope");
  return summary && scoped;
}

// "the monday before the board meeting", "after lunch": the direction at
// `at` is one in time, not in a list.
bool TemporalAt(const std::vector<std::string_view>& words, size_t at) {
  static const WordSet& directions = words::List("followup_time_directions");
  static const WordSet& times = words::List("followup_time_nouns");
  if (at >= words.size() || !(directions.contains(words[at]) || words[at] == "next")) return false;
  for (size_t j = at + 1; j < words.size() && j <= at + 3; ++j) {
    if (times.contains(words[j])) return true;
  }
  return false;
}

namespace {

// `typed` is `word` with one letter missing, one extra, or two adjacent
// letters swapped ("befor", "abvoe"); a different letter is another word
// ("alter" is no "after").
bool IsTypoOf(std::string_view typed, std::string_view word) {
  if (typed == word || word.size() < 5 || typed.size() < 4) return false;
  if (typed.size() + 1 == word.size() || typed.size() == word.size() + 1) {
    const std::string_view longer = typed.size() > word.size() ? typed : word;
    const std::string_view shorter = typed.size() > word.size() ? word : typed;
    for (size_t i = 0; i < longer.size(); ++i) {
      if (longer.substr(0, i) == shorter.substr(0, i) &&
          longer.substr(i + 1) == shorter.substr(i)) {
        return true;
      }
    }
    return false;
  }
  if (typed.size() != word.size()) return false;
  for (size_t i = 0; i + 1 < typed.size(); ++i) {
    if (typed[i] != word[i]) {
      return typed[i] == word[i + 1] && typed[i + 1] == word[i] &&
             typed.substr(i + 2) == word.substr(i + 2);
    }
  }
  return false;
}

// `words` with each direction word typed with a slip spelled right.
std::vector<std::string_view> WithDirectionsSpelled(const std::vector<std::string_view>& words) {
  std::vector<std::string_view> out = words;
  for (std::string_view& w : out) {
    for (std::string_view list : {"relative_before", "relative_after"}) {
      for (const std::string& entry : words::List(list)) {
        if (entry.find(' ') == std::string::npos && IsTypoOf(w, entry)) w = entry;
      }
    }
  }
  return out;
}

// The first word of the first phrase of list `name` in `words` that is no
// direction in time ("3 days before free time runs out"), or npos.
size_t FindEntry(const std::vector<std::string_view>& words, std::string_view name) {
  size_t found = std::string_view::npos;
  for (const std::string& phrase : words::List(name)) {
    const std::vector<std::string_view> parts = Words(phrase);
    for (size_t at = 0; at + parts.size() <= words.size() && at < found; ++at) {
      if (std::equal(parts.begin(), parts.end(), words.begin() + static_cast<long>(at)) &&
          !TemporalAt(words, at)) {
        found = at;
      }
    }
  }
  return found;
}

// "two after X", "3 places above it": how many places away, 1 unless a
// count stands right before the direction.
int CountBefore(const std::vector<std::string_view>& words, size_t at) {
  static const WordSet& units = words::List("relative_units");
  size_t k = at;
  if (k > 0 && units.contains(words[k - 1])) --k;
  if (k == 0) return 1;
  for (const words::Entry& count : words::Entries("relative_counts")) {
    if (count.text == words[k - 1]) return std::stoi(count.value);
  }
  int n = 0;
  const std::string digits(words[k - 1]);
  if (std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(c) != 0; }) &&
      !digits.empty() && digits.size() <= 2) {
    n = std::stoi(digits);
  }
  return n >= 2 ? n : 1;
}

// The direction `words` give and where, before any check of what it is
// asked of.
std::optional<RelativeRef> FindDirection(const std::vector<std::string_view>& words) {
  if (const size_t at = FindEntry(words, "relative_between"); at != std::string_view::npos) {
    return RelativeRef{RelativePosition::kBetween, 1, at};
  }
  // The first of "before" and "after" ("the one after the eta tracker,
  // warn 3 days before free time runs out").
  const size_t before = FindEntry(words, "relative_before");
  size_t after = FindEntry(words, "relative_after");
  // "X's neighbour above": a neighbour with a direction of its own.
  if (after != std::string_view::npos && before != std::string_view::npos &&
      (words[after] == "neighbour" || words[after] == "neighbor")) {
    after = std::string_view::npos;
  }
  if (before != std::string_view::npos && before <= after) {
    return RelativeRef{RelativePosition::kBefore, CountBefore(words, before), before};
  }
  if (after != std::string_view::npos) {
    return RelativeRef{RelativePosition::kAfter, CountBefore(words, after), after};
  }
  // "the one next to it" points; "run the digest agent next" closing the
  // message tells when, not which.
  const auto next = std::find(words.begin(), words.end(), "next");
  if (next != words.end() && next + 1 != words.end() && *(next + 1) != "?" &&
      !TemporalAt(words, static_cast<size_t>(next - words.begin()))) {
    const size_t at = static_cast<size_t>(next - words.begin());
    return RelativeRef{RelativePosition::kAfter, CountBefore(words, at), at};
  }
  return std::nullopt;
}

// A listed item right after the direction ("right after X", "just in
// front of X"), and none named before it.
bool AnchoredOnListedItem(const std::vector<std::string_view>& words, size_t at) {
  for (size_t k = 0; k < at; ++k) {
    if (words[k] == kListedItem) return false;
  }
  for (size_t k = at + 1; k < words.size() && k <= at + 4; ++k) {
    if (words[k] == kListedItem) return true;
  }
  return false;
}

}  // namespace

std::optional<RelativeRef> ReadRelativePosition(const std::vector<std::string_view>& typed) {
  const std::vector<std::string_view> words = WithDirectionsSpelled(typed);
  std::optional<RelativeRef> found = FindDirection(words);
  if (!found) return std::nullopt;
  // A position is asked of an item ("the one", "the row", "whatever sits",
  // "its neighbour"), never of a time ("after lunch", "before friday").
  static const WordSet& items = words::List("relative_items");
  const bool item = std::any_of(words.begin(), words.end(),
                                [&](std::string_view w) { return items.contains(w); });
  if (!item && !AnchoredOnListedItem(words, found->at)) return std::nullopt;
  return found;
}

std::optional<RelativePosition> FindRelativePosition(const std::vector<std::string_view>& words) {
  const std::optional<RelativeRef> found = ReadRelativePosition(words);
  if (!found) return std::nullopt;
  return found->position;
}

namespace {

// Where the request after the topic markers that open `message` at `start`
// begins, or nullopt when no marker opens it there. A later sentence
// (`start` > 0) opens a new topic only with a marker that says so.
std::optional<size_t> AfterTopicMarkers(std::string_view message, size_t start) {
  static const WordSet& opening = words::List("followup_topic_markers");
  static const WordSet& later = words::List("followup_topic_markers_later");
  const WordSet& markers = start == 0 ? opening : later;
  static const WordSet& lead_in = words::List("followup_topic_lead_in");
  bool shifted = false;
  // Markers may pile up: "oh and hey, before that — what's ...".
  for (int round = 0; round < 4; ++round) {
    const std::string_view rest = message.substr(start);
    const std::string normalized = NormalizeText(rest.substr(0, std::min<size_t>(rest.size(), 60)));
    const std::vector<std::string_view> words = Words(normalized);
    size_t skip = 0;
    // In a later sentence "anyway" alone resumes ("I checked. Anyway, can
    // you run it again?"); before a marker that says so it leads in.
    while (skip < words.size() && skip < 4 &&
           (lead_in.contains(words[skip]) ||
            (start > 0 && (words[skip] == "anyway" || words[skip] == "anyways")))) {
      ++skip;
    }
    const std::vector<std::string_view> tail(words.begin() + static_cast<long>(skip), words.end());
    std::string_view found;
    // Only markers that begin with the first word can start the tail.
    for (auto it = tail.empty() ? markers.end() : markers.lower_bound(tail[0]);
         it != markers.end() && std::string_view(*it).starts_with(tail[0]); ++it) {
      if (FindPhrase(tail, *it) == 0 && it->size() > found.size()) found = *it;
    }
    if (found.empty()) break;
    // The new request starts after the clause that holds the marker.
    const std::string lowered = Lowercase(rest);
    size_t at = lowered.find(std::string(found.substr(0, found.find(' '))));
    if (at == std::string::npos) break;
    at += found.size();
    size_t cut = at;
    for (size_t i = at; i < rest.size() && i < at + 25; ++i) {
      const char ch = rest[i];
      // A dash between spaces ends the clause; one inside a word
      // ("weekly-sales-digest") does not.
      const bool dash = ch == '-' && ((i > 0 && rest[i - 1] == ' ') ||
                                      (i + 1 < rest.size() && rest[i + 1] == ' '));
      if (ch == ':' || ch == ',' || ch == '.' || ch == '?' || ch == '!' || dash ||
          static_cast<unsigned char>(ch) == 0xE2) {
        cut = i + (static_cast<unsigned char>(ch) == 0xE2 ? 3 : 1);
        break;
      }
    }
    while (cut < rest.size() && (rest[cut] == ' ' || rest[cut] == ':' || rest[cut] == ',')) ++cut;
    if (cut >= rest.size()) break;
    start += cut;
    shifted = true;
  }
  if (!shifted || start >= message.size()) return std::nullopt;
  return start;
}

}  // namespace

std::optional<size_t> NewTopicStart(std::string_view message) {
  // The marker opens the message or one of its later sentences ("hmm let
  // me check with IT. anyway, unrelated: run payroll-check now").
  size_t start = 0;
  while (start < message.size()) {
    if (std::optional<size_t> after = AfterTopicMarkers(message, start)) return after;
    // The next sentence: after a full stop, a question or exclamation mark
    // followed by a space ("v2.1" ends none), or after a line break.
    size_t next = std::string_view::npos;
    for (size_t end = message.find_first_of(".!?\n", start); end != std::string_view::npos;
         end = message.find_first_of(".!?\n", end + 1)) {
      if (message[end] == '\n' || end + 1 >= message.size() || message[end + 1] == ' ' ||
          message[end + 1] == '\n') {
        next = end + 1;
        break;
      }
    }
    if (next == std::string_view::npos) break;
    while (next < message.size() && (message[next] == ' ' || message[next] == '\n')) ++next;
    start = next;
  }
  return std::nullopt;
}

std::optional<size_t> RequestAfterThanks(std::string_view message) {
  static const WordSet& openers = words::List("followup_thanks_openers");
  size_t i = 0;
  bool thanked = false;
  while (i < message.size()) {
    size_t end = i;
    while (end < message.size() && std::isalpha(static_cast<unsigned char>(message[end])) != 0) {
      ++end;
    }
    if (end == i) break;
    const std::string word = Lowercase(message.substr(i, end - i));
    // "you're great, ...": a contraction opens no thanks.
    if (!openers.contains(word) || (end < message.size() && message[end] == '\'') ||
        message.substr(end, 3) == "\u2019") {
      return std::nullopt;
    }
    thanked = thanked || (word != "ok" && word != "okay" && word != "so");
    i = end;
    while (i < message.size() && message[i] == ' ') ++i;
    if (i < message.size() && (message[i] == '!' || message[i] == '.' || message[i] == ',' ||
                               static_cast<unsigned char>(message[i]) >= 0x80)) {
      break;  // the opening ends at its punctuation (or an emoji)
    }
  }
  if (!thanked || i >= message.size()) return std::nullopt;
  // Past the punctuation and emoji that close the opening.
  while (i < message.size() &&
         (message[i] == '!' || message[i] == '.' || message[i] == ',' || message[i] == ' ' ||
          static_cast<unsigned char>(message[i]) >= 0x80)) {
    ++i;
  }
  if (i >= message.size()) return std::nullopt;
  const std::string rest = NormalizeText(message.substr(i));
  if (Words(rest).size() < 3 || !VerbIsExplicit(message.substr(i))) return std::nullopt;
  return i;
}

std::optional<ReadPart> PartToRead(const IntentRequest& request) {
  if (std::optional<size_t> start = NewTopicStart(request.message)) {
    ReadPart part{request, true};
    part.request.message = request.message.substr(*start);
    part.request.history.clear();
    return part;
  }
  if (std::optional<size_t> start = RequestAfterThanks(request.message)) {
    ReadPart part{request, false};
    part.request.message = request.message.substr(*start);
    return part;
  }
  return std::nullopt;
}

namespace {

const WordSet& WorkVerbs() {
  static const WordSet& words = words::List("followup_work_verbs");
  return words;
}

int NumberTokens(const std::vector<std::string_view>& words) {
  int n = 0;
  for (std::string_view w : words) n += HasDigit(w);
  return n;
}

bool CarriesMaterial(std::string_view message) {
  const size_t colon = message.find(':');
  if (colon != std::string_view::npos &&
      Words(NormalizeText(message.substr(colon + 1))).size() >= 4) {
    return true;
  }
  for (std::string_view quote : {"\"", "“"}) {
    const size_t open = message.find(quote);
    if (open == std::string_view::npos) continue;
    const size_t close = message.find(quote, open + quote.size());
    if (close != std::string_view::npos &&
        Words(NormalizeText(message.substr(open, close - open))).size() >= 4) {
      return true;
    }
  }
  return false;
}

// Words that say the message is about automation or an existing agent.
bool MentionsAutomation(const std::vector<std::string_view>& words) {
  return words::ContainsAnyEntry(words, "followup_automation_words");
}

}  // namespace

bool HasRecurrence(const std::vector<std::string_view>& words) {
  static const WordSet& units = words::List("followup_recurrence_units");
  static const WordSet& adverbs = words::List("followup_recurrence_adverbs");
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string_view next = i + 1 < words.size() ? words[i + 1] : "";
    const std::string_view after = i + 2 < words.size() ? words[i + 2] : "";
    if ((words[i] == "every" || words[i] == "each") &&
        (units.contains(next) || (HasDigit(next) && units.contains(after)))) {
      return true;
    }
    if (words[i] == "whenever") return true;
    if (adverbs.contains(words[i]) &&
        !(i > 0 && OneOf(words[i - 1], {"the", "my", "our", "their", "your", "his", "her", "its",
                                        "to", "check"}))) {
      return true;
    }
  }
  return false;
}

// An event or a date that sets work off each time: "new episode published
// on our RSS", "1st working day of the month", "on move-out date".
bool HasEventTrigger(const std::vector<std::string_view>& words) {
  static const WordSet& arrivals = words::List("followup_event_arrivals");
  for (size_t i = 0; i < words.size(); ++i) {
    if (words[i] == "new") {
      for (size_t j = i + 1; j < words.size() && j <= i + 3; ++j) {
        if (arrivals.contains(words[j])) return true;
      }
    }
    if (words[i] == "day" && i + 2 < words.size() && words[i + 1] == "of" &&
        (words[i + 2] == "month" ||
         (i + 3 < words.size() && OneOf(words[i + 2], {"the", "each", "every"}) &&
          words[i + 3] == "month"))) {
      return true;
    }
    if (words[i] == "on" && i + 3 < words.size() &&
        (words[i + 2] == "date" || words[i + 3] == "date")) {
      return true;
    }
  }
  return false;
}

bool IsStandingInstruction(const std::vector<std::string_view>& words, std::string_view message) {
  if (words.size() < 9 || ContainsPhrase(words, "?") ||
      ContainsAnyPhrase(words, {"skill", "skills"})) {
    return false;
  }
  const bool arrow =
      message.find("->") != std::string_view::npos || message.find("→") != std::string_view::npos;
  // An arrow or an event says when the work runs; "dont send it, just
  // save it" inside it is what the work does, not a change.
  const bool strong = arrow || HasEventTrigger(words);
  if (words::ContainsAnyEntry(words,
                              strong ? "followup_change_markers" : "followup_not_standing")) {
    return false;
  }
  bool trigger = strong || HasRecurrence(words);
  size_t first = 0;
  while (first < words.size() && (words[first] == "ok" || words[first] == "so" ||
                                  words[first] == "and" || words[first] == "please")) {
    ++first;
  }
  if (first < words.size() &&
      (words[first] == "when" || words[first] == "if" || words[first] == "once" ||
       (words[first] == "on" && first + 1 < words.size() && words[first + 1] == "the"))) {
    trigger = true;
  }
  if (!trigger) return false;
  return std::any_of(words.begin(), words.end(),
                     [](std::string_view w) { return WorkVerbs().contains(w); });
}

bool ChangesAnAgentSetting(const std::vector<std::string_view>& words) {
  static const WordSet& filler = words::List("followup_task_filler");
  size_t first = 0;
  while (first < words.size() && filler.contains(words[first])) ++first;
  if (first >= words.size()) return false;
  const std::string_view verb = words[first];
  if (!OneOf(verb, {"change", "adjust", "tweak", "edit", "update", "modify", "move", "shift"})) {
    return false;
  }
  // "change the schedule", "adjust its threshold", "move the send time".
  const std::vector<std::string_view> rest(words.begin() + static_cast<long>(first) + 1,
                                           words.end());
  for (size_t i = 0; i < rest.size() && i < 4; ++i) {
    if (OneOf(rest[i], {"the", "its", "their", "his", "her", "my", "our", "that", "this"})) {
      continue;
    }
    const std::vector<std::string_view> tail(rest.begin() + static_cast<long>(i), rest.end());
    for (std::string_view setting : words::List("agent_settings")) {
      if (FindPhrase(tail, setting) == 0) return true;
    }
    return false;
  }
  return false;
}

bool IsOneShotOrder(const std::vector<std::string_view>& words) {
  static const WordSet& filler = words::List("followup_task_filler");
  static const WordSet& verbs = words::List("one_shot_verbs");
  size_t first = 0;
  while (first < words.size() && filler.contains(words[first])) ++first;
  return first < words.size() && verbs.contains(words[first]) &&
         !words::ContainsAnyEntry(words, "one_shot_blockers") && !HasRecurrence(words);
}

bool IsSelfContainedTask(const std::vector<std::string_view>& words, std::string_view message) {
  if (words.size() < 6 || MentionsAutomation(words)) return false;
  static const WordSet& text_verbs = words::List("followup_text_verbs");
  static const WordSet& filler = words::List("followup_task_filler");
  size_t first = 0;
  while (first < words.size() && filler.contains(words[first])) ++first;
  bool task_verb = first < words.size() && text_verbs.contains(words[first]);
  const size_t colon = message.find(':');
  if (!task_verb && colon != std::string_view::npos) {
    const std::string before = NormalizeText(message.substr(0, colon));
    for (std::string_view w : Words(before)) task_verb = task_verb || text_verbs.contains(w);
  }
  if (task_verb && CarriesMaterial(message)) return true;
  // "give me 5 subject lines", "make 10 quiz questions": a number of things
  // to produce.
  if (task_verb) {
    for (size_t i = first + 1; i < words.size() && i <= first + 2; ++i) {
      if (HasDigit(words[i])) return true;
    }
  }
  // A sum on figures the message gives: "net is 1,840 and VAT 19%, what's the gross?"
  return NumberTokens(words) >= 3 && words::ContainsAnyEntry(words, "followup_sum_phrases");
}

}  // namespace omniforge::intent
