// The labeled utterances the local model learns from, shipped in the binary
// (services/intent/data/utterances/<label>.txt, one message per line), and
// the fixed split into what the model trains on and the dev set it never
// sees, used to measure it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "services/intent/src/action.h"

namespace omniforge::intent {

struct LabeledUtterance {
  Action action;
  std::string text;
};

// Parses one label file's text: one utterance per line; blank lines are
// skipped. INVALID_ARGUMENT for an unknown label.
absl::StatusOr<std::vector<LabeledUtterance>> ParseLabeledLines(std::string_view label,
                                                                std::string_view lines);

// Every shipped utterance: label files alphabetically, lines in file order.
const std::vector<LabeledUtterance>& ShippedUtterances();

// True for the about one in five utterances held out as the dev split. The
// choice depends only on the normalized text (a 64-bit FNV-1a hash), so the
// split is the same on every build and an utterance keeps its side when
// others are added.
bool IsDevUtterance(std::string_view text);

// The shipped utterances on one side of the split.
std::vector<LabeledUtterance> TrainingSplit();
std::vector<LabeledUtterance> DevSplit();

}  // namespace omniforge::intent
