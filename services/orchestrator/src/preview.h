// The preview of an action that waits for the user's approval: what would
// run, who or what it touches, and why it asks first, in words that fit the
// tool (a deletion, a connected service's tool, a schedule, recipients).
#pragma once

#include "omniforge/orchestrator/v1/chat_service.pb.h"
#include "services/orchestrator/src/routing.h"

namespace omniforge::orchestrator {

void FillPreview(const PendingAction& action, ::omniforge::orchestrator::v1::PreviewEvent& preview);

}  // namespace omniforge::orchestrator
