#include "services/orchestrator/usage/usage_attribution.h"

#include <utility>

#include "libs/core/clock.h"

namespace omniforge::orchestrator {

ModelUsage::~ModelUsage() {
  absl::MutexLock lock(&mu_);
  if (calls_.empty() || writer_ == nullptr) return;
  writer_->WriteScope(attribution_, std::exchange(calls_, {}));
}

void ModelUsage::Record(const llm::UsageRecord& record) {
  absl::MutexLock lock(&mu_);
  calls_.push_back({record, core::NowMicros()});
}

void ModelUsage::Answered(const absl::StatusOr<llm::ChatResponse>& answer) {
  absl::MutexLock lock(&mu_);
  if (totals_ != nullptr) totals_->Meter(answer);
}

void ModelUsage::Attribute(UsageAttribution attribution) {
  absl::MutexLock lock(&mu_);
  attribution_ = std::move(attribution);
}

UsageAttribution ModelUsage::attribution() const {
  absl::MutexLock lock(&mu_);
  return attribution_;
}

}  // namespace omniforge::orchestrator
