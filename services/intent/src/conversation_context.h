// What the recent history says about a new message: the last list the
// assistant gave, the agent last talked about, an offer waiting for a yes,
// a draft in progress and what the user asked for before. Read once per
// analysis; the reference rules (rules.h) decide from it. Pure computation,
// thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "services/intent/src/classifier.h"
#include "services/intent/src/model.h"

namespace omniforge::intent {

// What the assistant's last turn, when it is the conversation's last turn,
// gave the user to work on.
enum class Output {
  kNone,
  kFigures,  // two figures or more ("$4,210, up 18%")
  kText,     // text of its own: quoted, or after a colon ("Draft: ...")
};

struct Context {
  std::vector<std::string> last_list;  // agents of the last turn that listed two or more
  std::optional<Action> list_action;   // what that list was offered for ("which one should I run?")
  std::optional<std::string> last_agent;  // the agent last talked about
  std::optional<Action> proposal;         // the assistant's last turn offers this
  std::map<std::string, std::string> proposal_entities;
  std::optional<Action> in_progress;  // an agent or skill being drafted
  std::map<std::string, std::string> in_progress_entities;
  std::optional<Action> previous_action;  // what the user last asked for
  std::map<std::string, std::string> previous_entities;
  // The text of that request and of the assistant's answers to it, for
  // reading what a correction replaces.
  std::string previous_text;
  bool has_history = false;
  Output last_output = Output::kNone;
  // That turn, or the user's turn before it, names one of the user's
  // agents exactly.
  bool last_output_names_agent = false;
};

// Reads the last `max_turns` turns of `request.history`. Routing metadata
// stored with a turn is used instead of its text; where there is none,
// `classifier` guesses what a user turn asked for or an offer offers.
Context ReadContext(const IntentRequest& request, const LocalClassifier& classifier, int max_turns);

// `text` with the names of the request's agents and skills masked
// (MaskCatalogNames, kNameStandIn): what the readers of verbs, schedules
// and the model read of a message or an earlier turn.
std::string WithoutCatalogNames(std::string_view text, const IntentRequest& request);

}  // namespace omniforge::intent
