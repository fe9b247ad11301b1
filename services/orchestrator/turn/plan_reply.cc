#include "services/orchestrator/turn/plan_reply.h"

#include "libs/core/text.h"
#include "services/orchestrator/planner/local_policy.h"
#include "services/orchestrator/plans/plan_model.h"

namespace omniforge::orchestrator {

namespace pb = ::omniforge::orchestrator::v1;
namespace intentpb = ::omniforge::intent::v1;

intentpb::IntentAnalysis ResumeAnalysis(const SuspendedFlow& flow) {
  intentpb::IntentAnalysis analysis;
  analysis.set_action_type(flow.action_type == intentpb::ACTION_TYPE_UNSPECIFIED
                               ? intentpb::ACTION_TYPE_UNKNOWN
                               : flow.action_type);
  analysis.set_confidence(1.0f);
  analysis.set_source(intentpb::INTENT_SOURCE_FAST_PATH);
  analysis.set_reasoning("resumes the flow a newer message suspended: " +
                         core::Shortened(flow.goal, 200));
  analysis.mutable_entities()->insert(flow.entities.begin(), flow.entities.end());
  return analysis;
}

std::optional<PlanMove> PlanMoveFor(const PlanRef& plan, const intentpb::ReplyDecision& reply,
                                    const pb::ApprovalDecision& decision) {
  const std::optional<PlanStatus> status = ParsePlanStatus(plan.status);
  if (decision.kind() != pb::DECISION_KIND_UNSPECIFIED) {
    // A structured decision acts on the plan it names, and only one waiting
    // for review.
    if (decision.action_id() != plan.plan_id || status != PlanStatus::kPendingReview) {
      return std::nullopt;
    }
    switch (decision.kind()) {
      case pb::DECISION_KIND_APPROVE:
        return PlanMove::kApprove;
      case pb::DECISION_KIND_REJECT:
        return PlanMove::kReject;
      default:
        return PlanMove::kRevise;
    }
  }
  const intentpb::PlanStage stage = PendingPlanOf(plan).stage();
  switch (reply.kind()) {
    case intentpb::REPLY_KIND_APPROVE:
      if (stage == intentpb::PLAN_STAGE_REVIEW) return PlanMove::kApprove;
      break;
    case intentpb::REPLY_KIND_REJECT:
      if (stage != intentpb::PLAN_STAGE_RUNNING) return PlanMove::kReject;
      break;
    case intentpb::REPLY_KIND_EDIT:
      if (stage == intentpb::PLAN_STAGE_REVIEW) return PlanMove::kRevise;
      break;
    case intentpb::REPLY_KIND_ANSWER:
      if (stage == intentpb::PLAN_STAGE_WAITING_ON_USER) return PlanMove::kAnswer;
      break;
    case intentpb::REPLY_KIND_RESUME:
      if (stage == intentpb::PLAN_STAGE_RUNNING) return PlanMove::kContinue;
      break;
    default:
      break;
  }
  return std::nullopt;  // a new request: the plan is left as it is
}

intentpb::PendingPlan PendingPlanOf(const PlanRef& plan) {
  intentpb::PendingPlan pending;
  pending.set_id(plan.plan_id);
  switch (ParsePlanStatus(plan.status).value_or(PlanStatus::kCompleted)) {
    case PlanStatus::kPendingReview:
      pending.set_stage(intentpb::PLAN_STAGE_REVIEW);
      break;
    case PlanStatus::kWaitingOnUser:
      pending.set_stage(intentpb::PLAN_STAGE_WAITING_ON_USER);
      break;
    case PlanStatus::kRunning:
    case PlanStatus::kApproved:
      pending.set_stage(intentpb::PLAN_STAGE_RUNNING);
      break;
    default:
      break;
  }
  return pending;
}

intentpb::IntentAnalysis PlanReplyAnalysis(const FlowState& last, PlanMove move) {
  intentpb::IntentAnalysis analysis;
  analysis.set_action_type(last.action_type);
  analysis.mutable_entities()->insert(last.entities.begin(), last.entities.end());
  analysis.set_confidence(1.0);
  switch (move) {
    case PlanMove::kApprove:
    case PlanMove::kContinue:
      analysis.set_reference(intentpb::REFERENCE_KIND_CONFIRMATION);
      analysis.set_reasoning("the user approved the plan, or asked to finish it");
      break;
    case PlanMove::kReject:
      analysis.set_reference(intentpb::REFERENCE_KIND_DECLINE);
      analysis.set_reasoning("the user dropped the plan");
      break;
    case PlanMove::kAnswer:
      analysis.set_reasoning("the user answered the question of a plan step");
      break;
    case PlanMove::kRevise:  // not used: the intent service reads what a revision changes
      break;
  }
  return analysis;
}

}  // namespace omniforge::orchestrator
