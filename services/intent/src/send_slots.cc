#include "services/intent/src/send_slots.h"

#include <algorithm>
#include <optional>

namespace omniforge::intent {
namespace {

using WordSet = std::set<std::string_view>;
using WordList = std::vector<std::string_view>;

// Verbs whose object is what is passed on; the recipient follows "to" or
// comes first of two noun phrases ("text the pickers the list").
const WordSet& PassOnVerbs() {
  static const WordSet words = {"send", "resend",  "forward",  "share",      "post",
                                "mail", "email",   "shoot",    "pass",       "circulate",
                                "text", "dm",      "whatsapp", "distribute", "get",
                                "cc",   "deliver", "message",  "slack",      "drop"};
  return words;
}

// Verbs whose object is the recipient; the content follows "about", "on"
// or "that" ("ping the team about the outage").
const WordSet& TellVerbs() {
  static const WordSet words = {"notify", "ping", "tell", "alert", "loop", "let", "inform"};
  return words;
}

// Words that may stand between a verb and its phrases ("send it over to").
const WordSet& Particles() {
  static const WordSet words = {"over", "along", "on", "out", "back", "across", "round", "around"};
  return words;
}

const WordSet& Determiners() {
  static const WordSet words = {"the",    "a",        "an",         "my",   "our",  "this",
                                "that",   "these",    "those",      "his",  "her",  "their",
                                "todays", "tonights", "yesterdays", "last", "your", "all"};
  return words;
}

// Words that carry nothing of who or what ("pls", "now").
const WordSet& Filler() {
  static const WordSet words = {"pls",   "please",  "plz",  "now", "asap", "too",    "also",
                                "again", "today",   "then", "u",   "you",  "thanks", "thx",
                                "?",     "quickly", "just", "for", "me"};
  return words;
}

// A kind of person, not a particular one ("the client", "the right people").
bool IsVagueRecipientWord(std::string_view w) {
  static const WordSet words = {"client",      "clients", "customer", "customers",  "journalist",
                                "journalists", "trustee", "trustees", "caseworker", "colleague",
                                "colleagues",  "guy",     "person",   "people",     "stakeholders",
                                "stakeholder", "parents", "manager",  "boss",       "vendor",
                                "supplier",    "contact", "partner",  "lead",       "folks",
                                "right",       "usual",   "relevant", "whoever",    "appropriate",
                                "concerned",   "someone", "somebody", "who",        "counsel",
                                "list",        "channel", "group"};
  return words.contains(w);
}

bool IsVagueObjectWord(std::string_view w) {
  static const WordSet words = {"thing",   "stuff",  "doc",  "document", "file",      "details",
                                "info",    "update", "note", "link",     "something", "deck",
                                "message", "one",    "bits", "things",   "documents", "files"};
  return words.contains(w);
}

bool IsPronoun(std::string_view w) {
  static const WordSet words = {"it",    "this", "that", "them", "these",
                                "those", "him",  "her",  "they"};
  return words.contains(w);
}

// The verb at `i`, if it is one: not a noun after a determiner ("the
// message", "a text"), and with what each verb needs around it.
bool IsVerbAt(const WordList& w, size_t i) {
  // Verbs open a clause; "a black friday email" is a noun.
  static const WordSet before_verb = {
      "can",     "could",   "you",      "u",       "pls",    "please", "plz",  "and",  "then",
      "just",    "also",    "now",      "ok",      "okay",   "yes",    "yeah", "yep",  "sure",
      "great",   "cool",    "nice",     "perfect", "thanks", "thx",    "to",   "lets", "go",
      "would",   "will",    "actually", "i",       "we",     "id",     "need", "want", "should",
      "so",      "alright", "kindly",   "dont",    "good",   "fine",   "but",  "k",    "ahead",
      "quickly", "asap",    "pl",       "nope",    "no"};
  const std::string_view word = w[i];
  if (i > 0 && !before_verb.contains(w[i - 1])) return false;
  const std::string_view next = i + 1 < w.size() ? w[i + 1] : "";
  if (next.empty() || next == "is" || next == "was" || next == "?") return false;
  if (word == "let") return std::find(w.begin() + static_cast<long>(i), w.end(), "know") != w.end();
  if (word == "loop") return next == "in";
  if (word == "get") return std::find(w.begin() + static_cast<long>(i), w.end(), "to") != w.end();
  return true;
}

WordList ContentOf(const WordList& w, size_t from, size_t to) {
  WordList out;
  for (size_t k = from; k < to && k < w.size(); ++k) {
    if (Determiners().contains(w[k]) || Filler().contains(w[k]) || Particles().contains(w[k])) {
      continue;
    }
    out.push_back(w[k]);
  }
  return out;
}

SlotFill RecipientFill(const WordList& words, const std::set<std::string>& capitalized) {
  if (words.empty()) return SlotFill::kNone;
  static const WordSet named = {"me",    "us",       "myself",    "team",  "finance",
                                "sales", "hr",       "support",   "legal", "marketing",
                                "ops",   "everyone", "everybody", "staff", "company",
                                "slack", "teams"};
  bool vague = false;
  for (std::string_view w : words) {
    if (w == "who") return SlotFill::kVague;  // "everyone who needs to know"
    vague = vague || IsVagueRecipientWord(w);
  }
  for (std::string_view w : words) {
    if (capitalized.contains(std::string(w)) || w.find('@') != std::string_view::npos) {
      return SlotFill::kNamed;
    }
  }
  if (vague) return SlotFill::kVague;
  if (std::any_of(words.begin(), words.end(),
                  [](std::string_view w) { return named.contains(w); })) {
    return SlotFill::kNamed;
  }
  if (std::all_of(words.begin(), words.end(), IsPronoun)) return SlotFill::kPronoun;
  return SlotFill::kNamed;
}

SlotFill ObjectFill(const WordList& words) {
  if (words.empty()) return SlotFill::kNone;
  if (std::all_of(words.begin(), words.end(), IsPronoun)) return SlotFill::kPronoun;
  if (std::all_of(words.begin(), words.end(), IsVagueObjectWord)) return SlotFill::kVague;
  return SlotFill::kNamed;
}

// Where the phrase opening at `from` ends: a clause of time, purpose or
// manner starts.
size_t PhraseEnd(const WordList& w, size_t from) {
  static const WordSet ends = {"about",   "before", "by",        "when",  "if",   "so",
                               "because", "since",  "until",     "after", "once", "and",
                               "but",     "re",     "regarding", "on",    "that", "at"};
  size_t k = from + 1;
  while (k < w.size() && !ends.contains(w[k])) ++k;
  return std::min(k, w.size());
}

// "notify the team about the delay", "let the 3PL know", "loop in the
// folks from yesterday on the incident reports".
void ReadTell(const WordList& w, size_t v, const std::set<std::string>& capitalized,
              SendSlots& out) {
  out.tells = true;
  size_t from = v + 1;
  if (w[v] == "loop") from = v + 2;
  size_t end = w[v] == "let"
                   ? static_cast<size_t>(
                         std::find(w.begin() + static_cast<long>(v), w.end(), "know") - w.begin())
                   : PhraseEnd(w, from);
  out.recipient_words = ContentOf(w, from, end);
  out.recipient = RecipientFill(out.recipient_words, capitalized);
  size_t content = w[v] == "let" ? end + 1 : end;
  if (content < w.size() && (w[content] == "about" || w[content] == "on" || w[content] == "that" ||
                             w[content] == "re" || w[content] == "regarding")) {
    ++content;
  }
  out.object_words = ContentOf(w, content, PhraseEnd(w, content));
  out.object = ObjectFill(out.object_words);
}

// The first determiner after `from` that opens a second noun phrase
// ("text [the pickers] [the list]"), or npos.
size_t SecondPhraseAt(const WordList& w, size_t from, size_t end) {
  static const WordSet links = {"of", "from", "in", "for", "on", "about", "with", "at", "to"};
  for (size_t k = from + 1; k < end; ++k) {
    if (links.contains(w[k - 1])) return std::string_view::npos;
    if (Determiners().contains(w[k]) && w[k] != "all") return k;
  }
  return std::string_view::npos;
}

// "forward the report to Dana", "share it with the council", "mail the
// chief pilot the details", "post it in #ops".
void ReadPassOn(const WordList& w, size_t v, const std::set<std::string>& capitalized,
                SendSlots& out) {
  size_t marker = std::string_view::npos;
  for (size_t k = v + 1; k < w.size() && marker == std::string_view::npos; ++k) {
    const bool to =
        w[k] == "to" || w[k] == "with" ||
        ((w[k] == "in" || w[k] == "into" || w[k] == "on") && (w[v] == "post" || w[v] == "drop"));
    if (to && k + 1 < w.size()) marker = k;
  }
  size_t from = v + 1;
  while (from < w.size() && Particles().contains(w[from])) ++from;
  if (marker != std::string_view::npos) {
    out.object_words = ContentOf(w, from, marker);
    out.recipient_words = ContentOf(w, marker + 1, PhraseEnd(w, marker + 1));
  } else {
    const size_t end = PhraseEnd(w, from);
    const size_t second = SecondPhraseAt(w, from, end);
    static const WordSet people = {"them", "him", "her", "me", "us"};
    const bool first_is_pronoun = from < w.size() && IsPronoun(w[from]);
    if (from < w.size() && people.contains(w[from])) {  // "email them a reminder"
      out.recipient_words = {w[from]};
      out.object_words = ContentOf(w, from + 1, end);
    } else if (second != std::string_view::npos && !first_is_pronoun) {
      out.recipient_words = ContentOf(w, from, second);
      out.object_words = ContentOf(w, second, PhraseEnd(w, second));
    } else {
      out.object_words = ContentOf(w, from, end);
    }
  }
  out.recipient = RecipientFill(out.recipient_words, capitalized);
  out.object = ObjectFill(out.object_words);
}

}  // namespace

SendSlots ReadSendSlots(const std::vector<std::string_view>& words,
                        const std::set<std::string>& capitalized) {
  SendSlots out;
  for (size_t i = 0; i < words.size() && !out.found; ++i) {
    const bool tell = TellVerbs().contains(words[i]);
    if (!tell && !PassOnVerbs().contains(words[i])) continue;
    if (!IsVerbAt(words, i)) continue;
    out.found = true;
    if (tell) {
      ReadTell(words, i, capitalized, out);
    } else {
      ReadPassOn(words, i, capitalized, out);
    }
  }
  return out;
}

bool IsSendVerbForm(std::string_view word) {
  static const WordSet forms = {
      "send",      "sent",     "sending",   "sends",      "forward",    "forwarded",   "share",
      "shared",    "sharing",  "email",     "emailed",    "emailing",   "mail",        "mailed",
      "notify",    "notified", "ping",      "pinged",     "text",       "texted",      "post",
      "posted",    "cc",       "circulate", "circulated", "distribute", "distributed", "deliver",
      "delivered", "tell",     "told",      "loop",       "forwarding", "notifies",    "goes"};
  return forms.contains(word);
}

}  // namespace omniforge::intent
