// Stage 6, Act, for plans: one call of the plan engine per turn, under the
// same guardrails as a tool call; its events go out with the turn's. The
// plan it leaves waiting for the user (for review, for an answer, or
// stopped before its end: cancelled, out of time, suspended) is named in
// the routing.
#include "absl/cleanup/cleanup.h"
#include "libs/core/text.h"
#include "services/orchestrator/plans/plan_assessment.h"
#include "services/orchestrator/turn/history.h"
#include "services/orchestrator/turn/turn_pass.h"

namespace omniforge::orchestrator {

PlanContext TurnPass::MakePlanContext() {
  PlanContext context;
  context.context_type = context_type_;
  context.entity_id = request_.entity_id();
  context.intent = input_.intent;
  context.tools = runner_.Catalog(DownstreamCall())->tools;
  context.usage = &model_calls_;
  context.local_only = control_.local_only();
  // Plans are made and revised by the model that plans the turn.
  if (ModelPlans()) context.model = &PlannerModel();
  return context;
}

// nullopt: a guardrail stopped the turn first (its event is out).
std::optional<absl::StatusOr<PlanOutcome>> TurnPass::RunPlan(const std::string& doing,
                                                             const PlanCall& call) {
  const std::string outer_stage = std::exchange(stage_, "plan");
  absl::Cleanup restore_stage = [&] { stage_ = outer_stage; };
  if (TrySuspend()) {
    ContextBox::Add(box_.next, doing + ": " + goal_);
    return std::nullopt;
  }
  if (StoppedBeforeCall()) return std::nullopt;
  ++tool_calls_;
  tools_used_.emplace_back(kCreatePlanTool);
  emit_.State(pb::AGENT_STATE_EXECUTING_PLAN, doing);
  absl::StatusOr<PlanOutcome> outcome = call();
  // A newer message stopped the plan at its next step: the flow, with the
  // plan in it, is set aside for that message (Save).
  if (!control_.cancelled()) TrySuspend();
  // Cut by the turn's deadline (the plan stops at its next step): the
  // time guardrail's end, whichever way the plan came.
  const bool out_of_time = !control_.cancelled() && !control_.suspend_requested() && ctx_.Expired();
  if (!outcome.ok()) {
    if (out_of_time) {
      ReportOutOfTime();
    } else if (!control_.cancelled()) {
      emit_.Error(pb::CHAT_ERROR_CODE_PLAN_FAILED, doing + " failed", /*fatal=*/false,
                  std::string(outcome.status().message()));
    }
    ContextBox::Add(box_.blockers, "the plan: " + std::string(outcome.status().message()));
    if (!control_.cancelled()) plan_failure_ = std::string(outcome.status().message());
    return outcome;
  }
  if (out_of_time && (outcome->plan.status == PlanStatus::kApproved ||
                      outcome->plan.status == PlanStatus::kRunning)) {
    ReportOutOfTime();
  }
  RecordExecutionMode(outcome->plan.mode);
  HoldPlan(*outcome);
  return outcome;
}

// The turn's usage row says how the plan it made or acted on is carried
// out (its steps' rows say it too: the plan engine sets theirs).
void TurnPass::RecordExecutionMode(ExecutionMode mode) {
  UsageAttribution who = model_calls_.attribution();
  who.execution_mode = ExecutionModeName(mode);
  model_calls_.Attribute(std::move(who));
}

// Where the call left the plan: held for the routing when it waits for the
// user or stopped before its end.
void TurnPass::HoldPlan(const PlanOutcome& outcome) {
  const Plan& plan = outcome.plan;
  plan_held_.reset();
  plan_digest_ = outcome.digest;
  plan_expires_ = outcome.expires_at_micros;
  switch (plan.status) {
    case PlanStatus::kPendingReview:
      ContextBox::Add(box_.blockers, "waiting for the user's review of the plan");
      plan_held_ = plan;
      break;
    case PlanStatus::kWaitingOnUser:
      ContextBox::Add(box_.blockers, "a plan step waits for the user's answer");
      plan_held_ = plan;
      break;
    case PlanStatus::kApproved:
    case PlanStatus::kRunning:
      ContextBox::Add(box_.blockers, "the plan stopped before its end");
      ContextBox::Add(box_.next, "finish the plan when the user says continue");
      plan_held_ = plan;
      break;
    case PlanStatus::kFailed:
      NoteFailedPlan(plan);
      break;
    default:
      break;
  }
  ContextBox::Add(box_.progress, "plan " + PlanStatusName(plan.status) + ": " +
                                     core::Shortened(plan.objective, 200));
  plan_words_ = PlanReplyText(plan);
  plan_assessed_.reset();
  if (PlanRan(plan)) plan_assessed_ = AssessPlan(plan);
}

std::string TurnPass::PlanText(const std::optional<absl::StatusOr<PlanOutcome>>& outcome,
                               const std::string& doing) {
  if (!outcome) return "";
  if (!outcome->ok()) return doing + " did not work: " + std::string(outcome->status().message());
  return PlanReplyText((*outcome)->plan);
}

// agent_create_plan, as the model called it or the local policy asked.
std::optional<absl::StatusOr<PlanOutcome>> TurnPass::MakePlan(const PlanRequest& asked) {
  // Also when the plan is never made: its generation's calls were for it.
  RecordExecutionMode(asked.mode);
  return RunPlan(
      asked.mode == ExecutionMode::kAutoExecute ? "Making and running a plan" : "Making a plan",
      [this, &asked] {
        return runner_.plans_->CreatePlan(ctx_.who(), conversation_id_, asked, MakePlanContext(),
                                          plan_events_, plan_stopped_);
      });
}

std::optional<ToolRun> TurnPass::CreatePlan(const std::string& arguments_json) {
  absl::StatusOr<PlanRequest> asked = ParsePlanRequest(arguments_json);
  if (!asked.ok()) return ToolRun{ErrorResult(asked.status()).dump(), true};
  std::optional<absl::StatusOr<PlanOutcome>> outcome = MakePlan(*asked);
  if (!outcome) return std::nullopt;
  if (!outcome->ok()) return ToolRun{ErrorResult(outcome->status()).dump(), true};
  return ToolRun{(*outcome)->tool_result_json, false};
}

}  // namespace omniforge::orchestrator
