// What a turn's model calls cost, for its `done` event: every model call the
// turn makes through a metered model (the planner's, and a plan's generation
// and review inside the turn) is summed into the turn's totals, through the
// ModelUsage (usage_attribution.h) the call is given. Works with or without
// a database (ModelUsage also collects the calls to store; this only sums).
#pragma once

#include <cstdint>
#include <memory>

#include "libs/llm/chat_model.h"
#include "libs/llm/usage.h"

namespace omniforge::orchestrator {

struct UsageTotals {
  int llm_calls = 0;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  double cost_usd = 0;

  // A call made for the turn elsewhere (the intent service's): its billed
  // tokens and cost.
  void Add(const llm::UsageRecord& call);
  // A call of the turn's own (answered or not): its answer's tokens and cost.
  void Meter(const absl::StatusOr<llm::ChatResponse>& answer);
};

// `model`, telling each call's usage (CallContext::usage), if any, of the
// answer the call got (or its error), so that it is counted with its tokens
// and cost.
class MeteredChatModel final : public llm::ChatModel {
 public:
  explicit MeteredChatModel(llm::ChatModel& model) : model_(model) {}

  absl::StatusOr<llm::ChatResponse> Complete(const llm::ChatRequest& request,
                                             const llm::CallContext& context) override;
  absl::StatusOr<llm::ChatResponse> Stream(const llm::ChatRequest& request,
                                           const llm::CallContext& context,
                                           const llm::StreamCallback& on_delta) override;

 private:
  llm::ChatModel& model_;
};

}  // namespace omniforge::orchestrator
