// The rules of the local analysis as ordered tables: each rule has a name,
// the confidence its answer gets and a small function that says whether it
// applies and, if so, what it answers. LocalAnalyzer::Analyze tries the fast
// path rules, then reads the history and tries the reference rules; the
// first rule that applies answers, and its name comes back in
// LocalResult::rule. When none applies, the model answers. The rules are
// listed in docs/intent.md. Pure computation, thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "services/intent/entities/entities.h"
#include "services/intent/src/classifier.h"
#include "services/intent/src/conversation_context.h"
#include "services/intent/src/model.h"

namespace omniforge::intent {

// One message as the rules read it. `words` views `normalized`, so a
// Message is neither copied nor moved; `request` must outlive it.
struct Message {
  explicit Message(const IntentRequest& request);
  Message(const Message&) = delete;
  Message& operator=(const Message&) = delete;

  const IntentRequest& request;
  const std::string normalized;               // NormalizeText(request.message)
  const std::vector<std::string_view> words;  // Words(normalized)
  // The message with the user's agent and skill names masked
  // (MaskCatalogNames, kNameStandIn): what the readers of verbs, schedules
  // and the model read, so that "delete-old-files" or "weekly-sales-report"
  // ask for nothing. `masked_words` views `masked_normalized`.
  const std::string masked;
  const std::string masked_normalized;
  const std::vector<std::string_view> masked_words;
  const std::map<std::string, std::string> entities;  // ExtractEntities(masked)
};

// A message in its conversation: what the reference rules decide from.
// Every field is read once, before the first rule is tried.
struct Situation {
  const Message& message;
  const Context& context;
  // For rules that need the model's reading of the message.
  const LocalClassifier& classifier;
  // The user's agent the message names, unless an ordinal picks that same
  // agent from the last list ("the first, we do birthdays in person now").
  std::optional<std::string> named_agent;
  // The message's entities, with the agent and the skill it names.
  std::map<std::string, std::string> entities;
  size_t content_words = 0;    // words other than "?"
  std::optional<Action> verb;  // VerbAction of the message
  // The verb when it applies to an agent the user already has (anything
  // but creating an agent or a skill).
  std::optional<Action> agent_verb;
  bool verb_is_explicit = false;  // a real verb, not only a closing "?"
  // "the second one", "#2": only when there is a list to pick from.
  std::optional<OrdinalRef> ordinal;
  // "it", "that one", "change that", and no agent named.
  bool pronoun = false;
};

Situation ReadSituation(const Message& message, const Context& context,
                        const LocalClassifier& classifier);

// What a rule answers when it applies.
struct RuleAnswer {
  Action action = Action::kUnknown;
  Reference reference = Reference::kNone;
  std::string reasoning;
  // The entities of the answer (the message's, as the rule leaves them).
  std::map<std::string, std::string> entities;
  std::optional<Action> alternative;
  bool is_ambiguous = false;
  std::string clarifying_question;
  bool summary_worthy = false;
};

template <typename Input>
struct Rule {
  // snake_case, unique over both tables; logged and shown in the reasoning.
  std::string_view name;
  // The confidence of the answer when the rule applies.
  float confidence;
  // The answer when the rule applies to `input`, else nullopt.
  std::optional<RuleAnswer> (*apply)(const Input& input);
};

// Before the history is read: an empty message, "@agent-name".
std::span<const Rule<Message>> FastPathRules();

// References into the conversation, in the order they are tried.
std::span<const Rule<Situation>> ReferenceRules();

}  // namespace omniforge::intent
