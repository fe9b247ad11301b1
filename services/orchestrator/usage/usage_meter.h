// What a turn's model calls cost, for its `done` event: every model call the
// turn makes on its own thread (the planner's, and a plan's generation and
// review inside the turn) through a metered model adds to the turn's meter.
// Works with or without a database (usage_attribution.h stores the calls;
// this only sums them).
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
};

// Sums the metered calls this thread makes while it lives into `totals`
// (which must outlive it). Scopes nest; the innermost one counts.
class ScopedUsageMeter final {
 public:
  explicit ScopedUsageMeter(UsageTotals* totals);
  ~ScopedUsageMeter();
  ScopedUsageMeter(const ScopedUsageMeter&) = delete;
  ScopedUsageMeter& operator=(const ScopedUsageMeter&) = delete;

 private:
  UsageTotals* previous_;
};

// `model`, adding each call (answered or not) and its tokens and cost to the
// calling thread's meter, if any.
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
