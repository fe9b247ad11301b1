#include "services/orchestrator/turn/plan_reply.h"

#include "libs/core/text.h"
#include "services/orchestrator/approvals/approval_gate.h"
#include "services/orchestrator/planner/local_policy.h"

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

std::optional<PlanMove> PlanMoveFor(const PlanRef& plan, const std::string& message,
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
  if (status == PlanStatus::kPendingReview) {
    // The approval gate's rule for a plan: a change is a revision, a
    // question leaves the plan waiting.
    switch (ReadPlanReviewReply(message)) {
      case PendingReply::kApprove:
        return PlanMove::kApprove;
      case PendingReply::kReject:
        return PlanMove::kReject;
      case PendingReply::kEdit:
        return PlanMove::kRevise;
      case PendingReply::kOther:
        return std::nullopt;
    }
  }
  if (status == PlanStatus::kWaitingOnUser) {
    // A question of the user's own is not the answer to the step's: it is
    // answered, and the step keeps waiting.
    switch (ReadPlanReviewReply(message)) {
      case PendingReply::kReject:
        return PlanMove::kReject;
      case PendingReply::kOther:
        if (IsQuestion(message)) return std::nullopt;
        return PlanMove::kAnswer;
      default:
        return PlanMove::kAnswer;
    }
  }
  if ((status == PlanStatus::kRunning || status == PlanStatus::kApproved) &&
      IsResumeRequest(message)) {
    return PlanMove::kContinue;
  }
  return std::nullopt;  // a new request: the plan is left as it is
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
