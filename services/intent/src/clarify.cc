#include "services/intent/src/clarify.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "libs/words/lists.h"
#include "services/intent/src/assistant_list.h"
#include "services/intent/src/cues.h"
#include "services/intent/src/followup_cues.h"
#include "services/intent/src/send_slots.h"
#include "services/intent/src/text.h"

namespace omniforge::intent {
namespace {

using WordSet = words::WordSet;

// How far back the history is read for what binds a reference.
constexpr size_t kHistoryTurns = 4;
// An assistant turn this long, or with this many figures or list lines,
// has given the user something to point at.
constexpr size_t kSubstantialTurnWords = 25;
constexpr int kSubstantialFigures = 2;
constexpr int kListLines = 2;
// A message this long carries its own material.
constexpr size_t kPayloadWords = 22;
// A yes this long carries a request of its own.
constexpr size_t kYesAndRequestWords = 7;
// At most this many candidates are offered.
constexpr size_t kMaxCandidates = 3;

const WordSet& StopWords() {
  static const WordSet& words = words::List("clarify_stop_words");
  return words;
}

// Words that name no particular agent ("the bot"), so they match none.
const WordSet& GenericAgentWords() {
  static const WordSet& words = words::List("clarify_generic_agent_words");
  return words;
}

bool IsPastForm(std::string_view w) {
  static const WordSet& irregular = words::List("clarify_past_irregular");
  if (irregular.contains(w)) return true;
  // "asked", "moved": five letters will do; "speed", "breed" are no verbs.
  return w.size() >= 5 && w.ends_with("ed") && !w.ends_with("eed") && w != "needed";
}

// Nouns for things the user has seen somewhere else: a document, a list,
// a meeting.
const WordSet& SourceNouns() {
  static const WordSet& words = words::List("clarify_source_nouns");
  return words;
}

// Who may have made or said the thing described ("the rubric *we* agreed").
const WordSet& SubjectWords() {
  static const WordSet& words = words::List("clarify_subjects");
  return words;
}

// Words that ask for a change without saying what it is.
const WordSet& VagueChangeWords() {
  static const WordSet& words = words::List("clarify_vague_change");
  return words;
}

// Words after "that", "to" or "so" that still say nothing of what a new
// agent or skill would do.
const WordSet& VaguePurposeWords() {
  static const WordSet& words = words::List("clarify_vague_purpose");
  return words;
}

const WordSet& TriggerWords() {
  static const WordSet& words = words::List("clarify_triggers");
  return words;
}

// Words that tell of a chore costing time ("our reports take hours", "the
// invoices go out late", "we do it manually"): a problem told with the work
// it concerns is what a new agent should take over.
const WordSet& ChoreTroubleWords() {
  static const WordSet& words = words::List("clarify_chore_trouble");
  return words;
}

// The message tells a problem with the work it concerns: a trouble word
// and, before it, a word that is neither vague nor a stop word ("our
// Monday Notion updates take hours").
bool TellsChoreTrouble(const std::vector<std::string_view>& w) {
  for (size_t i = 1; i < w.size(); ++i) {
    if (!ChoreTroubleWords().contains(w[i])) continue;
    for (size_t j = 0; j < i; ++j) {
      if (w[j].size() > 3 && !VaguePurposeWords().contains(w[j]) && !StopWords().contains(w[j])) {
        return true;
      }
    }
  }
  return false;
}

const WordSet& TimeNouns() {
  static const WordSet& words = words::List("clarify_time_nouns");
  return words;
}

// After "that's": a reaction or a closing, not a reference.
const WordSet& ReactionWords() {
  static const WordSet& words = words::List("clarify_reactions");
  return words;
}

// Emoji and other symbols come through normalization as words of their own.
bool IsAsciiWord(std::string_view w) {
  return std::all_of(w.begin(), w.end(),
                     [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) != 0; });
}

bool SameStem(std::string_view a, std::string_view b) {
  if (a == b) return true;
  if (a.size() < 4 || b.size() < 4) return false;
  auto stem = [](std::string_view w) {
    if (w.ends_with("ies")) return w.substr(0, w.size() - 3);
    if (w.ends_with("es") && w.size() > 5) return w.substr(0, w.size() - 2);
    if (w.ends_with("s")) return w.substr(0, w.size() - 1);
    return w;
  };
  return stem(a) == stem(b) || (a.size() >= 6 && b.size() >= 6 && a.substr(0, 5) == b.substr(0, 5));
}

std::vector<std::string_view> NameWords(std::string_view name) {
  std::vector<std::string_view> out;
  for (std::string_view part : SplitAny(name, "-_ ")) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

// Everything the conditions decide from, read once.
struct Facts {
  const ClarifyInput& in;
  std::string normalized;
  std::vector<std::string_view> words;
  // Words written with a capital letter away from the start of a sentence
  // (names: "Tomasz", "Finance", "IT"), lowercased.
  std::set<std::string> capitalized;
  // The recent history, normalized, with the names of the agents it names.
  std::string history;
  std::vector<std::string_view> history_words;
  std::string last_assistant;  // raw
  // The recent history gives a reference something to stand for: an agent
  // it names, or an assistant turn with figures, a list or a draft.
  bool history_binds = false;
  // The last assistant turn gave something a vague word ("the doc", "the
  // details") can stand for: a list, figures or a long answer.
  bool output_binds = false;
  // The last assistant turn lists two items or more.
  bool last_turn_lists = false;
  // The last assistant turn asks the user something.
  bool last_turn_asks = false;
  // The message carries its own material (after a colon, in quotes, long).
  bool payload = false;
  // The user's agents the message describes, best first, and how well.
  std::vector<std::pair<std::string, int>> described_agents;
  // What is passed on and to whom, when the message asks to pass
  // something on.
  SendSlots send;
  // What a REFERENT condition found, for the question.
  std::string referent;
};

// A word of one of the user's agent names ("silo" of feed-silo-level).
bool InAgentNames(const Facts& f, std::string_view word) {
  return std::any_of(
      f.in.request.agents.begin(), f.in.request.agents.end(),
      [&](const CatalogItem& a) { return Lowercase(a.name).find(word) != std::string::npos; });
}

bool InHistory(const Facts& f, std::string_view word) {
  return std::any_of(f.history_words.begin(), f.history_words.end(),
                     [&](std::string_view h) { return SameStem(h, word); });
}

bool IsDeterminerAt(const Facts& f, size_t i) {
  static const WordSet& det = words::List("clarify_pointing_determiners");
  return i < f.words.size() && det.contains(f.words[i]);
}

int CountFigures(std::string_view text) {
  int figures = 0;
  bool in_number = false;
  for (char ch : text) {
    const bool digit = std::isdigit(static_cast<unsigned char>(ch)) != 0;
    if (digit && !in_number) ++figures;
    in_number = digit || (in_number && (ch == '.' || ch == ','));
  }
  return figures;
}

int CountListLines(std::string_view text) {
  int lines = 0;
  for (std::string_view line : SplitAny(text, "\n")) {
    line = TrimWhitespace(line);
    if (line.empty()) continue;
    const char c = line.front();
    if (c == '-' || c == '*' ||
        (std::isdigit(static_cast<unsigned char>(c)) != 0 && line.size() > 1 &&
         (line[1] == '.' || line[1] == ')'))) {
      ++lines;
    }
  }
  return lines;
}

// A list in prose of short entries ("Confirmed so far: Ana Ruiz, Tom
// Beck, Priya Nair and Leo Grant"), not just a sentence with a comma.
bool ListsShortEntries(std::string_view text) {
  constexpr size_t kMinEntries = 3;
  constexpr size_t kMaxEntryWords = 4;
  const std::vector<std::string> items = ListItems(text);
  return items.size() >= kMinEntries &&
         std::all_of(items.begin(), items.end(), [&](const std::string& item) {
           return Words(NormalizeText(item)).size() <= kMaxEntryWords;
         });
}

// The next `quote` from `from` that opens or closes a quotation: an
// apostrophe between two letters ("don't", "Sarah's") is none.
size_t FindQuote(std::string_view message, std::string_view quote, size_t from) {
  auto letter = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; };
  for (size_t at = message.find(quote, from); at != std::string_view::npos;
       at = message.find(quote, at + quote.size())) {
    if (quote != "'" || at == 0 || at + 1 >= message.size() || !letter(message[at - 1]) ||
        !letter(message[at + 1])) {
      return at;
    }
  }
  return std::string_view::npos;
}

bool HasPayload(std::string_view message, size_t word_count) {
  if (word_count >= kPayloadWords || message.find('\n') != std::string_view::npos) return true;
  const size_t colon = message.find(':');
  if (colon != std::string_view::npos) {
    const std::string after = NormalizeText(message.substr(colon + 1));
    if (Words(after).size() >= 3) return true;
  }
  for (std::string_view quote : {"\"", "“", "'"}) {
    const size_t open = FindQuote(message, quote, 0);
    if (open == std::string_view::npos) continue;
    const size_t close = FindQuote(message, quote, open + quote.size());
    if (close == std::string_view::npos) continue;
    const std::string inside =
        NormalizeText(message.substr(open + quote.size(), close - open - quote.size()));
    if (Words(inside).size() >= 3) return true;
  }
  return false;
}

std::set<std::string> CapitalizedWords(std::string_view message) {
  static const WordSet& calendar = words::List("calendar_names");
  std::set<std::string> out;
  // A line starts a sentence, and so does a bullet or a number heading it
  // ("- Legal review due Friday", "2. Kickoff").
  for (std::string_view line : SplitAny(message, "\n")) {
    bool sentence_start = true;
    for (std::string_view token : SplitAny(line, " \t")) {
      if (token.empty()) continue;
      std::string word;
      for (char ch : token) {
        if (std::isalnum(static_cast<unsigned char>(ch)) != 0)
          word += ch;
        else if (ch == '\'')
          break;  // "Sarah's" -> "Sarah"
      }
      const bool marker = word.empty() || std::all_of(word.begin(), word.end(), [](char ch) {
                            return std::isdigit(static_cast<unsigned char>(ch)) != 0;
                          });
      if (sentence_start && marker) continue;
      if (!word.empty() && !sentence_start &&
          std::isupper(static_cast<unsigned char>(word[0])) != 0 &&
          !calendar.contains(Lowercase(word))) {
        out.insert(Lowercase(word));
      }
      const char last = token.back();
      sentence_start = last == '.' || last == '!' || last == '?' || last == ':';
    }
  }
  return out;
}

std::vector<std::pair<std::string, int>> DescribedAgents(const Facts& f) {
  std::vector<std::pair<std::string, int>> out;
  for (const CatalogItem& agent : f.in.request.agents) {
    int score = 0;
    for (std::string_view part : NameWords(agent.name)) {
      if (part.size() < 3 || GenericAgentWords().contains(part)) continue;
      for (const std::string_view w : f.words) {
        if (w.size() < 3 || StopWords().contains(w) || GenericAgentWords().contains(w)) continue;
        if (SameStem(w, part)) {
          ++score;
          break;
        }
      }
    }
    if (score > 0) out.emplace_back(agent.name, score);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

// Fills `f` where it lives: its word views point into its own strings, so
// a Facts is never copied or moved once read.
void ReadFacts(const ClarifyInput& in, Facts& f) {
  f.normalized = NormalizeText(in.request.message);
  f.words = Words(f.normalized);
  f.capitalized = CapitalizedWords(in.request.message);
  const std::vector<HistoryTurn>& history = in.request.history;
  const size_t begin = history.size() > kHistoryTurns ? history.size() - kHistoryTurns : 0;
  bool agent_named = false;
  for (size_t i = begin; i < history.size(); ++i) {
    const HistoryTurn& turn = history[i];
    f.history += " " + NormalizeText(turn.content);
    std::vector<std::string> named = CatalogItemsInOrder(turn.content, in.request.agents);
    if (auto loose = MatchCatalogItem(turn.content, in.request.agents)) named.push_back(*loose);
    for (const std::string& name : turn.listed_agents) named.push_back(name);
    if (auto it = turn.entities.find("agent_name"); it != turn.entities.end()) {
      named.push_back(it->second);
    }
    for (const std::string& name : named) f.history += " " + NormalizeText(name);
    agent_named = agent_named || !named.empty();
  }
  f.history_words = Words(f.history);
  const auto last_assistant =
      std::find_if(history.rbegin(), history.rend(),
                   [](const HistoryTurn& t) { return t.role == Role::kAssistant; });
  if (last_assistant != history.rend()) f.last_assistant = last_assistant->content;
  const std::string last_normalized = NormalizeText(f.last_assistant);
  const size_t last_words = Words(last_normalized).size();
  f.last_turn_lists = CountListLines(f.last_assistant) >= kListLines ||
                      ListsShortEntries(f.last_assistant) ||
                      (!history.empty() && !history.back().listed_agents.empty());
  f.output_binds = f.last_turn_lists || last_words >= kSubstantialTurnWords ||
                   CountFigures(f.last_assistant) >= kSubstantialFigures;
  f.history_binds = agent_named || f.output_binds;
  // "What can I do for you today?" invites a request; it asks nothing.
  f.last_turn_asks = !history.empty() && history.back().role == Role::kAssistant &&
                     f.last_assistant.find('?') != std::string::npos &&
                     !words::ContainsAnyEntry(Words(last_normalized), "clarify_open_invitations");
  f.payload = HasPayload(in.request.message, f.words.size());
  f.described_agents = DescribedAgents(f);
  f.send = ReadSendSlots(f.words, f.capitalized);
}

bool AboutExistingAgent(Action a) {
  return a == Action::kUpdateAgent || a == Action::kManagePlatform || a == Action::kExecuteTask ||
         a == Action::kQueryInfo;
}

// ------------------------------------------------------------ conditions

// The history names people ("Anya and Pedro", "Tom Reilly"), whom a
// "them" can stand for.
bool HistoryNamesPeople(const Facts& f) {
  const std::vector<HistoryTurn>& history = f.in.request.history;
  const size_t begin = history.size() > kHistoryTurns ? history.size() - kHistoryTurns : 0;
  for (size_t i = begin; i < history.size(); ++i) {
    for (const std::string& word : CapitalizedWords(history[i].content)) {
      if (word.size() >= 3 && IsAsciiWord(word) && !InAgentNames(f, word)) return true;
    }
  }
  return false;
}

bool InAgentDescription(const Facts& f, std::string_view word);

// The message asks: a "?" or a question word first.
bool AsksAQuestion(const Facts& f) {
  return ContainsPhrase(f.words, "?") ||
         (!f.words.empty() && words::Contains("clarify_question_openers", f.words.front()));
}

// A time in any form: "this week's numbers", "these days".
bool IsTimeWord(std::string_view word) {
  const std::string_view singular = word.ends_with("s") ? word.substr(0, word.size() - 1) : word;
  return TimeNouns().contains(word) || TimeNouns().contains(singular) ||
         OneOf(singular, {"day", "hour", "minute"});
}

// "and this letter — can you translate it", "whats wrong with this
// receipt": a thing pointed at that neither the history, the assistant's
// last output nor the user's agents show, whatever else they show. Not
// a thing of a chat ("see what this chat thing is").
bool UnboundThing(Facts& f) {
  const std::vector<std::string_view>& w = f.words;
  for (size_t i = 0; i + 1 < w.size() && !f.output_binds && f.in.action != Action::kConversation;
       ++i) {
    if (!OneOf(w[i], {"this", "these", "those"}) || (i == 0 && w[i + 1] == "is")) continue;
    // A thing: not a word of a clause ("turn this into"), a count ("those
    // two") or material any history can hold ("those changes").
    static const WordSet& documents = words::List("clarify_documents");
    const std::string_view noun = w[i + 1];
    if (noun.size() < 3 || StopWords().contains(noun) || IsTimeWord(noun) ||
        GenericAgentWords().contains(noun) ||
        OneOf(noun, {"one",   "ones",  "agent", "bot",   "skill", "into", "onto", "with", "from",
                     "for",   "about", "over",  "two",   "three", "four", "five", "both", "all",
                     "again", "who",   "which", "whose", "where", "when", "that"}) ||
        (!f.in.request.history.empty() && documents.contains(noun)) || InHistory(f, noun) ||
        InAgentNames(f, noun) || InAgentDescription(f, noun)) {
      continue;
    }
    f.referent = std::string(w[i]) + " " + std::string(noun);
    return true;
  }
  return false;
}

// "add these to the donor agent's list": a plural object, whatever agent
// the message names, with nothing before it.
bool UnboundPluralObject(Facts& f) {
  if (f.history_binds || !f.in.agent_name) return false;
  const std::vector<std::string_view>& w = f.words;
  for (size_t i = 0; i < w.size(); ++i) {
    if (!OneOf(w[i], {"these", "those"})) continue;
    // "add these to ...", "send those over"; not "those who already
    // paid", "those from acme": a description.
    const std::string_view next = i + 1 < w.size() ? w[i + 1] : "";
    if (next.empty() ||
        OneOf(next, {"to", "into", "onto", "over", "up", "out", "please", "pls", "now", "too"})) {
      f.referent = std::string(w[i]);
      return true;
    }
  }
  return false;
}

// "why is that one red", "translate this to german" with nothing in the
// history or the message for it to stand for.
bool UnboundDeictic(Facts& f) {
  if (f.payload) return false;
  const std::vector<std::string_view>& w = f.words;
  if (UnboundThing(f) || UnboundPluralObject(f)) return true;
  if (f.history_binds || f.in.agent_name) return false;
  if (f.in.action == Action::kConversation && !AsksAQuestion(f)) return false;
  bool antecedent = false;  // a noun phrase earlier in the message ("the bot, it's ...")
  for (size_t i = 0; i < w.size(); ++i) {
    const std::string_view word = w[i];
    const std::string_view next = i + 1 < w.size() ? w[i + 1] : "";
    bool deictic = false;
    if (word == "this" || word == "these" || word == "those") {
      // "this week's numbers", "these days", "those who paid".
      deictic = !IsTimeWord(next) && !OneOf(next, {"who", "which", "whose"}) &&
                !(word == "this" && next == "is" && i == 0);
    } else if (word == "that") {
      static const WordSet& after = words::List("clarify_that_pointing");
      // "how long will that take", "does that work": "that" after an
      // auxiliary is what the question is about.
      const bool after_auxiliary =
          i > 0 && OneOf(w[i - 1], {"will", "would", "does", "did", "is", "was", "can", "could",
                                    "should", "might", "has"});
      // "schedule that to go out every monday": the object of a verb that
      // opens the message ("check that all certs are valid" opens a
      // clause; "..., set that up" points back inside the message).
      const bool object =
          i > 0 && i <= 3 && w[i - 1] != "make" &&
          (VerbAction(w[i - 1]).has_value() ||
           OneOf(w[i - 1], {"schedule", "fix", "review", "approve", "sign"})) &&
          (next.empty() ||
           OneOf(next, {"to",    "for",      "on",    "in",   "at",     "every", "each",
                        "again", "out",      "up",    "by",   "before", "after", "with",
                        "into",  "tomorrow", "today", "over", "back",   "off",   "until"}));
      deictic = (next.empty() || after.contains(next) || after_auxiliary || object) &&
                !(next == "one" && i > 0 && w[i - 1] == "the");
    } else if (word == "thats") {
      deictic = !ReactionWords().contains(next) && next != "not" && next != "what";
    } else if (word == "it" || word == "them" || word == "its") {
      // "email them the details" after the assistant named people.
      deictic = !antecedent && !(word == "them" && HistoryNamesPeople(f));
    } else if (word == "here") {
      deictic = next.empty() || next == "?";
    }
    if (deictic) {
      f.referent = std::string(word == "thats" ? "that" : word);
      if (word == "this" || word == "that" || word == "these" || word == "those") {
        if (!next.empty() && next != "?" && !StopWords().contains(next)) {
          f.referent += " " + std::string(next);
        }
      }
      return true;
    }
    if (OneOf(word, {"a", "an", "the", "my", "our", "one", "new", "your"})) {
      antecedent = true;
    }
  }
  return false;
}

// "go with option B" when no options were offered; "the usual setup"
// with no agent to hold it.
bool UnboundShorthand(Facts& f) {
  const std::vector<std::string_view>& w = f.words;
  for (size_t i = 0; i < w.size(); ++i) {
    if (w[i] == "option" && i + 1 < w.size() &&
        (w[i + 1].size() == 1 ||
         std::all_of(w[i + 1].begin(), w[i + 1].end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; })) &&
        !InHistory(f, "option")) {
      f.referent = "option " + std::string(w[i + 1]);
      return true;
    }
    // Figures or a list in the history are no usual: only the history
    // saying what the usual is, or an agent in play, binds it.
    if (w[i] == "usual" && i > 0 && (w[i - 1] == "the" || w[i - 1] == "our") && !f.in.agent_name &&
        !InHistory(f, "usual")) {
      f.referent = "the usual " + std::string(i + 1 < w.size() ? w[i + 1] : "");
      return true;
    }
    // "the thing from before", "like last time", "same as before": the
    // conversation's past, when the history shows nothing of it.
    const bool back_reference =
        (OneOf(w[i], {"from", "as", "like"}) && i + 1 < w.size() &&
         OneOf(w[i + 1], {"before", "earlier", "previously", "yesterday"})) ||
        (w[i] == "last" && i + 1 < w.size() && w[i + 1] == "time" && i > 0 &&
         OneOf(w[i - 1], {"like", "from", "as"}));
    if (back_reference && !f.history_binds && !f.in.agent_name) {
      f.referent = "what you did " + std::string(w[i] == "last" ? "last time" : w[i + 1]);
      return true;
    }
    // "last week's configuration": a version the history and the agents in
    // play do not show. In a request that recurs ("every monday ... last
    // week's ad spend") it is the window each run reads.
    if (w[i] == "last" && i + 2 < w.size() && !HasRecurrence(w) &&
        OneOf(w[i + 1], {"weeks", "months", "years", "quarters", "nights", "times"}) &&
        !StopWords().contains(w[i + 2]) && !InHistory(f, w[i + 2]) &&
        !InAgentDescription(f, w[i + 2])) {
      f.referent = "last " + std::string(w[i + 1].substr(0, w[i + 1].size() - 1)) + "'s " +
                   std::string(w[i + 2]);
      return true;
    }
  }
  return false;
}

// "Sarah's feedback": a person's document the history does not show.
bool UnboundPossessive(Facts& f) {
  const std::string& raw = f.in.request.message;
  for (size_t at = raw.find("'s "); at != std::string::npos; at = raw.find("'s ", at + 1)) {
    size_t start = at;
    while (start > 0 && std::isalpha(static_cast<unsigned char>(raw[start - 1])) != 0) --start;
    if (start == at || std::isupper(static_cast<unsigned char>(raw[start])) == 0) continue;
    const std::string after = NormalizeText(raw.substr(at + 3));
    const std::vector<std::string_view> next = Words(after);
    static const WordSet& documents = words::List("clarify_documents");
    if (!next.empty() && documents.contains(next[0]) && !InHistory(f, next[0])) {
      f.referent = raw.substr(start, at - start) + "'s " + std::string(next[0]);
      return true;
    }
  }
  return false;
}

// "the rubric from the department meeting", "the figures Finance sent over",
// "Sarah's feedback", "whatever the board approved", "the usual setup":
// something only the user has seen, that the history does not show.
bool UnboundDescription(Facts& f) {
  if (f.payload) return false;
  const std::vector<std::string_view>& w = f.words;
  auto unseen = [&](size_t from, size_t to) {  // content words of w[from, to) not in the history
    // The whole name of one of the user's agents ("the stock-alert
    // emails") is no unseen thing.
    const std::vector<std::string_view> span(
        w.begin() + static_cast<long>(std::min(from, w.size())),
        w.begin() + static_cast<long>(std::min(to, w.size())));
    for (const CatalogItem& agent : f.in.request.agents) {
      if (ContainsPhrase(span, NormalizeText(agent.name))) return std::string();
    }
    std::string described;
    for (size_t k = from; k < to && k < w.size(); ++k) {
      if (StopWords().contains(w[k]) || w[k].size() < 3 || IsPastForm(w[k])) continue;
      if (InHistory(f, w[k])) return std::string();
      if (described.empty()) described = std::string(w[k]);
    }
    return described;
  };
  for (size_t i = 0; i < w.size(); ++i) {
    // A description with a maker and a past verb: "the X (that) <someone> <did>".
    if (IsDeterminerAt(f, i)) {
      for (size_t j = i + 2; j < w.size() && j <= i + 6; ++j) {
        const bool past =
            IsPastForm(w[j]) || ((w[j] == "always" || w[j] == "usually") && j + 1 < w.size());
        if (!past) continue;
        const std::string_view subject = w[j - 1];
        const bool has_subject =
            SubjectWords().contains(subject) || f.capitalized.contains(std::string(subject)) ||
            (j >= i + 3 && OneOf(w[j - 2], {"the", "my", "our", "his", "her", "their"})) ||
            (j >= i + 4 && OneOf(w[j - 3], {"the", "my", "our", "his", "her", "their"}));
        if (!has_subject) continue;
        std::string described = unseen(i + 1, j);
        if (!described.empty()) {
          f.referent = "the " + described;
          return true;
        }
        break;
      }
    }
    // "from the department meeting", "in the new guidelines deck", "from my
    // earlier message".
    // "in the email body" says where, not what: "in"/"on" only count before
    // a version the user has seen ("in the new deck", "in our last call").
    const bool from =
        w[i] == "from" && i + 1 < w.size() &&
        OneOf(w[i + 1], {"the", "my", "our", "this", "that", "last", "yesterdays", "todays"});
    const bool in_version =
        (w[i] == "in" || w[i] == "on") && i + 2 < w.size() &&
        (OneOf(w[i + 1], {"my", "our"}) ||
         (w[i + 1] == "the" && words::Contains("clarify_source_versions", w[i + 2])));
    if (from || in_version) {
      for (size_t j = i + 1; j < w.size() && j <= i + 4; ++j) {
        if (!SourceNouns().contains(w[j])) continue;
        std::string described = unseen(i + 1, j + 1);
        if (!described.empty()) {
          f.referent = "the " + std::string(w[j]);
          return true;
        }
        break;
      }
    }
    // "the corrected file", "the approved wording": a version only the user
    // has seen.
    if (w[i] == "the" && i + 2 < w.size() && words::Contains("clarify_version_words", w[i + 1]) &&
        !InHistory(f, w[i + 2]) && !StopWords().contains(w[i + 2])) {
      f.referent = "the " + std::string(w[i + 1]) + " " + std::string(w[i + 2]);
      return true;
    }
  }
  return UnboundShorthand(f) || UnboundPossessive(f);
}

// Acting on `action` changes something in the user's workspace or runs
// something: asking is the safe side when two readings disagree.
bool ChangesSomething(Action action) {
  return action != Action::kQueryInfo && action != Action::kConversation &&
         action != Action::kUnknown;
}

// Words that start what a change is to follow or bring back: "using the
// notes", "like the pilot we ran", "back to how it was", "restore the old
// version", "with the corrections from the trustees".
bool OpensMaterial(const std::vector<std::string_view>& w, size_t i) {
  static const WordSet& markers = words::List("clarify_material_markers");
  if (w[i] == "to" && i > 0 && (w[i - 1] == "back" || w[i - 1] == "switch")) return true;
  if (w[i] == "back" && i > 0 && w[i - 1] == "bring") return true;
  // "switch it to the new targets": a version only the user has seen.
  if (w[i] == "to" && i + 2 < w.size() && w[i + 1] == "the" &&
      words::Contains("clarify_switch_versions", w[i + 2])) {
    return true;
  }
  if (w[i] == "like" && i > 0 && OneOf(w[i - 1], {"id", "would", "i", "we", "d", "wed"})) {
    return false;  // "I'd like an agent"
  }
  return markers.contains(w[i]);
}

// A definite noun phrase: it points at something the user takes as known.
bool OpensDefinite(std::string_view w) {
  static const WordSet& definite = words::List("clarify_definite_openers");
  return definite.contains(w);
}

// Words of a description that say nothing of which thing it is.
bool IsGenericModifier(std::string_view w) {
  static const WordSet& words = words::List("clarify_generic_modifiers");
  return words.contains(w) || StopWords().contains(w) || IsPastForm(w) || w.size() < 3 ||
         !IsAsciiWord(w);
}

// Content words outside the material phrase w[from, to): more than two
// spell out a change of their own.
bool SaysMoreThanMaterial(const Facts& f, size_t from, size_t to) {
  int said = 0;
  for (size_t k = 0; k < f.words.size(); ++k) {
    if (k >= from && k < to) continue;
    const std::string_view word = f.words[k];
    if (IsGenericModifier(word) || VagueChangeWords().contains(word) || InAgentNames(f, word)) {
      continue;
    }
    ++said;
  }
  return said > 2;
}

// "set up manuscript-intake with the categories from the editorial
// retreat", "make it work like the pilot we ran", "put it back to how it
// was before the audit", "restore the old version": a change to follow a
// definite description whose words neither the history nor an agent's
// name shows; with no words of its own ("how it was", "like we agreed"),
// one that nothing in the history could stand for.
bool UnboundMaterial(Facts& f) {
  // The model may read "set up X with ..." as talk; the verb says it changes.
  const std::optional<Action> verb = VerbAction(f.in.request.message, 3);
  if (!(ChangesSomething(f.in.action) || (verb && ChangesSomething(*verb))) || f.payload) {
    return false;
  }
  // A new agent names its own sources ("using the carrier api"); only a
  // likeness ("like the one the Lyceum uses") points at something known.
  const bool creates = f.in.action == Action::kCreateAgent || f.in.action == Action::kCreateSkill;
  const std::vector<std::string_view>& w = f.words;
  for (size_t i = 0; i + 1 < w.size(); ++i) {
    if (!OpensMaterial(w, i) || (creates && w[i] != "like")) continue;
    if (f.send.found && w[i] == "with") continue;  // "share it with the council": a recipient
    size_t start = i + 1;
    if (w[start] == "back" || w[start] == "to" || w[start] == "as") ++start;
    if (start >= w.size() || !OpensDefinite(w[start])) continue;
    std::vector<std::string_view> content;
    bool figure = false;
    for (size_t k = start; k < w.size() && k <= start + 6; ++k) {
      if (OneOf(w[k], {"and", "but", "so", "pls", "please", "because", "for", "instead"})) {
        break;
      }
      figure = figure || std::any_of(w[k].begin(), w[k].end(), [](char c) {
                 return std::isdigit(static_cast<unsigned char>(c)) != 0;
               });
      if (!IsGenericModifier(w[k]) && !InAgentNames(f, w[k])) content.push_back(w[k]);
    }
    // The material is the whole change, not a detail of one spelled out
    // ("exclude planned maintenance windows from the downtime numbers").
    if (figure || SaysMoreThanMaterial(f, i, start + 7)) continue;
    const bool bound = content.empty()
                           ? f.history_binds
                           : std::any_of(content.begin(), content.end(),
                                         [&](std::string_view c) { return InHistory(f, c); });
    if (bound) continue;
    f.referent = content.empty() ? "that" : "the " + std::string(content.front());
    return true;
  }
  return false;
}

// "cancel the booking" after a list of three bookings.
bool OneOfSeveral(Facts& f) {
  if (!f.last_turn_lists && CountFigures(f.last_assistant) < kSubstantialFigures) return false;
  if (CountFigures(f.in.request.message) > 0 || FindOrdinal(f.in.request.message)) return false;
  const std::string listed = NormalizeText(f.last_assistant);
  const std::vector<std::string_view> listed_words = Words(listed);
  const std::vector<std::string_view>& w = f.words;
  for (size_t i = 0; i + 1 < w.size(); ++i) {
    if (w[i] != "the") continue;
    const std::string_view noun = w[i + 1];
    if (noun.size() < 4 || noun.ends_with("s") || noun == "list") continue;
    const std::string plural = std::string(noun) + "s";
    if (std::find(listed_words.begin(), listed_words.end(), plural) != listed_words.end()) {
      f.referent = std::string(noun);
      return true;
    }
  }
  return false;
}

// "Kick off the weekly numbers", "pause the alerts": an agent described,
// none named, and several of the user's agents fit (or none does and
// nothing in the history says which).
bool NamesAgentExactly(const Facts& f);

// The last sentence of `text` that holds a word.
std::string_view LastSentence(std::string_view text) {
  std::string_view last;
  for (std::string_view sentence : SplitAny(text, ".!?\n")) {
    if (!TrimWhitespace(sentence).empty()) last = sentence;
  }
  return last;
}

// "whats wrong w this one", "update its sender address" right after the
// assistant named several of the user's agents: "it" could be any of them.
bool PronounOverList(Facts& f) {
  // "its" as written; "it's clear now" is "it is".
  const std::string lowered = Lowercase(f.in.request.message);
  const bool possessive = ContainsPhrase(f.words, "its") &&
                          lowered.find("it's") == std::string::npos &&
                          lowered.find("it\u2019s") == std::string::npos;
  if (!(ContainsAnyPhrase(f.words, {"it", "this one", "that one"}) || possessive) ||
      !f.described_agents.empty() || f.payload || f.last_assistant.empty() ||
      NamesAgentExactly(f)) {
    return false;
  }
  // About one of them: an action on an agent or a question ("whats wrong w
  // this one"), not talk ("thanks, it's clear now").
  if (!(AboutExistingAgent(f.in.action) || AsksAQuestion(f))) return false;
  if (f.in.agent_name && f.in.reference != Reference::kPronoun) return false;
  const std::vector<HistoryTurn>& history = f.in.request.history;
  if (history.empty() || history.back().role != Role::kAssistant) return false;
  // Several agents named, and the turn does not settle on one in its last
  // sentence ("Only absence-alert-text runs in the morning").
  return CatalogItemsInOrder(f.last_assistant, f.in.request.agents).size() >= 2 &&
         CatalogItemsInOrder(LastSentence(f.last_assistant), f.in.request.agents).size() != 1;
}

bool AgentUnresolved(Facts& f) {
  if (f.in.agent_name || !AboutExistingAgent(f.in.action) || f.payload) return false;
  const std::vector<std::string_view>& w = f.words;
  // Only a definite description ("the digest", "my reminders") points at
  // an agent; "draft a notice" asks for a new thing.
  bool definite_match = false;
  for (size_t i = 0; i + 1 < w.size(); ++i) {
    if (!OneOf(w[i], {"the", "my", "our", "that", "this"})) continue;
    for (size_t j = i + 1; j < w.size() && j <= i + 3; ++j) {
      for (const auto& [name, score] : f.described_agents) {
        for (std::string_view part : NameWords(name)) {
          if (!GenericAgentWords().contains(part) && SameStem(part, w[j])) definite_match = true;
        }
      }
    }
  }
  if (definite_match) {
    const auto& d = f.described_agents;
    if (d.size() >= 2 && d[0].second == d[1].second) return true;
    return false;  // one fits: ReadFacts' caller resolves it
  }
  // "turn off the bot", "kick it off" with no agent in sight.
  const bool agent_word = ContainsAnyPhrase(w, {"the bot", "the agent", "that bot", "that agent"});
  const bool pronoun = ContainsPhrase(w, "it") || ContainsPhrase(w, "that one");
  const bool runs = words::ContainsAnyEntry(w, "clarify_run_verbs");
  const bool about_agent =
      agent_word || (pronoun && (f.in.action == Action::kUpdateAgent ||
                                 f.in.action == Action::kManagePlatform || runs));
  if (!f.history_binds && about_agent && f.described_agents.empty()) return true;
  // A change, a run or a lifecycle step needs an agent: with several the
  // user has, none named or described and none in the history, ask which
  // ("change the schedule", "pause it over the break").
  static const WordSet& lifecycle = words::List("lifecycle_verbs");
  const bool needs_agent =
      f.in.action == Action::kUpdateAgent || (f.in.action == Action::kExecuteTask && runs) ||
      (f.in.action == Action::kManagePlatform &&
       std::any_of(w.begin(), w.end(),
                   [](std::string_view word) { return lifecycle.contains(word); }));
  return needs_agent && !f.history_binds && f.described_agents.empty() &&
         f.in.request.agents.size() >= 2;
}

// The history already says who gets it: a send in any form with "to" or
// "with" after it ("shall I share them with the depot supervisors?"), or
// an address.
// A verb whose object is who gets the message ("message volunteers",
// "email the parents", "notifies customers"), in any form.
bool AddressesSomeone(std::string_view w) {
  for (std::string_view verb :
       {"message", "email", "text", "notif", "ping", "remind", "alert", "contact", "tell"}) {
    if (w.starts_with(verb) && w.size() <= verb.size() + 3) return true;
  }
  return false;
}

bool HistoryNamesRecipient(const Facts& f) {
  const std::vector<std::string_view>& h = f.history_words;
  for (size_t i = 0; i < h.size(); ++i) {
    if (h[i].find('@') != std::string_view::npos) return true;
    if (AddressesSomeone(h[i])) {
      size_t j = i + 1;
      while (j < h.size() && OneOf(h[j], {"the", "all", "our", "your", "each", "every"})) ++j;
      if (j < h.size() && h[j].size() >= 4 && !StopWords().contains(h[j]) && IsAsciiWord(h[j])) {
        return true;
      }
    }
    if (!IsSendVerbForm(h[i])) continue;
    for (size_t j = i + 1; j < h.size() && j <= i + 6; ++j) {
      if (h[j] == "to" || h[j] == "with") return true;
    }
  }
  return false;
}

// Words of the agents in play (the one resolved, the ones described):
// their names and descriptions say what they send and to whom.
bool InAgentDescription(const Facts& f, std::string_view word) {
  for (const CatalogItem& agent : f.in.request.agents) {
    const bool in_play = (f.in.agent_name && *f.in.agent_name == agent.name) ||
                         std::any_of(f.described_agents.begin(), f.described_agents.end(),
                                     [&](const auto& d) { return d.first == agent.name; });
    if (!in_play) continue;
    const std::string text = NormalizeText(agent.name + " " + agent.description);
    for (std::string_view w : Words(text)) {
      if (SameStem(w, word)) return true;
    }
  }
  return false;
}

// The agent in play sends to its own recipients ("Sends payslips to
// staff"): a send through it needs no recipient.
bool AgentInPlaySends(const Facts& f) {
  for (const CatalogItem& agent : f.in.request.agents) {
    const bool in_play =
        (f.in.agent_name && *f.in.agent_name == agent.name) ||
        (f.described_agents.size() == 1 && f.described_agents[0].first == agent.name);
    if (!in_play) continue;
    const std::string text = NormalizeText(agent.name + " " + agent.description);
    const std::vector<std::string_view> words = Words(text);
    if (std::any_of(words.begin(), words.end(), [](std::string_view w) {
          return IsSendVerbForm(w) || w == "sends" || w == "emails" || w == "texts" ||
                 w == "posts" || w == "notifies" || w == "sender" || w == "mailer";
        })) {
      return true;
    }
  }
  return false;
}

// A send that changes nothing yet: new agents and skills say who gets what
// each time in their own instructions.
bool SendInScope(const Facts& f) {
  return f.send.found && f.in.action != Action::kCreateAgent &&
         f.in.action != Action::kCreateSkill &&
         !IsStandingInstruction(f.words, f.in.request.message) && !f.payload;
}

// "forward the demurrage report", "get it to the right people", "send it
// to the client", "ping them": no recipient, or one that says what kind of
// person but not which, that neither the history nor the agent's own
// description names.
bool RecipientUnclear(Facts& f) {
  if (!SendInScope(f)) return false;
  const std::string& raw = f.in.request.message;
  if (raw.find('@') != std::string::npos || raw.find('#') != std::string::npos) return false;
  const std::vector<std::string_view>& who = f.send.recipient_words;
  switch (f.send.recipient) {
    case SlotFill::kNamed:
      return false;
    case SlotFill::kPronoun:  // "them": the people the history names
      return !HistoryNamesRecipient(f) && !HistoryNamesPeople(f) && !AgentInPlaySends(f);
    case SlotFill::kVague:
      return std::none_of(who.begin(), who.end(), [&](std::string_view w) {
        return w.size() >= 4 && !OneOf(w, {"right", "usual", "people", "folks"}) && InHistory(f, w);
      });
    case SlotFill::kNone:
      if (f.send.tells) return false;
      return !HistoryNamesRecipient(f) && !AgentInPlaySends(f);
  }
  return false;
}

// "share the deck", "text the pickers the thing", "let the 3PL know",
// "ping the team about it": what to pass on is missing, or a word that
// could be anything, and the history shows nothing it could be.
bool ObjectUnclear(Facts& f) {
  // A word that could be anything is bound by what the assistant gave or by
  // the same word in the history, not by an agent named somewhere.
  const bool bound = f.send.object == SlotFill::kVague ? f.output_binds : f.history_binds;
  if (!SendInScope(f) || bound) return false;
  const std::vector<std::string_view>& what = f.send.object_words;
  switch (f.send.object) {
    case SlotFill::kNamed:
      return false;
    case SlotFill::kNone:
      // "share with the whole department": nothing to pass on, unless an
      // agent in play makes it.
      if (!f.send.tells && (f.in.agent_name || !f.described_agents.empty())) return false;
      f.referent = f.send.tells ? "what to tell them" : "what to send";
      return true;
    case SlotFill::kPronoun:
      if (f.in.agent_name) return false;  // "it": what the named agent makes
      [[fallthrough]];
    case SlotFill::kVague:
      for (std::string_view w : what) {
        if (InHistory(f, w) || InAgentDescription(f, w)) return false;
      }
      f.referent = what.empty() ? "it" : std::string(what.front());
      return true;
  }
  return false;
}

// "new agent for Q1 planning", "build me a skill": a request for a new
// agent or skill, whatever the model made of the rest.
bool AsksForNewAgent(const std::vector<std::string_view>& w) {
  static const WordSet& asks = words::List("clarify_new_asks");
  // "could we get an AI thing going", "I'd like an agent for ...".
  static const WordSet& wants = words::List("clarify_new_wants");
  static const WordSet& things = words::List("clarify_new_things");
  for (size_t i = 0; i < w.size(); ++i) {
    const bool wants_one = wants.contains(w[i]) && i + 1 < w.size() &&
                           (w[i + 1] == "a" || w[i + 1] == "an" || w[i + 1] == "another");
    if (!asks.contains(w[i]) && !wants_one) continue;
    for (size_t j = i + 1; j < w.size() && j <= i + 4; ++j) {
      if (things.contains(w[j])) return true;
    }
  }
  return false;
}

// The message spells out the agent name the analysis found, not only
// words of it ("new agent for the drivers" beside driver-checkin).
bool NamesAgentExactly(const Facts& f) {
  return f.in.agent_name &&
         Lowercase(f.in.request.message).find(Lowercase(*f.in.agent_name)) != std::string::npos;
}

// "make me an agent for the accounts team", "skill for invoices": a new
// agent or skill with nothing said of what it should do.
// Words from `from` on that say something: not vague, not stop words.
size_t ContentWordsAfter(const std::vector<std::string_view>& w, size_t from) {
  size_t count = 0;
  for (size_t k = from; k < w.size(); ++k) {
    if (!VaguePurposeWords().contains(w[k]) && !StopWords().contains(w[k]) && w[k].size() >= 3 &&
        !words::Contains("clarify_vague_areas", w[k])) {
      ++count;
    }
  }
  return count;
}

// A word of work a new agent does each time (clarify_work_words, with its
// -s, -ed, -ing and -er forms, or a verb of the lexicon other than one of
// starting, running or creating).
bool DoesWork(std::string_view word) {
  static const WordSet& work = words::List("clarify_work_words");
  if (work.contains(word)) return true;
  for (std::string_view suffix : {"s", "es", "ed", "d", "ing", "er", "ers"}) {
    if (word.size() > suffix.size() + 2 && word.ends_with(suffix) &&
        work.contains(word.substr(0, word.size() - suffix.size()))) {
      return true;
    }
  }
  const std::optional<Action> verb = VerbAction(word);
  const std::string_view base = word.ends_with("s") ? word.substr(0, word.size() - 1) : word;
  return verb && *verb != Action::kCreateAgent && *verb != Action::kCreateSkill &&
         *verb != Action::kQueryInfo &&
         !OneOf(base, {"run", "set", "make", "do", "start", "trigger", "go", "fire", "kick"});
}

bool PurposeMissing(Facts& f) {
  if (f.in.action != Action::kCreateAgent && f.in.action != Action::kCreateSkill &&
      !(AsksForNewAgent(f.words) && !NamesAgentExactly(f))) {
    return false;
  }
  // "set that up" after the assistant described what it would do.
  if (f.in.reference == Reference::kCorrection ||
      (f.in.reference == Reference::kPronoun && f.output_binds)) {
    return false;
  }
  const std::vector<std::string_view>& w = f.words;
  if (f.payload || w.size() >= 16) return false;
  if (TellsChoreTrouble(w)) return false;
  if (f.in.request.message.find("->") != std::string::npos ||
      f.in.request.message.find("→") != std::string::npos) {
    return false;
  }
  // When it runs ("runs every morning", "whenever a new shipment is
  // booked") is no purpose without work to do each time.
  bool works = false;
  for (size_t at = 0; at < w.size() && !works; ++at) {
    // "whenever a new shipment is booked": what sets it off, not its work.
    if (at > 0 && OneOf(w[at - 1], {"is", "are", "was", "were", "gets", "get", "got"})) continue;
    works = DoesWork(w[at]);
  }
  const std::map<std::string, std::string> entities = ExtractEntities(f.in.request.message);
  if (entities.contains("schedule") && works) return false;
  for (size_t i = 0; i < w.size(); ++i) {
    if (TriggerWords().contains(w[i]) && works) return false;
    const bool opens_clause = OneOf(w[i], {"that", "which", "who", "to", "so", "and"});
    // "a skill that does the spreadsheet side of things": an area, no job.
    if (opens_clause && ContentWordsAfter(w, i + 1) <= 2 &&
        words::ContainsAnyEntry(std::vector<std::string_view>(w.begin() + i + 1, w.end()),
                                "clarify_vague_areas")) {
      continue;
    }
    if (opens_clause) {
      for (size_t j = i + 1; j < w.size() && j <= i + 4; ++j) {
        if (VaguePurposeWords().contains(w[j]) || TriggerWords().contains(w[j]) ||
            w[j].size() < 3 || w[j] == "?" || w[j] == "new") {
          continue;
        }
        if (i > 0 && w[i] == "and" &&
            !LeadingVerb(std::vector<std::string_view>(w.begin() + i + 1, w.end())))
          break;
        return false;  // "that emails", "to read docx files"
      }
    }
    // "an agent for chasing invoices"; "for handling contracts", "for
    // managing the shop" say no more than "for contracts".
    if (w[i] == "for" && i + 2 < w.size() && w[i + 1].ends_with("ing") && w[i + 1].size() > 5 &&
        !w[i + 1].ends_with("thing") && !StopWords().contains(w[i + 2])) {
      const std::string base(w[i + 1].substr(0, w[i + 1].size() - 3));
      if (!VaguePurposeWords().contains(base) && !VaguePurposeWords().contains(base + "e")) {
        return false;
      }
    }
  }
  return true;
}

// The user told what is wrong a turn or two ago ("the onboarding bot sends
// day 3 email with a broken link"): "fix it" then says what to change.
bool UserSaidWhatIsWrong(const Facts& f) {
  const std::vector<HistoryTurn>& history = f.in.request.history;
  const size_t begin = history.size() > kHistoryTurns ? history.size() - kHistoryTurns : 0;
  for (size_t i = begin; i < history.size(); ++i) {
    // A statement, not a question about the agent ("how many stops did it plan?").
    if (history[i].role != Role::kUser || absl::StrContains(history[i].content, "?")) continue;
    const std::string text = NormalizeText(history[i].content);
    const std::vector<std::string_view> words = Words(text);
    const auto said = std::count_if(words.begin(), words.end(), [](std::string_view w) {
      return !StopWords().contains(w) && !VagueChangeWords().contains(w) && w.size() >= 3;
    });
    if (said >= 4) return true;
  }
  return false;
}

// "the timesheet chaser needs a rework", "change the schedule of the
// weekly recap": a change with nothing said of what changes.
bool ChangeMissing(Facts& f) {
  static const WordSet& change_stems = words::List("clarify_change_stems");
  // "redo" asks for a change only of a change: "redo the thing from
  // before" on a run is the run again.
  const bool change_verb =
      f.in.agent_name && std::any_of(f.words.begin(), f.words.end(), [](std::string_view w) {
        return !w.starts_with("redo") &&
               std::any_of(change_stems.begin(), change_stems.end(),
                           [&](std::string_view stem) { return w.starts_with(stem); });
      });
  if ((f.in.action != Action::kUpdateAgent && !change_verb) || f.payload) return false;
  if (UserSaidWhatIsWrong(f)) return false;
  if (f.in.reference == Reference::kCorrection || f.in.reference == Reference::kConfirmation) {
    return false;
  }
  if (CountFigures(f.in.request.message) > 0) return false;
  std::set<std::string_view> agent_words;
  if (f.in.agent_name) {
    for (std::string_view part : NameWords(*f.in.agent_name)) agent_words.insert(part);
  }
  for (const auto& [name, score] : f.described_agents) {
    for (std::string_view part : NameWords(name)) agent_words.insert(part);
  }
  for (const std::string_view word : f.words) {
    if (word == "before" || word == "by" || word == "until") break;  // a deadline, not a change
    if (StopWords().contains(word) || VagueChangeWords().contains(word) || word.size() < 3 ||
        !IsAsciiWord(word)) {
      continue;
    }
    const bool of_agent = std::any_of(agent_words.begin(), agent_words.end(),
                                      [&](std::string_view a) { return SameStem(a, word); });
    if (of_agent) continue;
    return false;
  }
  return true;
}

struct Condition {
  std::string_view name;
  MissingSlot slot;
  bool (*holds)(Facts& facts);
};

// Tried in order; every condition that holds adds its slot once.
constexpr Condition kConditions[] = {
    {.name = "unbound_deictic", .slot = MissingSlot::kReferent, .holds = &UnboundDeictic},
    {.name = "unbound_description", .slot = MissingSlot::kReferent, .holds = &UnboundDescription},
    {.name = "unbound_material", .slot = MissingSlot::kReferent, .holds = &UnboundMaterial},
    {.name = "agent_unresolved", .slot = MissingSlot::kAgent, .holds = &AgentUnresolved},
    {.name = "pronoun_over_list", .slot = MissingSlot::kAgent, .holds = &PronounOverList},
    {.name = "one_of_several", .slot = MissingSlot::kObject, .holds = &OneOfSeveral},
    {.name = "object_unclear", .slot = MissingSlot::kObject, .holds = &ObjectUnclear},
    {.name = "recipient_unclear", .slot = MissingSlot::kRecipient, .holds = &RecipientUnclear},
    {.name = "purpose_missing", .slot = MissingSlot::kPurpose, .holds = &PurposeMissing},
    {.name = "change_missing", .slot = MissingSlot::kChange, .holds = &ChangeMissing},
};

// A reply to the assistant (a yes, a no, a pick, a recap, a correction)
// settles what was open; asking again would loop.
bool RepliesToAssistant(const Facts& f) {
  switch (f.in.reference) {
    case Reference::kConfirmation:
    case Reference::kDecline:
    case Reference::kOrdinal:
    case Reference::kRecap:
      return true;
    default:
      break;
  }
  // A short answer naming an agent to the assistant's question.
  return f.last_turn_asks && f.in.agent_name && f.words.size() <= 8;
}

std::string Capitalized(std::string text) {
  if (!text.empty()) text[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[0])));
  return text;
}

}  // namespace

