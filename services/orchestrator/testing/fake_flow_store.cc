#include "services/orchestrator/testing/fake_flow_store.h"

namespace omniforge::orchestrator::testing {

absl::StatusOr<FlowState> FakeFlowStore::Load(const core::Call& call, const std::string& flow_id) {
  {
    absl::MutexLock lock(&mu_);
    if (!load_failure_.ok()) return load_failure_;
  }
  return kept_.Load(call, flow_id);
}

absl::Status FakeFlowStore::Save(const core::Call& call, const FlowState& state,
                                 int64_t expected_revision) {
  {
    absl::MutexLock lock(&mu_);
    if (!save_failure_.ok()) return save_failure_;
  }
  absl::Status saved = kept_.Save(call, state, expected_revision);
  if (saved.ok()) {
    absl::MutexLock lock(&mu_);
    ++saves_;
  }
  return saved;
}

void FakeFlowStore::FailLoads(absl::Status status) {
  absl::MutexLock lock(&mu_);
  load_failure_ = std::move(status);
}

void FakeFlowStore::FailSaves(absl::Status status) {
  absl::MutexLock lock(&mu_);
  save_failure_ = std::move(status);
}

absl::StatusOr<FlowState> FakeFlowStore::Kept(const core::Call& call, const std::string& flow_id) {
  return kept_.Load(call, flow_id);
}

int FakeFlowStore::saves() const {
  absl::MutexLock lock(&mu_);
  return saves_;
}

}  // namespace omniforge::orchestrator::testing
