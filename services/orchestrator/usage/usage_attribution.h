// Whom a model call serves, and the calls of one turn (or one plan step)
// collected to be stored together: the turn makes a ModelUsage and passes
// it with each of its model calls (llm::CallContext::usage); the LLM client
// reports each call's record to it, and when it ends its calls go to their
// writer (usage_recorder.h) as one row. A plan step run inside a turn has a
// ModelUsage of its own, so it is stored apart from the turn's other calls.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "libs/llm/usage.h"
#include "services/orchestrator/usage/usage_meter.h"

namespace omniforge::orchestrator {

struct UsageAttribution {
  std::string tenant_id;
  std::string user_id;
  std::string conversation_id;
  std::string turn_id;
  std::string context_type;
  // How the plan the calls served is carried out (auto_execute,
  // draft_only, agent_review: plan_model.h's names): set once the turn
  // makes or acts on a plan, and for each step's calls; empty otherwise.
  std::string execution_mode;
};

// A model call reported for a turn or a step.
struct AttributedCall {
  llm::UsageRecord record;
  int64_t reported_micros = 0;  // when the client reported it (Unix epoch, UTC)
};

// Stores the calls of a turn or a step. As an llm::UsageSink it takes the
// calls made for no turn (a client's own sink): they are not stored.
class ScopeUsageWriter : public llm::UsageSink {
 public:
  // Called from ModelUsage's destructor: must not block for long nor throw.
  virtual void WriteScope(const UsageAttribution& who, std::vector<AttributedCall> calls) = 0;
};

// The model calls of one turn or one plan step. Sums each answer into
// `totals` (the turn's, for `done`; null: not summed) and collects the
// client's records of the calls, handed to `writer` as one row when it is
// destroyed (nothing when no call was made; null writer: not stored). The
// writer and the totals must outlive it. Thread-safe.
class ModelUsage final : public llm::CallUsage {
 public:
  ModelUsage(UsageAttribution attribution, ScopeUsageWriter* writer, UsageTotals* totals = nullptr)
      : attribution_(std::move(attribution)), writer_(writer), totals_(totals) {}
  ~ModelUsage() override;
  ModelUsage(const ModelUsage&) = delete;
  ModelUsage& operator=(const ModelUsage&) = delete;

  void Record(const llm::UsageRecord& record) override;
  void Answered(const absl::StatusOr<llm::ChatResponse>& answer) override;

  // Whom the calls serve; a turn learns its conversation and context type
  // once it has understood the message, before its model calls.
  void Attribute(UsageAttribution attribution);
  UsageAttribution attribution() const;

 private:
  mutable absl::Mutex mu_;
  UsageAttribution attribution_ ABSL_GUARDED_BY(mu_);
  ScopeUsageWriter* const writer_;
  UsageTotals* const totals_;
  std::vector<AttributedCall> calls_ ABSL_GUARDED_BY(mu_);
};

}  // namespace omniforge::orchestrator
