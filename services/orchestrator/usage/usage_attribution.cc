#include "services/orchestrator/usage/usage_attribution.h"

#include <utility>

namespace omniforge::orchestrator {
namespace {

thread_local ScopedUsageAttribution* innermost_scope = nullptr;

}  // namespace

ScopedUsageAttribution::ScopedUsageAttribution(const UsageAttribution& attribution)
    : attribution_(attribution), enclosing_(innermost_scope) {
  innermost_scope = this;
}

ScopedUsageAttribution::~ScopedUsageAttribution() {
  innermost_scope = enclosing_;
  Flush();
}

void ScopedUsageAttribution::Flush() {
  if (calls_.empty()) return;
  std::vector<AttributedCall> calls = std::exchange(calls_, {});
  writer_->WriteScope(attribution_, std::move(calls));
}

const UsageAttribution* CurrentUsageAttribution() {
  return innermost_scope == nullptr ? nullptr : &innermost_scope->attribution_;
}

bool AddToUsageScope(const llm::UsageRecord& record, int64_t reported_micros,
                     ScopeUsageWriter& writer) {
  ScopedUsageAttribution* scope = innermost_scope;
  if (scope == nullptr) return false;
  if (scope->writer_ != &writer) {
    if (scope->writer_ != nullptr) scope->Flush();
    scope->writer_ = &writer;
  }
  scope->calls_.push_back({record, reported_micros});
  return true;
}

}  // namespace omniforge::orchestrator
