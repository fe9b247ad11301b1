#include "services/orchestrator/src/usage_attribution.h"

namespace omniforge::orchestrator {
namespace {

thread_local const UsageAttribution* current_attribution = nullptr;

}  // namespace

ScopedUsageAttribution::ScopedUsageAttribution(const UsageAttribution& attribution)
    : previous_(current_attribution) {
  current_attribution = &attribution;
}

ScopedUsageAttribution::~ScopedUsageAttribution() { current_attribution = previous_; }

const UsageAttribution* CurrentUsageAttribution() { return current_attribution; }

}  // namespace omniforge::orchestrator