std::string ClarifyQuestion(const std::vector<MissingSlot>& missing,
                            const std::vector<std::string>& candidates, Action action) {
  std::vector<std::string> parts;
  for (MissingSlot slot : missing) {
    switch (slot) {
      case MissingSlot::kReferent:
        parts.emplace_back("what are you referring to");
        break;
      case MissingSlot::kPurpose:
        parts.emplace_back(action == Action::kCreateSkill ? "what should the skill do"
                                                          : "what should the new agent do");
        break;
      case MissingSlot::kObject:
        parts.emplace_back(action == Action::kExecuteTask ? "which one should I use"
                                                          : "which one do you mean");
        break;
      case MissingSlot::kRecipient:
        parts.emplace_back("who should get it");
        break;
      case MissingSlot::kAgent:
        parts.emplace_back(action == Action::kExecuteTask   ? "which agent should I run"
                           : action == Action::kUpdateAgent ? "which agent should I change"
                                                            : "which agent do you mean");
        break;
      case MissingSlot::kChange:
        parts.emplace_back("what should change");
        break;
    }
  }
  // "X, and Y?"; "X, Y, and Z?".
  std::string joined;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) joined += i + 1 == parts.size() ? ", and " : ", ";
    joined += parts[i];
  }
  std::string question = Capitalized(joined) + "?";
  if (!candidates.empty()) {
    const bool purpose = !missing.empty() && missing.front() == MissingSlot::kPurpose;
    std::string offered;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (i > 0) offered += i + 1 == candidates.size() ? (purpose ? " and " : " or ") : ", ";
      offered += candidates[i];
    }
    // A new agent or skill is none of the user's agents; the related ones
    // are offered as what exists already.
    question += purpose ? " You already have " + offered + ", if one of them comes close."
                        : " It could be " + offered + ".";
  }
  return question;
}

