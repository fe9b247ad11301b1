// The flow store for tests of the turn: a MemoryFlowStore that can be told
// to fail its loads or its saves with a given status (a database gone,
// UNAVAILABLE; a concurrent writer, ABORTED).
#pragma once

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "services/orchestrator/flow/flow_store.h"
#include "services/orchestrator/flow/memory_flow_store.h"

namespace omniforge::orchestrator::testing {

// Thread-safe. A failed call changes nothing.
class FakeFlowStore final : public FlowStore {
 public:
  absl::StatusOr<FlowState> Load(const core::Call& call, const std::string& flow_id) override;
  absl::Status Save(const core::Call& call, const FlowState& state,
                    int64_t expected_revision) override;
  absl::StatusOr<int> Forget(const core::Call& call, const std::string& conversation_id) override {
    return kept_.Forget(call, conversation_id);
  }

  // Every later Load (Save) fails with `status`; OkStatus: they work again.
  void FailLoads(absl::Status status);
  void FailSaves(absl::Status status);
  // What the store keeps for the flow, read by the test: never fails on
  // purpose.
  absl::StatusOr<FlowState> Kept(const core::Call& call, const std::string& flow_id);
  int saves() const;  // the saves that stored a state

 private:
  MemoryFlowStore kept_;
  mutable absl::Mutex mu_;
  absl::Status load_failure_ ABSL_GUARDED_BY(mu_);
  absl::Status save_failure_ ABSL_GUARDED_BY(mu_);
  int saves_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace omniforge::orchestrator::testing
