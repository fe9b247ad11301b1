// The local layers of intent analysis (docs/intent.md): the fast path, the
// references into the conversation (the rule tables of rules.h) and the
// local model. Pure computation, microseconds per message; thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "services/intent/src/classifier.h"
#include "services/intent/src/model.h"

namespace omniforge::intent {

struct AnalyzerOptions {
  // Ambiguous when the best action's probability is below this...
  float low_confidence = 0.45f;
  // ...or within this margin of the runner-up's.
  float ambiguity_margin = 0.12f;
  // Below this confidence the LLM (when configured) is asked.
  float llm_threshold = 0.6f;
  // Only the most recent turns are read.
  int history_turns = 20;
};

// What the local layers made of a message.
struct LocalResult {
  IntentAnalysis analysis;
  // The answer is unsure or depends on context the rules could not resolve:
  // worth an LLM call when one is configured.
  bool needs_llm = false;
  // Why the LLM would help, for the reasoning and logs.
  std::string llm_reason;
  // The rule that answered (a static name: rules.h, or one of the model's
  // "no_known_words", "model", "model_named_agent_verb",
  // "model_imperative_cue"); the reasoning ends with it too.
  std::string_view rule;
};

class LocalAnalyzer final {
 public:
  // `classifier` must outlive the analyzer.
  LocalAnalyzer(const LocalClassifier& classifier, AnalyzerOptions options = {});

  LocalResult Analyze(const IntentRequest& request) const;

  // The model's ranking of `text` on its own (for the keyword fallback and
  // evaluation).
  std::vector<Prediction> Rank(std::string_view text) const { return classifier_.Predict(text); }

  const AnalyzerOptions& options() const { return options_; }

 private:
  const LocalClassifier& classifier_;
  const AnalyzerOptions options_;
};

// A question naming the candidate actions and the entities found, e.g.
// "Should I set up a new agent for notion that runs every monday, or change
// weekly-sales-digest?"
std::string ClarifyingQuestion(Action first, std::optional<Action> second,
                               const std::map<std::string, std::string>& entities);

}  // namespace omniforge::intent