ClarifyDecision DecideClarification(const ClarifyInput& input) {
  ClarifyDecision decision;
  Facts f{.in = input};
  ReadFacts(input, f);
  if (!input.agent_name && AboutExistingAgent(input.action) && !f.payload &&
      f.described_agents.size() == 1) {
    // One agent fits the description ("has the report gone out?").
    const std::vector<std::string_view>& w = f.words;
    for (size_t i = 0; i + 1 < w.size() && !decision.resolved_agent; ++i) {
      if (!OneOf(w[i], {"the", "my", "our"})) continue;
      for (std::string_view part : NameWords(f.described_agents[0].first)) {
        if (!GenericAgentWords().contains(part) && SameStem(part, w[i + 1])) {
          decision.resolved_agent = f.described_agents[0].first;
        }
      }
    }
  }
  // A yes that goes on to a request of its own ("yes, change X using the
  // notes from the committee meeting") may still point at something unseen.
  const bool yes_and_more =
      input.reference == Reference::kConfirmation && f.words.size() >= kYesAndRequestWords;
  if (RepliesToAssistant(f) && !yes_and_more) return decision;
  Clarification& c = decision.clarification;
  for (const Condition& condition : kConditions) {
    if (yes_and_more && condition.slot != MissingSlot::kReferent) continue;
    if (!condition.holds(f)) continue;
    decision.conditions.push_back(condition.name);
    if (std::find(c.missing.begin(), c.missing.end(), condition.slot) == c.missing.end()) {
      c.missing.push_back(condition.slot);
    }
  }
  if (c.missing.empty()) return decision;
  c.needed = true;
  for (const auto& [name, score] : f.described_agents) {
    if (c.candidates.size() < kMaxCandidates) c.candidates.push_back(name);
  }
  if (c.candidates.empty() &&
      std::find(c.missing.begin(), c.missing.end(), MissingSlot::kAgent) != c.missing.end()) {
    for (const CatalogItem& agent : input.request.agents) {
      if (c.candidates.size() < kMaxCandidates) c.candidates.push_back(agent.name);
    }
  }
  decision.question = ClarifyQuestion(c.missing, c.candidates, input.action);
  return decision;
}

