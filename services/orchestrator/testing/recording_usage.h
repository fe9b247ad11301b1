// Where a turn's model calls are recorded, in memory (PgUsageRecorder's
// stand-in): what each turn or step handed over, with whom it was attributed to,
// for unit tests that check what a turn's usage is stored under.
// Thread-safe.
#pragma once

#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "libs/llm/usage.h"
#include "services/orchestrator/usage/usage_attribution.h"

namespace omniforge::orchestrator::testing {

// One stored row: the calls of one scope and whom they served.
struct UsageRow {
  UsageAttribution who;
  std::vector<AttributedCall> calls;
};

// Like PgUsageRecorder: the calls of a turn or a step (its ModelUsage) are
// stored as one row when it ends; a call made for no turn (reported to the
// client's own sink) is not stored, only counted.
class RecordingUsage final : public ScopeUsageWriter {
 public:
  void Record(const llm::UsageRecord& record) override;
  void WriteScope(const UsageAttribution& who, std::vector<AttributedCall> calls) override;

  std::vector<UsageRow> rows() const;
  int unattributed() const;

 private:
  mutable absl::Mutex mu_;
  std::vector<UsageRow> rows_ ABSL_GUARDED_BY(mu_);
  int unattributed_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace omniforge::orchestrator::testing
