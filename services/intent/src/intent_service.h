// Intent analysis end to end, free of gRPC: input limits, the local layers,
// the LLM when configured and needed, and the keyword fallback when the LLM
// fails. Thread-safe; one instance serves the process.
#pragma once

#include <array>
#include <memory>

#include "absl/status/statusor.h"
#include "libs/core/metrics.h"
#include "libs/llm/chat_model.h"
#include "services/intent/src/analyzer.h"
#include "services/intent/src/llm_layer.h"
#include "services/intent/src/model.h"

namespace omniforge::intent {

struct IntentLimits {
  size_t max_message_bytes = size_t{64} * 1024;
  size_t max_history_turns = 200;
  size_t max_turn_bytes = size_t{64} * 1024;
  size_t max_catalog_items = 500;
  size_t max_name_bytes = 128;
  size_t max_description_bytes = 2048;
  size_t max_pending_actions = 100;
};

// INVALID_ARGUMENT naming the first limit `request` breaks.
absl::Status ValidateIntentRequest(const IntentRequest& request, const IntentLimits& limits);

class IntentService final {
 public:
  // `llm` may be null (local mode: no model calls). Both must outlive the
  // service.
  IntentService(const LocalAnalyzer& local, llm::ChatModel* llm, LlmLayerOptions llm_options = {},
                IntentLimits limits = {},
                core::MetricsRegistry& metrics = core::MetricsRegistry::Global());

  // The local layers only: never blocks. `needs_llm` tells whether Analyze
  // would call the LLM for this request.
  absl::StatusOr<LocalResult> AnalyzeLocally(const IntentRequest& request) const;

  // Whether an analysis with this local result calls the LLM (and so blocks).
  bool WillCallLlm(const LocalResult& local) const { return llm_ != nullptr && local.needs_llm; }

  // Completes `local` (from AnalyzeLocally on the same request): the LLM's
  // answer when it is needed and works, the keyword fallback when it fails.
  // Sets latency_ms from `start_micros`. Logs (at debug level) the source,
  // the action and the local rule that answered or led to the LLM.
  IntentAnalysis Finish(const IntentRequest& request, LocalResult local,
                        int64_t start_micros) const;

  // AnalyzeLocally then Finish.
  absl::StatusOr<IntentAnalysis> Analyze(const IntentRequest& request) const;

 private:
  IntentAnalysis KeywordFallback(const IntentRequest& request, const LocalResult& local,
                                 const absl::Status& llm_error) const;
  void Record(const IntentAnalysis& analysis) const;

  const LocalAnalyzer& local_;
  llm::ChatModel* const llm_;
  const LlmLayerOptions llm_options_;
  const IntentLimits limits_;
  // [source 1..4][action 1..8]
  std::array<std::array<core::Counter*, 9>, 5> analyses_{};
  core::Histogram* latency_ = nullptr;
  core::Counter* llm_failures_ = nullptr;
};

}  // namespace omniforge::intent
