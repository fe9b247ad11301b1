// The usage of the model calls made for one request, kept in order to be
// handed on with its answer: the intent service returns an analysis's model
// calls with the analysis, the executor a dialogue event's with the event.
// Given with each call as CallContext::usage, so that whom a call serves is
// a parameter of the call, never thread-local state.
#pragma once

#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "libs/llm/usage.h"

namespace omniforge::llm {

// Thread-safe.
class RecordedCalls final : public CallUsage {
 public:
  void Record(const UsageRecord& record) override;
  // The answers are not kept: each call's record carries its usage.
  void Answered(const absl::StatusOr<ChatResponse>&) override {}

  // The calls recorded since the last Take, oldest first; none are left.
  std::vector<UsageRecord> Take();

 private:
  absl::Mutex mu_;
  std::vector<UsageRecord> calls_ ABSL_GUARDED_BY(mu_);
};

}  // namespace omniforge::llm
