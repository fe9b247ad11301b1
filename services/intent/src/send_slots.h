// The slots of a request to pass something on ("forward the report to
// Dana", "let the 3PL know about the delay", "text the pickers the list"):
// what is passed on and to whom, read from the shape of the sentence (a
// verb of sending or of telling, "to"/"with", two noun phrases in a row),
// not from lists of phrases. Whether a slot is bound by the history is the
// clarify decision's (clarify.h). Pure functions, thread-safe.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace omniforge::intent {

// How a slot was filled.
enum class SlotFill {
  kNone,     // nothing fills it ("forward the demurrage report")
  kNamed,    // a name, an address, a group, "me" ("to Dana", "#ops", "the finance team")
  kPronoun,  // "them", "it", "that": bound only by what came before
  kVague,    // a kind, not a particular one ("the client", "the right people", "the doc")
};

struct SendSlots {
  // The message asks to pass something on or tell someone something.
  bool found = false;
  // A verb of telling ("notify", "ping", "let ... know"), whose object is
  // the recipient and whose content follows "about", "that" or "on".
  bool tells = false;
  SlotFill recipient = SlotFill::kNone;
  // The content words of the recipient and of the object, lowercased.
  std::vector<std::string_view> recipient_words;
  SlotFill object = SlotFill::kNone;
  std::vector<std::string_view> object_words;
};

// Reads `words` (normalized, see text.h); `capitalized` holds the words the
// user wrote with a capital away from a sentence start (names), lowercased.
// The views point into `words`' storage.
SendSlots ReadSendSlots(const std::vector<std::string_view>& words,
                        const std::set<std::string>& capitalized);

// A verb of sending or telling in any form ("sent", "shared", "emailing"),
// for reading whether the history already says who gets something.
bool IsSendVerbForm(std::string_view word);

}  // namespace omniforge::intent