namespace {

// An LLM answer carries the model's own clarify decision (`model`, with its
// question). For an action that changes something the conservative reading
// wins: ask when either asks, about what both found missing (the local
// layers' slots first). For a look or a talk the model's reading stands.
void MergeModelDecision(const IntentRequest& request, Action action, const Clarification& model,
                        const std::string& model_question, ClarifyDecision& local) {
  if (!model.needed) {
    if (!ChangesSomething(action)) {
      local.clarification = {};
      local.question.clear();
      local.conditions.clear();
    }
    return;
  }
  Clarification& c = local.clarification;
  const bool local_asked = c.needed;
  if (!ChangesSomething(action)) c.missing.clear();
  for (MissingSlot slot : model.missing) {
    if (std::find(c.missing.begin(), c.missing.end(), slot) == c.missing.end()) {
      c.missing.push_back(slot);
    }
  }
  c.needed = true;
  const bool asks_agent =
      std::find(c.missing.begin(), c.missing.end(), MissingSlot::kAgent) != c.missing.end();
  for (size_t i = 0;
       asks_agent && c.candidates.empty() && i < request.agents.size() && i < kMaxCandidates; ++i) {
    c.candidates.push_back(request.agents[i].name);
  }
  local.conditions.emplace_back("model_asks");
  if (local_asked && ChangesSomething(action)) return;  // the local question names its slots
  if (c.missing.empty()) c.missing.push_back(MissingSlot::kReferent);  // asked, unsaid why
  local.question = !model_question.empty() && c.candidates.empty()
                       ? model_question
                       : ClarifyQuestion(c.missing, c.candidates, action);
}

}  // namespace

