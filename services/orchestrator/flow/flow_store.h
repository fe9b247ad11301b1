// Where each flow keeps its state (flow_state.h) between turns: one
// FlowState per flow, versioned by its revision. PgFlowStore
// (storage/pg_flow_store.h, orchestration.flows) when the orchestrator has a
// database; MemoryFlowStore (memory_flow_store.h) in local mode without one
// and in tests.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libs/core/call.h"
#include "services/orchestrator/flow/flow_state.h"

namespace omniforge::orchestrator {

// Implementations are thread-safe and end every call by `call.deadline`.
// A flow is its user's: another user's flow is never read nor written.
class FlowStore {
 public:
  virtual ~FlowStore() = default;
  // The state of the caller's flow, with its revision. NOT_FOUND when the
  // flow has none (or is another user's), UNAVAILABLE / DEADLINE_EXCEEDED
  // when it cannot be read.
  virtual absl::StatusOr<FlowState> Load(const core::Call& call, const std::string& flow_id) = 0;
  // Stores `state` as the flow's state with revision `expected_revision` + 1
  // (state.revision is not read), if the stored revision is still
  // `expected_revision` (0: the flow has no state yet). ABORTED, with
  // nothing written, when it moved on or the flow is another user's;
  // UNAVAILABLE / DEADLINE_EXCEEDED when it cannot be written.
  virtual absl::Status Save(const core::Call& call, const FlowState& state,
                            int64_t expected_revision) = 0;
  // Removes the caller's flows of a conversation (it was deleted); the
  // number removed. UNAVAILABLE / DEADLINE_EXCEEDED when it cannot.
  virtual absl::StatusOr<int> Forget(const core::Call& call,
                                     const std::string& conversation_id) = 0;
};

}  // namespace omniforge::orchestrator
