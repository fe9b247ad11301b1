// What a message does to the plan its flow waits on (PlanMoveFor, from the
// intent service's reading of it), and the analyses of the turns that
// continue a flow as it is: a reply to the flow's plan, a resume of a
// suspended flow.
#pragma once

#include <optional>
#include <string>

#include "omniforge/intent/v1/intent_service.pb.h"
#include "omniforge/orchestrator/v1/chat_service.pb.h"
#include "services/orchestrator/flow/flow_state.h"

namespace omniforge::orchestrator {

// What the user's message does to the plan the flow waits on.
enum class PlanMove { kApprove, kRevise, kReject, kAnswer, kContinue };

// The move of the client's structured `decision` on `plan`, else of the
// message as the intent service read it (`reply`, given the plan's stage:
// PendingPlanOf); nullopt: a new request, the plan is left as it is.
std::optional<PlanMove> PlanMoveFor(
    const PlanRef& plan, const ::omniforge::intent::v1::ReplyDecision& reply,
    const ::omniforge::orchestrator::v1::ApprovalDecision& decision);

// What the intent service is told of `plan`: under review, waiting on the
// user's answer to a step, or running (approved, stopped between steps);
// no stage for a plan that is over.
::omniforge::intent::v1::PendingPlan PendingPlanOf(const PlanRef& plan);

// The analysis of a reply to the flow's plan: the flow's action and
// entities, and what the reply does.
::omniforge::intent::v1::IntentAnalysis PlanReplyAnalysis(const FlowState& last, PlanMove move);

// The analysis of a turn that resumes a suspended flow: the flow's own.
::omniforge::intent::v1::IntentAnalysis ResumeAnalysis(const SuspendedFlow& flow);

}  // namespace omniforge::orchestrator
