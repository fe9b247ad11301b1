// The LLM layer of intent analysis: a structured-output call (JSON schema)
// with the message, the recent history, the user's agents and skills and the
// local model's guess, through libs/llm (profile `speed`, operation
// `intent_analysis`). The answer is validated (known actions, confidence in
// 0..1, agent names that exist); one repair round, then an error the caller
// falls back on.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "libs/llm/chat_model.h"
#include "services/intent/src/analyzer.h"
#include "services/intent/src/model.h"

namespace omniforge::intent {

struct LlmLayerOptions {
  // The whole call, the repair round included.
  int64_t timeout_ms = 4000;
  int history_turns = 10;
  // Longer turns are cut (the start and the end are kept).
  size_t turn_chars = 1200;
  size_t max_catalog_items = 60;
  int max_tokens = 400;
};

// The JSON schema the model must answer with.
const std::string& IntentOutputSchema();

// The request sent to the model (exposed for tests).
llm::ChatRequest BuildIntentRequest(const IntentRequest& request, const LocalResult& local,
                                    const LlmLayerOptions& options);

// The model's analysis (source kLlm, cost_usd set). Errors are the model's
// (an llm::LlmError payload says which kind) or kInvalidOutput. Each model
// call made (a repair round's too) is recorded in `usage` (null: the
// client's own sink), answered or not.
absl::StatusOr<IntentAnalysis> AnalyzeWithLlm(llm::ChatModel& model, const IntentRequest& request,
                                              const LocalResult& local,
                                              const LlmLayerOptions& options,
                                              llm::CallUsage* usage);

}  // namespace omniforge::intent