void ApplyClarification(const IntentRequest& whole, IntentAnalysis& analysis) {
  // "ok thanks. btw what's this charge for??": what the request needs is
  // weighed on the part the analysis read.
  const std::optional<ReadPart> part = PartToRead(whole);
  const IntentRequest& request = part ? part->request : whole;
  const auto agent = analysis.entities.find("agent_name");
  ClarifyInput input{.request = request,
                     .action = analysis.action,
                     .agent_name = agent == analysis.entities.end()
                                       ? std::nullopt
                                       : std::optional<std::string>(agent->second),
                     .reference = analysis.reference};
  ClarifyDecision decision = DecideClarification(input);
  // The LLM saw the workspace too: an agent it left out stays out, and its
  // own clarify decision is weighed with the local one.
  if (analysis.source == Source::kLlm) {
    MergeModelDecision(request, analysis.action, analysis.clarification,
                       analysis.clarifying_question, decision);
  } else if (decision.resolved_agent) {
    analysis.entities["agent_name"] = *decision.resolved_agent;
  }
  analysis.clarification = std::move(decision.clarification);
  if (!analysis.clarification.needed) return;
  analysis.is_ambiguous = true;
  analysis.clarifying_question = std::move(decision.question);
  std::string conditions;
  for (std::string_view name : decision.conditions) {
    conditions += (conditions.empty() ? "" : ", ") + std::string(name);
  }
  analysis.reasoning += " Asks first [clarify: " + conditions + "].";
}

}  // namespace omniforge::intent
