#include "services/orchestrator/flow/memory_flow_store.h"

#include <algorithm>
#include <utility>

namespace omniforge::orchestrator {

MemoryFlowStore::MemoryFlowStore(size_t max_flows) : max_flows_(std::max<size_t>(1, max_flows)) {}

absl::StatusOr<FlowState> MemoryFlowStore::Load(const core::Call& call,
                                                const std::string& flow_id) {
  absl::MutexLock lock(&mu_);
  auto it = flows_.find({call.who.tenant_id, flow_id});
  if (it == flows_.end() || it->second.user_id != call.who.user_id) {
    return absl::NotFoundError("no flow " + flow_id);
  }
  return it->second.state;
}

absl::StatusOr<int> MemoryFlowStore::Forget(const core::Call& call,
                                            const std::string& conversation_id) {
  absl::MutexLock lock(&mu_);
  int forgotten = 0;
  for (auto it = flows_.begin(); it != flows_.end();) {
    const Kept& kept = it->second;
    if (kept.tenant_id == call.who.tenant_id && kept.user_id == call.who.user_id &&
        kept.state.conversation_id == conversation_id) {
      by_save_.erase(kept.saved);
      it = flows_.erase(it);
      ++forgotten;
    } else {
      ++it;
    }
  }
  return forgotten;
}

absl::Status MemoryFlowStore::Save(const core::Call& call, const FlowState& state,
                                   int64_t expected_revision) {
  absl::MutexLock lock(&mu_);
  const std::pair<std::string, std::string> key{call.who.tenant_id, state.flow_id};
  auto it = flows_.find(key);
  const int64_t stored = it == flows_.end() ? 0 : it->second.state.revision;
  if (it != flows_.end() && it->second.user_id != call.who.user_id) {
    return absl::AbortedError("flow " + state.flow_id + " is not the caller's");
  }
  if (stored != expected_revision) {
    return absl::AbortedError("flow " + state.flow_id + " is at revision " +
                              std::to_string(stored) + ", not " +
                              std::to_string(expected_revision));
  }
  if (it == flows_.end()) {
    it = flows_.emplace(key, Kept{call.who.tenant_id, call.who.user_id, {}, 0}).first;
  } else {
    by_save_.erase(it->second.saved);
  }
  it->second.state = state;
  it->second.state.revision = expected_revision + 1;
  it->second.saved = ++saves_;
  by_save_[it->second.saved] = key;
  while (flows_.size() > max_flows_) {
    flows_.erase(by_save_.begin()->second);
    by_save_.erase(by_save_.begin());
  }
  return absl::OkStatus();
}

}  // namespace omniforge::orchestrator
