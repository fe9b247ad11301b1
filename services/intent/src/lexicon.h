// The verbs that say what a user wants done with something that exists
// ("run", "pause", "change", "what"), shared by the reference rules and the
// model's input features.
#pragma once

#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "services/intent/src/action.h"

namespace omniforge::intent {

// Normalized verbs (one to three words) and the action each asks for, in
// lexicon order. CREATE_AGENT entries mean "make something new".
const std::vector<std::pair<std::string_view, Action>>& VerbLexicon();

// The action of a single-word verb of the lexicon (normalized), if any.
std::optional<Action> SingleWordVerb(std::string_view word);

}  // namespace omniforge::intent
