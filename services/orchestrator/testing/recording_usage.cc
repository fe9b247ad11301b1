#include "services/orchestrator/testing/recording_usage.h"

namespace omniforge::orchestrator::testing {

void RecordingUsage::Record(const llm::UsageRecord& /*record*/) {
  absl::MutexLock lock(&mu_);
  ++unattributed_;
}

void RecordingUsage::WriteScope(const UsageAttribution& who, std::vector<AttributedCall> calls) {
  absl::MutexLock lock(&mu_);
  rows_.push_back({who, std::move(calls)});
}

std::vector<UsageRow> RecordingUsage::rows() const {
  absl::MutexLock lock(&mu_);
  return rows_;
}

int RecordingUsage::unattributed() const {
  absl::MutexLock lock(&mu_);
  return unattributed_;
}

}  // namespace omniforge::orchestrator::testing
