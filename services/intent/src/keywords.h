// The last layer: plain keywords, used when the LLM failed, timed out or
// answered invalid output. Crude by design; it never fails.
#pragma once

#include <optional>
#include <string_view>

#include "services/intent/src/action.h"

namespace omniforge::intent {

struct KeywordMatch {
  Action action;
  int hits;  // keywords of that action found
};

// The action with the most keyword hits; nullopt when no keyword is found.
std::optional<KeywordMatch> ClassifyByKeywords(std::string_view text);

}  // namespace omniforge::intent
