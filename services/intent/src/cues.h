// Cues in the words of one message: a yes, a no, a recap, a closing, a
// correction, a leading verb, the action a verb asks for. Each reads the
// normalized words (text.h) of a single message, knows nothing of the
// history and is thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "services/intent/src/action.h"

namespace omniforge::intent {

// "yes", "sure thing", "yes please, asap", "love it, yes", "yes, delete":
// short, with an affirmative word among the first three and no "no" before
// it.
bool IsConfirmation(const std::vector<std::string_view>& words);

// "no", "not yet", "never mind": short, only refusal and filler words.
bool IsDecline(const std::vector<std::string_view>& words);

// "where were we?", "quick recap please": the user wants the conversation
// summed up.
bool IsRecap(const std::vector<std::string_view>& words);

// "nope that's all, cheers", "no thanks, all good": the user has nothing
// more to ask.
bool IsClosing(const std::vector<std::string_view>& words);

// "Anything else?", "Can I help with anything else?": a question that
// closes a request rather than asking about it.
bool AsksForAnythingElse(std::string_view text);

// "actually", "instead", "make it", "also": a word that adjusts what came
// before.
bool HasCorrectionCue(const std::vector<std::string_view>& words);

// "same for X", "what about X", "and X": the previous request again.
bool AsksForSameAgain(const std::vector<std::string_view>& words);

// True when the message starts (after filler like "ok", "please", "can
// you") with a verb of the lexicon: "run the sales digest anyway".
bool LeadingVerb(const std::vector<std::string_view>& words);

// The action an unmistakable message asks for: a question about what agents
// or skills can do (QUERY_INFO), something done once (EXECUTE_TASK), a
// message starting (after filler) with a lifecycle verb (MANAGE_PLATFORM)
// or a run verb (EXECUTE_TASK), or a request for a new skill.
std::optional<Action> ImperativeCue(const std::vector<std::string_view>& words);

// "does the refund bot skip small orders?", "who's in the ops project",
// "the nightly backup, done or not?": a question about how things stand.
// It opens (after "hey", "quick q") with a copula or an auxiliary and a
// subject other than the user, the assistant or "it"/"there" ("is it
// possible to ..." asks for work), or with "who" or "which", or it ends
// "or not"; and it holds no word of a request ("should", "please", "can
// you").
bool AsksHowThingsStand(const std::vector<std::string_view>& words);

// "call the forecast bot "pipeline-pulse"", "rename the growth project to
// growth 2025": a message that opens (after filler) with a verb of naming,
// whose object is no person, and gives a name, quoted or hyphenated, in
// `message` (the text as written). MANAGE_PLATFORM when a project, task,
// workspace or key is named, else UPDATE_AGENT; nullopt when the message
// names nothing.
std::optional<Action> NamingAction(const std::vector<std::string_view>& words,
                                   std::string_view message);

// "post the churn digest in #retention instead of dming me": a marker of
// a change that lasts ("instead", "from now on", "anymore") with none of a
// one-off ("now", "today", "just this once").
bool AsksStandingChange(const std::vector<std::string_view>& words);

// "drop john from the recipients", "remove finance from the board
// digest": a verb of removal, then "from" and, within four words,
// something an agent sends (a digest, a summary, its recipients).
bool RemovesFromAgentOutput(const std::vector<std::string_view>& words);

// "change that", "undo that", "fix this": a verb whose object is a bare
// "that" or "this" at the end of a clause.
bool VerbOnThat(const std::vector<std::string_view>& words);

// The action a verb in `text` asks for when it is about an existing agent:
// "run" -> EXECUTE_TASK, "pause"/"delete" -> MANAGE_PLATFORM, "what"/"why"
// -> QUERY_INFO, "change"/"make" -> UPDATE_AGENT; "create"/"set up" ->
// CREATE_AGENT or CREATE_SKILL. The first such verb wins; only the first
// `within_words` words are searched for it.
std::optional<Action> VerbAction(std::string_view text, size_t within_words = SIZE_MAX);

// True when VerbAction finds a real word of `text`, not only a closing "?".
bool VerbIsExplicit(std::string_view text);

}  // namespace omniforge::intent
