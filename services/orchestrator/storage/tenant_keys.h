// The table of the tenants' data keys in schema orchestration (migration
// 0009): the stores seal what users and models wrote with them.
#pragma once

namespace omniforge::orchestrator {

inline constexpr char kOrchestratorKeys[] = "orchestration.tenant_keys";

}  // namespace omniforge::orchestrator
