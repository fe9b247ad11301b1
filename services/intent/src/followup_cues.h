// Cues of follow-up messages that only make sense after something the
// assistant said: a correction of the last request and the value it
// corrects to, an edit riding on a yes ("yes, but at 9am"), a refusal of
// an offer, a request for a recap, a position relative to an item of a
// list ("the one listed before X"). Each reads one message and knows
// nothing of the history; the reference rules (rules.h) decide with the
// history. Pure functions, thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "services/intent/src/model.h"

namespace omniforge::intent {

// "sorry, I meant the March report", "typo, 5 times not 3", "Janet Kim,
// not Ortiz": a short message that takes back part of the last request.
bool IsCorrection(const std::vector<std::string_view>& words);

// "not the Dublin warehouse, Cork", "Priyanka not Priya", "no wait, flat
// 4D": a short message that replaces a value the previous request holds
// (`previous`: the normalized words of that request and of the
// assistant's answer to it) with a new one, by a contrast ("X, not Y"
// where Y is in `previous`) or after a retraction ("no", "wait", "oops")
// with words of `previous` beside new ones.
bool ReplacesPreviousValue(const std::vector<std::string_view>& words,
                           const std::vector<std::string_view>& previous);

// The new value a correction or an edit gives, as the user wrote it: the
// clause that carries it, without the words of apology, agreement or
// negation around it ("sorry, I meant the March report" -> "the March
// report"; "yes, but at 9am" -> "at 9am"; "Ranunculus, not peonies" ->
// "Ranunculus"). Empty when nothing is left.
std::string CorrectedValue(std::string_view message);

// "yes, but at 9am", "ok, 80 words though", "yes, include the weekend too":
// an agreement that changes something on the way.
bool CarriesEdit(std::string_view message);

// "hmm no, not right now", "pass", "let's park that", "please don't": the
// message opens with a refusal and asks for nothing else.
bool OpensWithRefusal(const std::vector<std::string_view>& words);

// "how far did we get?", "tl;dr of this chat", "what's done and what's
// open": a recap of the conversation, in words IsRecap (cues.h) does not
// list. Only meaningful when there is a conversation to recap.
bool AsksForConversationSummary(const std::vector<std::string_view>& words);

// "wrong address, use billing@shop.example" after a request with another
// address; "every 4 hours is plenty" after "every 2 hours": the one value
// of the message that has a form of its own (an address, a #channel, an
// amount, a time of day, a frequency, a day, a share) when `previous`
// holds another of that form, exactly as the message writes it; else empty.
std::string ReplacedTypedValue(std::string_view message, std::string_view previous);

// "do what Kenji said", "apply what the captain suggested", "do ours like
// that": apply what the conversation shows someone suggested or did.
bool AppliesASuggestion(const std::vector<std::string_view>& words);

// "put it back to how it was before the audit", "bring back what we had in
// spring", "roll it back": the agent as it was.
bool PutsItBack(const std::vector<std::string_view>& words);

// "I'll write it myself", "we'll handle it ourselves": the user will do
// it, not the assistant.
bool DoesItThemselves(const std::vector<std::string_view>& words);

// "where are we?", "what's outstanding?", "anything pending?", "what did
// i miss": a short question about where the conversation stands, made
// only of such words (recap_state_cues, recap_state_words), no object.
bool AsksWhereThingsStand(const std::vector<std::string_view>& words);

// "can you list what we agreed and what's still undecided", "i forgot what
// i asked earlier, can you go over it": what this conversation settled or
// left open (recap_conversation_past), asked for again (recap_asks), with
// no platform object in it.
bool AsksAboutTheConversation(const std::vector<std::string_view>& words);

// "anyway, unrelated: can agents read pdfs?", "OT: make me a new agent
// ...": where the new request starts after a marker of a new topic, or
// nullopt when the message opens with none.
std::optional<size_t> NewTopicStart(std::string_view message);

// "thank you!! could you also create something for our volunteers",
// "perfect, now pause the other one": where the request after an opening
// of thanks or praise (followup_thanks_openers, with at least one word
// that is not "ok" or "so") starts, when it asks for something with a
// verb of its own in three words or more; else nullopt.
std::optional<size_t> RequestAfterThanks(std::string_view message);

// The part of a request that is read, when not all of it: after a marker
// of a new topic, the request after it with no history (`new_topic`);
// after thanks, the request after them in the same conversation. The
// analysis and the clarify decision read the same part.
struct ReadPart {
  IntentRequest request;
  bool new_topic = false;
};
std::optional<ReadPart> PartToRead(const IntentRequest& request);

// "every monday", "each morning", "weekly" (but not "the weekly report",
// "their monthly numbers", nor "every student").
bool HasRecurrence(const std::vector<std::string_view>& words);

// "every monday at 8, email each adjuster their open claims", "new
// episode on the RSS -> draft a newsletter": a standing instruction with a
// trigger or a recurrence and work to do each time, not a question and
// not a change to something that exists ("instead", "from now on").
bool IsStandingInstruction(const std::vector<std::string_view>& words, std::string_view message);

// "change the schedule", "adjust its threshold": a verb of changing, then
// one of an agent's settings (agent_settings).
bool ChangesAnAgentSetting(const std::vector<std::string_view>& words);

// "dm every new joiner the handbook link", "ask the regional leads for
// their monthly numbers": an order that opens (after filler) with
// a verb of passing on, telling or asking, with no trigger, recurrence or
// automation: done once, now.
bool IsOneShotOrder(const std::vector<std::string_view>& words);

// "translate into french: ...", "shorten this headline to 60 chars: ...",
// "dog weighs 18kg, dose is 5mg per kg, how many tablets?": a task done
// once on material the message itself carries.
bool IsSelfContainedTask(const std::vector<std::string_view>& words, std::string_view message);

// Where an item stands relative to an anchor: "the one after X", "the
// entry right above it", "the one between X and Y".
enum class RelativePosition { kBefore, kAfter, kBetween };

// The relative position a message asks for, if any.
std::optional<RelativePosition> FindRelativePosition(const std::vector<std::string_view>& words);

// Stands, in the words given to ReadRelativePosition, for an item of the
// list the message refers to (normalization never makes this word).
inline constexpr std::string_view kListedItem = "<listed>";

// A relative position as asked: which way, how many places ("two after
// X" is 2) and the index of the word that gives the direction.
struct RelativeRef {
  RelativePosition position = RelativePosition::kAfter;
  int offset = 1;
  size_t at = 0;
};

// The relative position `words` ask for. The position is asked of an item
// ("the one", "whatever sits", "its neighbour") or, in `words` where the
// names of listed items are kListedItem, right before a listed item ("the
// listing above X", "comes right after X") that no listed item named
// earlier in the message precedes; never of a time ("after lunch"). A
// direction word typed with one letter missing, extra or swapped
// ("befor") counts.
std::optional<RelativeRef> ReadRelativePosition(const std::vector<std::string_view>& words);

}  // namespace omniforge::intent
