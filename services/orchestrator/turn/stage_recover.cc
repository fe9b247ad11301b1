// Work that failed for good in a turn (a tool call that failed permanently
// or used up its retries, a plan that could not get past a step) goes to
// the user as a question: what failed, why, and the options
// (flow/recovery.h). The flow keeps the failure; the next turn's answer
// runs the call again, goes on without it, asks which other agent to use,
// or stops.
#include "libs/core/text.h"
#include "services/orchestrator/planner/local_policy.h"
#include "services/orchestrator/turn/history.h"
#include "services/orchestrator/turn/turn_pass.h"

namespace omniforge::orchestrator {

using nlohmann::json;

namespace {

// The call again: an approved write gets a key of its own for this try
// (the executor keeps what a tool reported under the first, its failure
// too), so it runs instead of answering with the failure it recorded.
ToolStep Again(const KeptCall& call, const std::string& turn_id) {
  ToolStep step;
  step.tool = call.tool;
  step.arguments = call.arguments;
  if (!call.idempotency_key.empty())
    step.idempotency_key = call.idempotency_key + ":again:" + turn_id;
  return step;
}

}  // namespace

// The first call of the turn that failed for good, unless a guardrail cut
// it (a cancel, the turn's time: those say so themselves).
void TurnPass::NoteFailedCall(const ToolStep& step,
                              const absl::StatusOr<execpb::InvokeToolResponse>& result) {
  if (failed_ || control_.cancelled() || ctx_.Expired()) return;
  const json tool_result = result.ok() ? ParseObject(result->result_json()) : json::object();
  const absl::Status status = result.ok() ? absl::OkStatus() : result.status();
  std::string description;
  if (catalog_ != nullptr) {
    for (const execpb::ToolDescriptor& tool : catalog_->tools) {
      if (tool.name() == step.tool) description = tool.description();
    }
  }
  Recovery failed;
  failed.what = ToolInWords(step.tool);
  failed.detail = description;
  failed.reason = FailureReason(status, tool_result);
  failed.failed = {step.tool, step.arguments, step.idempotency_key};
  // Skipping a call the model planner made goes on with the model.
  failed.options =
      RecoveryOptions(/*more_after=*/true, AgentNotFound(status, tool_result, step.arguments));
  failed_ = std::move(failed);
}

// A plan that failed at a step that ran: the user is asked about that step.
void TurnPass::NoteFailedPlan(const Plan& plan) {
  if (failed_ || control_.cancelled() || ctx_.Expired()) return;
  const PlanStep* failed_step = nullptr;
  bool more_after = false;
  for (const PlanStep& step : plan.steps) {
    if (failed_step == nullptr && step.status == StepStatus::kFailed && step.attempts > 0) {
      failed_step = &step;
    } else if (step.status != StepStatus::kCompleted) {
      more_after = true;
    }
  }
  if (failed_step == nullptr) return;
  Recovery failed;
  failed.what = "step " + failed_step->id + " of the plan (" +
                core::Shortened(failed_step->description, 120) + ")";
  failed.reason = BoundedReason(failed_step->error);
  failed.plan_id = plan.id;
  failed.step_id = failed_step->id;
  failed.options = RecoveryOptions(more_after, /*agent_missing=*/false);
  failed_ = std::move(failed);
}

// Only when nothing else waits for the user (a preview, a question, a
// plan): one question at a time.
bool TurnPass::AsksAboutFailure() const {
  return failed_.has_value() && !suspended_ && !control_.cancelled() && !time_reported_ &&
         pending_after_.empty() && !move_.clarifying && !plan_held_.has_value() &&
         !plan_carried_.has_value();
}

void TurnPass::AskAboutFailure() {
  move_.asked = kAskedRecovery;
  Ask(RecoveryQuestion(*failed_));
  ContextBox::Add(box_.blockers, failed_->what + " failed: " + failed_->reason);
  ContextBox::Add(box_.next, "as the user says: try it again, go on without it, or stop");
}

// The answer to the question about a failure: the option it picks, a
// request of its own (the failure is left behind), or neither (asked
// again).
void TurnPass::HearRecovery(const intentpb::IntentAnalysis& heard) {
  const intentpb::ReplyDecision& reply = heard.reply();
  if (reply.kind() == intentpb::REPLY_KIND_ANSWER) {
    recovery_choice_ = RecoveryChoiceOf(*last_->recovery, reply.option());
  }
  if (!recovery_choice_ && (reply.kind() == intentpb::REPLY_KIND_NEW_REQUEST ||
                            reply.kind() == intentpb::REPLY_KIND_RECAP)) {
    analysis_ = heard;
    return;
  }
  analysis_ = AnalysisOfAnswer(*last_, reply, nullptr);
  recovery_unsettled_ = !recovery_choice_.has_value();
  ContextBox::Add(box_.progress, "the user answered: " + core::Shortened(request_.message(), 200));
}

// Decide, for an answer to the question about a failure: the move it
// makes (recovered_); false when it is not such an answer, or when the
// model planner goes on without the call (it plans with the failure in
// its context box).
bool TurnPass::AnswerRecovery() {
  if (!answering_ || !last_ || last_->asked != kAskedRecovery || !last_->recovery) return false;
  if (!recovery_choice_ && !recovery_unsettled_) return false;
  const Recovery& failed = *last_->recovery;
  Move move;
  move.action_type = last_->action_type;
  move.entities = last_->entities;
  if (recovery_unsettled_) {
    move.reply = "I did not catch which option you meant.";
    failed_ = failed;
  } else if (!failed.plan_id.empty() && *recovery_choice_ != RecoveryChoice::kCancel) {
    RecoverPlanStep(failed, move);
  } else {
    switch (*recovery_choice_) {
      case RecoveryChoice::kTryAgain:
        move.run.push_back(Again(failed.failed, turn_id_));
        move.reply = "Trying " + failed.what + " again.";
        break;
      case RecoveryChoice::kSkip:
        if (failed.rest.empty() && ModelPlans()) {
          ContextBox::Add(carried_.progress, "the user chose to go on without " + failed.what);
          return false;
        }
        move.reply = "OK, going on without " + failed.what + ".";
        break;
      case RecoveryChoice::kOtherAgent:
        AskForOtherAgent(move);
        break;
      case RecoveryChoice::kCancel:
        move.reply = "OK, I won't try " + failed.what + " again.";
        break;
    }
    const bool go_on = *recovery_choice_ == RecoveryChoice::kTryAgain ||
                       *recovery_choice_ == RecoveryChoice::kSkip;
    for (const KeptCall& call : failed.rest) {
      if (go_on) move.run.push_back(Again(call, turn_id_));
    }
  }
  ContextBox::Add(box_.progress, "the user chose: " + core::Shortened(request_.message(), 100));
  recovered_ = std::move(move);
  return true;
}

// The failed plan's step runs again, or the plan goes on without it.
void TurnPass::RecoverPlanStep(const Recovery& failed, Move& move) {
  const bool skip = *recovery_choice_ == RecoveryChoice::kSkip;
  const std::string doing = skip ? "Going on with the plan without step " + failed.step_id
                                 : "Running step " + failed.step_id + " of the plan again";
  const std::optional<absl::StatusOr<PlanOutcome>> outcome = RunPlan(doing, [&] {
    return runner_.plans_->RecoverStep(ctx_.who(), failed.plan_id, failed.step_id, skip,
                                       plan_events_, plan_stopped_, &model_calls_);
  });
  move.reply = PlanText(outcome, doing);
}

// "Use another agent": which one, from the user's agents; the answer goes
// on with the flow's action on the agent picked.
void TurnPass::AskForOtherAgent(Move& move) {
  for (const char* key : {"agent", "agent_name", "agent_id"}) move.entities.erase(key);
  move.clarifying = true;
  move.asked = kAskedAgent;
  if (agents_.empty()) {
    move.reply = "You have no other agent yet. Tell me which one to use, or what to do instead.";
    return;
  }
  move.reply = "Which agent should I use instead?";
  for (size_t i = 0; i < agents_.size(); ++i) {
    move.reply += "\n" + std::to_string(i + 1) + ". " + agents_[i].name;
    move.listed_agents.push_back(agents_[i].name);
  }
}

}  // namespace omniforge::orchestrator
