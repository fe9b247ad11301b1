// Collects the usage records of the model calls a piece of work makes on its
// own thread, to hand them to whoever asked for the work: the intent
// service returns its analysis's model calls with the analysis, and the
// orchestrator records them under the turn that asked.
#pragma once

#include <vector>

#include "libs/llm/usage.h"

namespace omniforge::llm {

// A sink that adds each record to the calling thread's innermost
// ScopedUsageCollection; records made outside every scope are dropped.
// Stateless and thread-safe.
class CollectingUsageSink final : public UsageSink {
 public:
  void Record(const UsageRecord& record) override;
};

// While it lives, the calls this thread makes through a client whose sink is
// a CollectingUsageSink are appended to `calls` (which must outlive it).
// Scopes nest; the innermost one collects.
class ScopedUsageCollection final {
 public:
  explicit ScopedUsageCollection(std::vector<UsageRecord>* calls);
  ~ScopedUsageCollection();
  ScopedUsageCollection(const ScopedUsageCollection&) = delete;
  ScopedUsageCollection& operator=(const ScopedUsageCollection&) = delete;

 private:
  std::vector<UsageRecord>* const previous_;
};

}  // namespace omniforge::llm
