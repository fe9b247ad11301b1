#include "services/intent/src/send_slots.h"

#include <algorithm>
#include <optional>

#include "libs/words/lists.h"

namespace omniforge::intent {
namespace {

using WordSet = words::WordSet;
using WordList = std::vector<std::string_view>;

// Verbs whose object is what is passed on; the recipient follows "to" or
// comes first of two noun phrases ("text the pickers the list").
const WordSet& PassOnVerbs() {
  static const WordSet& words = words::List("send_pass_on_verbs");
  return words;
}

// Verbs whose object is the recipient; the content follows "about", "on"
// or "that" ("ping the team about the outage").
const WordSet& TellVerbs() {
  static const WordSet& words = words::List("send_tell_verbs");
  return words;
}

// Words that may stand between a verb and its phrases ("send it over to").
const WordSet& Particles() {
  static const WordSet& words = words::List("send_particles");
  return words;
}

const WordSet& Determiners() {
  static const WordSet& words = words::List("send_determiners");
  return words;
}

// Words that carry nothing of who or what ("pls", "now").
const WordSet& Filler() {
  static const WordSet& words = words::List("send_filler");
  return words;
}

// A kind of person, not a particular one ("the client", "the right people").
bool IsVagueRecipientWord(std::string_view w) {
  static const WordSet& words = words::List("send_vague_recipients");
  return words.contains(w);
}

bool IsVagueObjectWord(std::string_view w) {
  static const WordSet& words = words::List("send_vague_objects");
  return words.contains(w);
}

bool IsPronoun(std::string_view w) {
  static const WordSet& words = words::List("send_pronouns");
  return words.contains(w);
}

// The verb at `i`, if it is one: not a noun after a determiner ("the
// message", "a text"), and with what each verb needs around it.
bool IsVerbAt(const WordList& w, size_t i) {
  // Verbs open a clause; "a black friday email" is a noun.
  static const WordSet& before_verb = words::List("send_before_verb");
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
  const size_t end = std::min(to, w.size());
  for (size_t k = from; k < end; ++k) {
    // A determiner with no noun after it is a pronoun ("send it to her").
    const bool pronoun = IsPronoun(w[k]) && (k + 1 == end || Filler().contains(w[k + 1]));
    if (!pronoun &&
        (Determiners().contains(w[k]) || Filler().contains(w[k]) || Particles().contains(w[k]))) {
      continue;
    }
    out.push_back(w[k]);
  }
  return out;
}

SlotFill RecipientFill(const WordList& words, const std::set<std::string>& capitalized) {
  if (words.empty()) return SlotFill::kNone;
  static const WordSet& named = words::List("send_named_recipients");
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
  static const WordSet& ends = words::List("send_phrase_ends");
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
  static const WordSet& links = words::List("send_links");
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
  } else if (const size_t about = PhraseEnd(w, from);
             words::Contains("send_address_verbs", w[v]) && about < w.size() &&
             words::Contains("send_content_openers", w[about])) {
    // "email the landlord about those two": the person, then the content.
    out.recipient_words = ContentOf(w, from, about);
    out.object_words = ContentOf(w, about + 1, PhraseEnd(w, about + 1));
  } else {
    const size_t end = PhraseEnd(w, from);
    const size_t second = SecondPhraseAt(w, from, end);
    static const WordSet& people = words::List("send_people");
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
  static const WordSet& forms = words::List("send_verb_forms");
  return forms.contains(word);
}

}  // namespace omniforge::intent
