// The local layers of intent analysis (DESIGN.md, "Understanding"): the fast
// path, the fastText model, entities, and references into the conversation.
// Pure computation, microseconds per message; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
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

// The action a verb in `text` asks for when it is about an existing agent:
// "run" -> EXECUTE_TASK, "pause"/"delete" -> MANAGE_PLATFORM, "what"/"why"
// -> QUERY_INFO, "change"/"make" -> UPDATE_AGENT; "create"/"set up" ->
// CREATE_AGENT or CREATE_SKILL. The first such verb wins; only the first
// `within_words` words are searched for it.
std::optional<Action> VerbAction(std::string_view text, size_t within_words = SIZE_MAX);

}  // namespace omniforge::intent
