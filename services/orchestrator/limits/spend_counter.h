// Keeps the budgets current between reads of the usage rows: every turn's
// and plan step's model calls pass through here on their way to storage
// (ScopeUsageWriter), and their cost counts for the tenant at once.
#pragma once

#include <vector>

#include "services/orchestrator/limits/tenant_limits.h"
#include "services/orchestrator/usage/usage_attribution.h"

namespace omniforge::orchestrator {

// Thread-safe. `limits` and `next` (may be null: nothing stored) must
// outlive it.
class SpendCounter final : public ScopeUsageWriter {
 public:
  SpendCounter(TenantLimits& limits, ScopeUsageWriter* next) : limits_(limits), next_(next) {}

  void Record(const llm::UsageRecord& record) override {
    if (next_ != nullptr) next_->Record(record);
  }
  void WriteScope(const UsageAttribution& who, std::vector<AttributedCall> calls) override {
    double usd = 0;
    for (const AttributedCall& call : calls) usd += call.record.cost_usd;
    limits_.Spent(who.tenant_id, usd);
    if (next_ != nullptr) next_->WriteScope(who, std::move(calls));
  }

 private:
  TenantLimits& limits_;
  ScopeUsageWriter* const next_;
};

}  // namespace omniforge::orchestrator
