// Stage 8, Save: the reply is stored with its routing (what reading the
// history needs: the flow, where it stands, a flow set aside), the flow's
// state (what waits, the plan, the context box) beside it in the flow
// store, the caches follow, every decision of the gate goes to the audit
// trail, and `done` closes the stream with the turn's usage and how well
// the turn did (its assessment).
#include <algorithm>

#include "libs/core/ids.h"
#include "libs/core/logging.h"
#include "libs/core/text.h"
#include "services/orchestrator/plans/plan_assessment.h"
#include "services/orchestrator/turn/turn_pass.h"

namespace omniforge::orchestrator {

using nlohmann::json;

void TurnPass::Save() {
  const FlowState state = MakeFlowState();
  SaveFlowAndReply(state);
  MarkNoticesSeen();
  AuditDecisions();
  SendDone();
}

// The notices told this turn are not told again. When the executor cannot
// take that now, the next turn tells them once more: better twice than never.
void TurnPass::MarkNoticesSeen() {
  if (!notices_told_ || notice_ids_.empty()) return;
  execpb::InvokeToolRequest seen;
  seen.set_tool_name("mark_notices_seen");
  seen.set_arguments_json(json{{"notices", notice_ids_}}.dump());
  seen.set_idempotency_key("turn:" + turn_id_ + ":notices");
  const core::Call closing{ctx_.who(),
                           ctx_.Now() + std::chrono::duration_cast<std::chrono::microseconds>(
                                            runner_.options_.call_timeout)};
  absl::StatusOr<execpb::InvokeToolResponse> marked = runner_.tools_.InvokeTool(closing, seen);
  if (!marked.ok() || marked->is_error()) {
    core::LogWarn(
        "notices not marked seen",
        {{"component", "orchestrator"},
         {"stage", "mark_notices_seen"},
         {"error", marked.ok() ? marked->result_json() : std::string(marked.status().message())}});
  }
}

FlowState TurnPass::MakeFlowState() {
  FlowState state;
  state.turn_id = turn_id_;
  state.flow_id = flow_id_;
  state.conversation_id = conversation_id_;
  state.status = suspended_ ? FlowStatus::kSuspended
                 : waiting_ ? FlowStatus::kWaiting
                            : FlowStatus::kDone;
  state.goal = goal_;
  state.action_type = move_.action_type != intentpb::ACTION_TYPE_UNSPECIFIED
                          ? move_.action_type
                          : analysis_.action_type();
  state.entities = move_.entities;
  state.listed_agents = listed_;
  state.pending = pending_after_;
  state.clarifications = move_.clarifying ? (last_ ? last_->clarifications : 0) + 1 : 0;
  state.asked = move_.asked;
  if (move_.asked == kAskedRecovery) state.recovery = failed_;
  state.tools_used = tools_used_;
  if (plan_held_) {
    state.plan = PlanRef{plan_held_->id, PlanStatusName(plan_held_->status), plan_held_->objective,
                         plan_digest_, plan_expires_};
  } else if (plan_carried_ && !suspended_ && pending_after_.empty()) {
    state.plan = plan_carried_;
  } else if (plan_carried_ && !suspended_) {
    // A newer preview replaces the plan that waited: a "yes" now is for it.
    decisions_.push_back({plan_carried_->plan_id, plan_carried_->digest, kCreatePlanTool,
                          plan_carried_->objective, execpb::TOOL_RISK_UNSPECIFIED,
                          pb::ACTION_OUTCOME_STALE, "words"});
  }
  state.box = box_;
  if (suspended_) {
    // A newer turn on another replica reads the same from the flow store.
    SuspendedFlow self = SuspendedFlowOf(state);
    state.suspended_flow = self;
    control_.Ended(std::move(self));  // the newer turn goes on from here
  } else if (!resuming_) {
    state.suspended_flow = std::move(set_aside_);
  }
  return state;
}

// The flow's state is written while the reply is stored: one statement, for
// a flow that spans turns (it waits, is suspended, or was stored by an
// earlier turn), replacing the revision this turn read. A flow done within
// its first turn needs no state: it is never read again, and most turns are
// such flows. The turn's closing writes get a call's time of their own,
// also when the turn ran out of time: what was done is kept.
void TurnPass::SaveFlowAndReply(const FlowState& state) {
  const core::Identity& who = ctx_.who();
  convpb::AppendMessageRequest reply;
  reply.set_conversation_id(conversation_id_);
  reply.set_role(convpb::ROLE_ASSISTANT);
  reply.set_content(text_.empty() ? " " : text_);
  reply.set_idempotency_key("turn:" + turn_id_ + ":assistant");
  const json routing_json = RoutingToJson(RoutingOf(state));
  reply.set_metadata_json(routing_json.dump());
  // Not cancelled with the turn (null cancel), and not cut by its deadline.
  const core::Call closing{who, ctx_.Now() + std::chrono::duration_cast<std::chrono::microseconds>(
                                                 runner_.options_.call_timeout)};
  stage_ = "store_reply";
  core::SideCall<absl::Status> flow_saved;
  if (!unstored_ && (waiting_ || suspended_ || continuing_ || resuming_)) {
    flow_saved = runner_.side_calls_.Async(
        [this, closing, &state] { return runner_.flows_->Save(closing, state, flow_revision_); });
  }
  stored_reply_ =
      unstored_ ? std::optional<convpb::AppendMessageResponse>() : Store(reply, closing);
  const auto& stored = *stored_reply_;
  if (stored.ok() && !stored->has_value() && !unstored_ && !user_spooled_) {
    emit_.Error(pb::CHAT_ERROR_CODE_STORAGE_UNAVAILABLE,
                "conversation storage became unreachable: the reply is stored once it is back",
                /*fatal=*/false);
  }
  if (!stored.ok()) {
    emit_.Error(pb::CHAT_ERROR_CODE_STORAGE_UNAVAILABLE,
                "the reply could not be stored; the next turn will not know it",
                /*fatal=*/false, std::string(stored.status().message()));
    core::LogWarn("reply not stored", {{"component", "orchestrator"},
                                       {"stage", "store_reply"},
                                       {"error", std::string(stored.status().message())}});
  }
  const bool stored_now = stored.ok() && stored->has_value() && !(*stored)->deduplicated();
  // Read back from the stored JSON, exactly as a later turn (or another
  // replica) would parse it, only without the text.
  if (stored_now) {
    runner_.routings_.Remember((*stored)->message().id(), RoutingFromJson(routing_json));
  }
  if (history_known_ && stored_now) {
    runner_.windows_.Advance(who, conversation_id_, std::move(history_),
                             stored_user_message_.message(), (*stored)->message());
  } else if (!unstored_) {
    runner_.windows_.Forget(who, conversation_id_);
  }
  if (!flow_saved.valid()) return;
  if (absl::Status saved = flow_saved.get(); !saved.ok()) ReportFlowNotSaved(saved);
}

// The reply is stored, its flow's state is not (the store unreachable, or
// ABORTED: a concurrent turn wrote the flow first, and its state stands).
// What a waiting reply waits for (an approval, an answer, a plan's review)
// cannot be found by the next message, so the user is told so before
// `done` rather than have a "yes" approve nothing in silence. (A suspended
// flow's state also went to the newer turn, through the control.)
void TurnPass::ReportFlowNotSaved(const absl::Status& saved) {
  stage_ = "store_flow";
  core::LogWarn("flow not stored", {{"component", "orchestrator"},
                                    {"stage", "store_flow"},
                                    {"error", std::string(saved.message())}});
  if (!waiting_) {
    RecordError("downstream_unavailable",
                "the flow's state could not be stored: " + std::string(saved.message()));
    return;
  }
  // Filed with its cause by the error event.
  emit_.Error(pb::CHAT_ERROR_CODE_STORAGE_UNAVAILABLE,
              absl::IsAborted(saved)
                  ? "this conversation moved on meanwhile: a reply to this answer will not find "
                    "what it waits for; ask again"
                  : "what this answer waits for could not be stored: a reply to it will not "
                    "find it; ask again",
              /*fatal=*/false, std::string(saved.message()));
}

// Every decision of the gate, for the audit trail (ListActions).
void TurnPass::AuditDecisions() {
  if (!core::IsUuid(conversation_id_)) return;
  for (const GateDecision& d : decisions_) {
    ActionDecisionRecord record;
    record.tenant_id = ctx_.who().tenant_id;
    record.user_id = ctx_.who().user_id;
    record.conversation_id = conversation_id_;
    record.turn_id = turn_id_;
    record.action_id = d.action_id;
    record.digest = d.digest;
    record.tool = d.tool;
    record.summary = d.summary;
    record.risk = d.risk;
    record.outcome = d.outcome;
    record.decided_by = d.via == "policy" ? "policy" : ctx_.who().user_id;
    record.via = d.via;
    if (absl::Status kept = runner_.audit_.Record(record); !kept.ok()) {
      stage_ = "store_decision";
      core::LogWarn("approval decision not recorded", {{"component", "orchestrator"},
                                                       {"stage", "store_decision"},
                                                       {"error", std::string(kept.message())}});
      RecordError("downstream_unavailable",
                  "an approval decision could not be recorded: " + std::string(kept.message()));
    }
  }
}

std::optional<Assessment> TurnPass::AssessTurn() const {
  if (suspended_ || control_.cancelled()) return std::nullopt;
  if (plan_assessed_.has_value()) return plan_assessed_;
  Evidence e;
  ToolWork calls;
  for (const auto& [tool, failed] : tool_runs_) {
    e.outputs.push_back({"the result of " + tool, failed ? Presence::kMissing : Presence::kFound});
    ++calls.calls;
    if (failed) ++calls.failed_calls;
  }
  if (calls.calls > 0) e.work.push_back(calls);
  if (!plan_failure_.empty()) {
    e.outputs.push_back({"the plan", Presence::kMissing});
    e.work.push_back({"the plan", 0, 0, plan_failure_, std::nullopt});
  }
  const RequestClarity clarity = ClarityOf(analysis_);
  e.intent_confidence = clarity.confidence;
  e.ambiguous = clarity.ambiguous;
  if (move_.clarifying) e.open_questions.push_back(core::Shortened(text_, 300));
  if (move_.asked == kAskedRecovery && failed_) {
    e.open_questions.push_back("what to do now that " + failed_->what + " failed");
  }
  for (const PendingAction& action : pending_after_) {
    e.open_questions.push_back("may I go ahead with: " + action.summary);
  }
  if (plan_held_.has_value() && plan_held_->status == PlanStatus::kPendingReview) {
    e.open_questions.push_back("may I run the plan for \"" + plan_held_->objective + "\"?");
  }
  return Assess(e);
}

void TurnPass::SendDone() {
  pb::DoneEvent* done = emit_.Next().mutable_done();
  if (const std::optional<Assessment> assessed = AssessTurn(); assessed.has_value()) {
    *done->mutable_assessment() = ToProto(*assessed);
  }
  done->set_is_final(!waiting_ && !suspended_);
  const auto& stored = *stored_reply_;
  if (stored.ok() && stored->has_value()) {
    done->set_assistant_message_id((*stored)->message().id());
  }
  pb::TurnUsage* usage = done->mutable_usage();
  usage->set_tool_calls(tool_calls_);
  usage->set_llm_calls(model_usage_.llm_calls);
  usage->set_prompt_tokens(model_usage_.prompt_tokens);
  usage->set_completion_tokens(model_usage_.completion_tokens);
  usage->set_cost_usd(model_usage_.cost_usd);
  usage->set_duration_ms(ctx_.ElapsedMs());
  emit_.Send();
}

}  // namespace omniforge::orchestrator
