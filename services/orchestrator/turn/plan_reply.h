// What a message does to the plan its flow waits on (PlanMoveFor), and the
// analyses of the turns that need no intent service: a reply to the flow's
// plan, a resume of a suspended flow.
#pragma once

#include <optional>
#include <string>

#include "omniforge/intent/v1/intent_service.pb.h"
#include "omniforge/orchestrator/v1/chat_service.pb.h"
#include "services/orchestrator/flow/flow_state.h"

namespace omniforge::orchestrator {

// What the user's message does to the plan the flow waits on.
enum class PlanMove { kApprove, kRevise, kReject, kAnswer, kContinue };

// The move of `message` (or of the client's structured `decision`) on
// `plan`; nullopt: a new request, the plan is left as it is.
std::optional<PlanMove> PlanMoveFor(
    const PlanRef& plan, const std::string& message,
    const ::omniforge::orchestrator::v1::ApprovalDecision& decision);

// The analysis of a reply to the flow's plan, made without the intent
// service: the flow's action and entities, and what the reply does.
::omniforge::intent::v1::IntentAnalysis PlanReplyAnalysis(const FlowState& last, PlanMove move);

// The analysis of a turn that resumes a suspended flow: the flow's own,
// without the intent service.
::omniforge::intent::v1::IntentAnalysis ResumeAnalysis(const SuspendedFlow& flow);

}  // namespace omniforge::orchestrator
