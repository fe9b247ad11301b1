#include "libs/llm/recorded_calls.h"

#include <utility>

namespace omniforge::llm {

void RecordedCalls::Record(const UsageRecord& record) {
  absl::MutexLock lock(&mu_);
  calls_.push_back(record);
}

std::vector<UsageRecord> RecordedCalls::Take() {
  absl::MutexLock lock(&mu_);
  std::vector<UsageRecord> taken = std::move(calls_);
  calls_.clear();
  return taken;
}

}  // namespace omniforge::llm
