#include "services/intent/src/labeled_data.h"

#include <cstdint>

#include "services/intent/src/text.h"

namespace omniforge::intent {

// Generated from data/utterances by embed_data.cmake.
struct EmbeddedLabelFile {
  const char* label;
  const char* lines;
};
const std::vector<EmbeddedLabelFile>& EmbeddedLabelFiles();

absl::StatusOr<std::vector<LabeledUtterance>> ParseLabeledLines(std::string_view label,
                                                                std::string_view lines) {
  const std::optional<Action> action = ParseAction(label);
  if (!action) {
    return absl::InvalidArgumentError("unknown intent label '" + std::string(label) + "'");
  }
  std::vector<LabeledUtterance> out;
  for (std::string_view line : SplitAny(lines, "\n")) {
    out.push_back({*action, std::string(line)});
  }
  return out;
}

const std::vector<LabeledUtterance>& ShippedUtterances() {
  static const std::vector<LabeledUtterance> all = [] {
    std::vector<LabeledUtterance> out;
    for (const EmbeddedLabelFile& file : EmbeddedLabelFiles()) {
      auto parsed = ParseLabeledLines(file.label, file.lines);
      // The build only embeds files named after a label.
      for (auto& u : *parsed) out.push_back(std::move(u));
    }
    return out;
  }();
  return all;
}

bool IsDevUtterance(std::string_view text) {
  uint64_t hash = 14695981039346656037ULL;
  for (unsigned char c : NormalizeText(text)) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  return hash % 5 == 0;
}

std::vector<LabeledUtterance> TrainingSplit() {
  std::vector<LabeledUtterance> out;
  for (const auto& u : ShippedUtterances()) {
    if (!IsDevUtterance(u.text)) out.push_back(u);
  }
  return out;
}

std::vector<LabeledUtterance> DevSplit() {
  std::vector<LabeledUtterance> out;
  for (const auto& u : ShippedUtterances()) {
    if (IsDevUtterance(u.text)) out.push_back(u);
  }
  return out;
}

}  // namespace omniforge::intent
