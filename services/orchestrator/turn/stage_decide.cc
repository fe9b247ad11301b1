// Stage 5, Decide: the turn's move. In order: the approval gate reads the
// message (or the client's decision) for the actions the last turn left
// pending; a reply to the flow's plan goes to the plan engine; else the
// model planner (which runs what the gate lets run unasked itself) or the
// local policy decides. A flow asked to suspend stops here at a safe point.
#include "libs/core/ids.h"
#include "libs/core/logging.h"
#include "services/orchestrator/planner/email_flow.h"
#include "services/orchestrator/planner/meeting_flow.h"
#include "services/orchestrator/turn/gate_moves.h"
#include "services/orchestrator/turn/history.h"
#include "services/orchestrator/turn/turn_pass.h"

namespace omniforge::orchestrator {

void TurnPass::Decide() {
  PrepareInput();
  ResolveGate();
  if (TrySuspend()) {
    ContextBox::Add(box_.next, "plan the answer to: " + goal_);
  } else if (plan_move_) {
    ReplyToPlan();
  } else if (AnswerRecovery()) {
    // recovered_: what the answer about the failure does
  } else if (ModelPlans() && !approval_) {
    AskModel();
  }
  if (suspended_) {
    move_.propose.clear();  // drafted again when the flow resumes
  } else if (approval_) {
    move_ = *std::move(approval_);
  } else if (recovered_) {
    move_ = *std::move(recovered_);
  } else if (!plan_move_ && (!ModelPlans() || !planned_.answered)) {
    // The email flow's calls run as the turn runs any tool.
    const EmailToolRun email_calls =
        [this](const ToolStep& call) -> std::optional<std::pair<nlohmann::json, bool>> {
      const std::optional<ToolRun> ran = RunTool(call, nullptr);
      if (!ran) return std::nullopt;
      return std::pair(ParseObject(ran->result_json), ran->is_error);
    };
    move_ = IsMeetingTurn(input_) ? DecideMeeting(MeetingAtStart(input_))
            : IsEmailTurn(input_) ? RunEmailFlow(EmailAtStart(input_), email_calls)
                                  : DecideLocally(input_);
  }
}

// The approval gate reads this message (or the client's decision) for the
// actions the last turn left pending: it approves exactly those, drops
// them, has them revised, or leaves them pending. The policy as it is now
// counts: a tool denied since the preview never runs.
void TurnPass::ResolveGate() {
  const ApprovalPolicy& policy = runner_.options_.approvals;
  if (!resuming_ && !plan_move_ && last_ && !last_->pending.empty()) {
    gate_ = ResolvePending(request_.message(), request_.decision(), SaidNow(), last_->pending,
                           agents_, ctx_.NowMicros(), policy.pending_ttl);
    for (auto it = gate_->approved.begin(); it != gate_->approved.end();) {
      if (policy.DecideCall(it->tool, it->risk, !it->risk_reasons.empty()) != GateVerdict::kDeny) {
        ++it;
        continue;
      }
      for (GateDecision& d : gate_->decisions) {
        if (d.action_id == it->action_id) d.outcome = pb::ACTION_OUTCOME_DENIED;
      }
      gate_->reply_text += (gate_->reply_text.empty() ? "" : " ") +
                           std::string("The approval policy does not allow ") + it->summary +
                           " It was not run.";
      it = gate_->approved.erase(it);
    }
    decisions_ = gate_->decisions;
    approval_ = GateMove(*gate_, *last_, !ModelPlans(), input_);
    // A change to a meeting's booking ("make it 4pm instead") finds the
    // time anew and previews the booking again.
    if (gate_->reply == PendingReply::kEdit && !ModelPlans()) {
      if (std::optional<MeetingState> changed = MeetingChanged(*last_, analysis_)) {
        approval_ = DecideMeeting(*std::move(changed));
      }
    }
    // What the gate decided is not the policy's to decide again.
    if (gate_->reply != PendingReply::kOther) input_.last->pending.clear();
  } else if (decides_ && !plan_move_) {
    Move refused;
    refused.reply = "Nothing ran: no action " + request_.decision().action_id() +
                    " is waiting for your decision (it was decided already, replaced, or never "
                    "existed).";
    emit_.Error(pb::CHAT_ERROR_CODE_APPROVAL_REFUSED, refused.reply, /*fatal=*/false);
    approval_ = std::move(refused);
  }
  if (gate_ && !gate_->refusal.empty()) {
    emit_.Error(pb::CHAT_ERROR_CODE_APPROVAL_REFUSED, gate_->refusal, /*fatal=*/false);
  }
}

// The analysis as the gate reads it: without the entities the flow had
// already, which the intent service carries over from the history ("yes"
// after a preview in a flow about notion still has data_source=notion).
// They are not this reply's, and change nothing the preview showed.
intentpb::IntentAnalysis TurnPass::SaidNow() const {
  intentpb::IntentAnalysis said = analysis_;
  for (const auto& [key, value] : last_->entities) {
    auto it = said.entities().find(key);
    if (it != said.entities().end() && it->second == value) said.mutable_entities()->erase(key);
  }
  return said;
}

// The user's reply to the flow's plan goes to the engine.
void TurnPass::ReplyToPlan() {
  move_.action_type = analysis_.action_type();
  move_.entities.insert(analysis_.entities().begin(), analysis_.entities().end());
  if (last_) move_.entities.insert(last_->entities.begin(), last_->entities.end());
  std::string doing;
  const PlanCall call = PlanCallFor(*plan_move_, doing);
  const std::optional<absl::StatusOr<PlanOutcome>> outcome = RunPlan(doing, call);
  move_.reply = PlanText(outcome, doing);
  AuditPlanReply(outcome);
  const std::string& plan_id = plan_target_->plan_id;
  // A plan that could not be reached now still waits (another call acts
  // on it, or storage is down); one that moved on or is gone does not.
  if (outcome && !outcome->ok() && !absl::IsFailedPrecondition(outcome->status()) &&
      !absl::IsNotFound(outcome->status())) {
    auto kept = runner_.plans_->Get(ctx_.who(), plan_id);
    if (kept.ok()) plan_held_ = *std::move(kept);
  }
  // An approval of a plan that changed since its preview ran nothing: the
  // plan as it is now is shown for approval.
  if (*plan_move_ == PlanMove::kApprove && outcome && !outcome->ok() &&
      absl::IsFailedPrecondition(outcome->status())) {
    emit_.Error(pb::CHAT_ERROR_CODE_APPROVAL_REFUSED, std::string(outcome->status().message()),
                /*fatal=*/false);
    decisions_.push_back({plan_id, plan_target_->digest, kCreatePlanTool, plan_target_->objective,
                          execpb::TOOL_RISK_UNSPECIFIED, pb::ACTION_OUTCOME_STALE,
                          decides_ ? "api" : "words"});
    absl::StatusOr<PlanOutcome> again =
        runner_.plans_->Preview(ctx_.who(), plan_id, MakePlanContext(), plan_events_);
    if (again.ok()) {
      plan_held_ = again->plan;
      plan_digest_ = again->digest;
      plan_expires_ = again->expires_at_micros;
      move_.reply += "\n" + PlanReplyText(again->plan);
    }
  }
}

// The engine's call for `move`, and what it is doing in words.
TurnPass::PlanCall TurnPass::PlanCallFor(PlanMove move, std::string& doing) {
  PlanEngine& plans = *runner_.plans_;
  const core::Identity& who = ctx_.who();
  const std::string plan_id = plan_target_->plan_id;
  switch (move) {
    case PlanMove::kApprove:
      if (plan_target_->digest.empty() || ctx_.NowMicros() >= plan_target_->expires_at_micros) {
        // Approved too late: shown again, nothing runs.
        doing = "Showing the plan again (its preview expired)";
        return [&plans, &who, plan_id, this] {
          return plans.Preview(who, plan_id, MakePlanContext(), plan_events_);
        };
      }
      doing = "Running the plan";
      return [&plans, &who, plan_id, this] {
        return plans.Approve(who, plan_id, plan_events_, plan_stopped_, plan_target_->digest,
                             &model_calls_);
      };
    case PlanMove::kContinue:
      doing = "Running what is left of the plan";
      return [&plans, &who, plan_id, this] {
        return plans.Execute(who, plan_id, plan_events_, plan_stopped_, &model_calls_);
      };
    case PlanMove::kAnswer:
      doing = "Going on with the plan";
      return [&plans, &who, plan_id, this] {
        return plans.AnswerQuestion(who, plan_id, request_.message(), plan_events_, plan_stopped_,
                                    &model_calls_);
      };
    case PlanMove::kRevise:
      doing = "Revising the plan";
      return [&plans, &who, plan_id, this] {
        return plans.Revise(who, plan_id, request_.message(), MakePlanContext(), plan_events_);
      };
    case PlanMove::kReject:
      doing = "Dropping the plan";
      return
          [&plans, &who, plan_id, this] { return plans.Reject(who, plan_id, request_.message()); };
  }
  return nullptr;
}

// The user's decision on a plan previewed for review, for the audit.
void TurnPass::AuditPlanReply(const std::optional<absl::StatusOr<PlanOutcome>>& outcome) {
  if (!outcome || !outcome->ok() ||
      ParsePlanStatus(plan_target_->status) != PlanStatus::kPendingReview) {
    return;
  }
  pb::ActionOutcome decided = pb::ACTION_OUTCOME_UNSPECIFIED;
  if (*plan_move_ == PlanMove::kReject) decided = pb::ACTION_OUTCOME_REJECTED;
  if (*plan_move_ == PlanMove::kRevise) decided = pb::ACTION_OUTCOME_EDITED;
  if (*plan_move_ == PlanMove::kApprove) {
    decided = (*outcome)->plan.status == PlanStatus::kPendingReview
                  ? pb::ACTION_OUTCOME_EXPIRED  // shown again, not run
                  : pb::ACTION_OUTCOME_APPROVED;
  }
  decisions_.push_back({plan_target_->plan_id, plan_target_->digest, kCreatePlanTool,
                        plan_target_->objective, execpb::TOOL_RISK_UNSPECIFIED, decided,
                        decides_ ? "api" : "words"});
}

}  // namespace omniforge::orchestrator
