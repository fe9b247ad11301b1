// Flow states held in memory: the same contract as the PostgreSQL store,
// for local mode without a database and for tests. The states go with the
// process: after a restart, a flow that waited starts afresh (routing.h
// still finds it from the history; its state is gone).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "services/orchestrator/flow/flow_store.h"

namespace omniforge::orchestrator {

// Thread-safe; never fails. Keeps at most `max_flows` states: past that, the
// least recently saved goes.
class MemoryFlowStore final : public FlowStore {
 public:
  explicit MemoryFlowStore(size_t max_flows = 10000);

  absl::StatusOr<FlowState> Load(const core::Call& call, const std::string& flow_id) override;
  absl::Status Save(const core::Call& call, const FlowState& state,
                    int64_t expected_revision) override;
  absl::StatusOr<int> Forget(const core::Call& call, const std::string& conversation_id) override;

 private:
  struct Kept {
    std::string tenant_id;
    std::string user_id;
    FlowState state;
    uint64_t saved = 0;  // the order of the last save, for the bound
  };

  const size_t max_flows_;
  absl::Mutex mu_;
  // By (tenant, flow id).
  std::map<std::pair<std::string, std::string>, Kept> flows_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, std::pair<std::string, std::string>> by_save_ ABSL_GUARDED_BY(mu_);
  uint64_t saves_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace omniforge::orchestrator
