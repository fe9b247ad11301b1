// Stage 3, LoadFlow: the history before this message, the flow it belongs
// to (the one the last reply left waiting, a suspended one it resumes, or a
// new one) with its state from the flow store, the intent service's reading
// of the message against what waits (Interpret, stage_understand.cc), the
// plan that waits for it, the turn's kind, and the flow's context box. Ends by telling the client
// the session (SessionEvent) and whether storage could be used.
#include "libs/core/ids.h"
#include "libs/core/text.h"
#include "services/orchestrator/approvals/approval_gate.h"
#include "services/orchestrator/planner/local_policy.h"
#include "services/orchestrator/turn/history.h"
#include "services/orchestrator/turn/plan_reply.h"
#include "services/orchestrator/turn/request.h"
#include "services/orchestrator/turn/turn_pass.h"

namespace omniforge::orchestrator {

void TurnPass::LoadFlow() {
  TakeHistory();
  // The flow this message suspends, once it has stopped at a safe point (or
  // as far as it is known when it takes longer than a call's time); else the
  // one an earlier message suspended, still waiting to be resumed.
  if (interrupted_ != nullptr) {
    suspended_now_ = interrupted_->AwaitSuspension(DownstreamCall().deadline);
    if (suspended_now_ && interrupted_->ended_elsewhere()) {
      suspended_now_ = ReadSetAside(suspended_now_->flow_id);
    }
  }
  set_aside_ = suspended_now_ ? suspended_now_ : (last_ ? last_->suspended_flow : std::nullopt);
  Interpret();
  // A structured decision is never read as words (a resume, a "continue").
  resuming_ = !decides_ && set_aside_.has_value() && Reply().kind() == intentpb::REPLY_KIND_RESUME;
  FindPlan();
  continuing_ = !resuming_ && last_ &&
                (!last_->pending.empty() || last_->clarifications > 0 || plan_from_last_ ||
                 last_->recovery.has_value());
  // A plan waiting for review that this message does not answer (a
  // question, another request) keeps waiting.
  if (!resuming_ && !plan_from_last_ && last_ && last_->plan &&
      (ParsePlanStatus(last_->plan->status) == PlanStatus::kPendingReview ||
       ParsePlanStatus(last_->plan->status) == PlanStatus::kWaitingOnUser)) {
    plan_carried_ = last_->plan;
  }
  ChooseKind();
  flow_id_ = core::NewUuid();
  goal_ = request_.message();
  if (resuming_) {
    flow_id_ = set_aside_->flow_id;
    goal_ = set_aside_->goal;
  } else if (continuing_) {
    if (!last_->flow_id.empty()) flow_id_ = last_->flow_id;
    if (!last_->goal.empty()) goal_ = last_->goal;
  }
  goal_ = core::Shortened(goal_, 2000);
  control_.SetFlow({flow_id_, goal_, intentpb::ACTION_TYPE_UNSPECIFIED, {}, std::nullopt});
  LoadBox();
  Announce();
}

// The flow a turn on another replica set aside, which the turn bus names
// by its id only: the rest is what that turn saved in the flow store before
// it ended. Nothing is set aside now when it cannot be read (that turn's
// save failed, or the store is out of reach).
std::optional<SuspendedFlow> TurnPass::ReadSetAside(const std::string& flow_id) {
  stage_ = "read_flow";
  absl::StatusOr<FlowState> loaded = runner_.flows_->Load(DownstreamCall(), flow_id);
  if (loaded.ok()) return SuspendedFlowOf(*loaded);
  RecordError("downstream_unavailable",
              "the flow a newer message set aside on another replica could not be read: " +
                  std::string(loaded.status().message()));
  return std::nullopt;
}

// The window read beside the store, or the one kept after the
// conversation's last turn (taken, not copied, when this message is the
// next one), without the message just stored (and anything after it).
void TurnPass::TakeHistory() {
  const core::Identity& who = ctx_.who();
  if (window_read_.valid()) window_ = window_read_.get();
  if (window_kept_) {
    std::optional<convpb::GetContextWindowResponse> kept;
    if (user_stored_now_) {
      kept = runner_.windows_.Take(who, conversation_id_, stored_user_message_.message(),
                                   &kept_version_);
    }
    window_ = kept.has_value() ? *std::move(kept) : ReadWindow(DownstreamCall());
  }
  if (window_.ok()) {
    history_.Swap(&*window_);
    int keep = 0;
    while (
        keep < history_.messages_size() &&
        (user_spooled_ || history_.messages(keep).seq() < stored_user_message_.message().seq())) {
      ++keep;
    }
    history_.mutable_messages()->DeleteSubrange(keep, history_.messages_size() - keep);
  }
  // The window kept for the next turn starts from this history.
  history_known_ = user_stored_now_ && window_.ok();
  const std::optional<Routing> routing = LastRouting(runner_.routings_, history_);
  if (routing) last_ = LastFlow(*routing);
}

// The flow the last reply belongs to. A flow that waits (for an approval,
// an answer, its plan's review) has its state in the flow store; else, or
// when the store has none, the reply's routing tells what is known of it:
// all of it when an older version wrote the routing, the flow it names and
// what it was about otherwise (a flow that waits for nothing).
FlowState TurnPass::LastFlow(const Routing& routing) {
  FlowState last;
  if (routing.written_whole) {
    last = *routing.written_whole;
  } else {
    last.flow_id = routing.flow_id;
    last.turn_id = routing.turn_id;
    last.status = routing.status;
    last.action_type = routing.action_type;
    last.entities = routing.entities;
    last.listed_agents = routing.listed_agents;
    last.tools_used = routing.tools_used;
  }
  if (!routing.written_whole && routing.status == FlowStatus::kWaiting &&
      !routing.flow_id.empty()) {
    stage_ = "read_flow";
    absl::StatusOr<FlowState> loaded = runner_.flows_->Load(DownstreamCall(), routing.flow_id);
    if (loaded.ok()) {
      last = *std::move(loaded);
      last_loaded_ = true;
    } else if (!absl::IsNotFound(loaded.status())) {
      RecordError("downstream_unavailable",
                  "the flow's state could not be read: " + std::string(loaded.status().message()));
    }
  }
  // What was set aside is the latest reply's to say.
  last.suspended_flow = routing.suspended_flow;
  return last;
}

// What waits for this message, as the intent service is told it: the flow
// set aside (resumable), the plan, the actions previewed, the flow's own
// question. Nothing for a structured decision, which is never read as
// words.
intentpb::Pending TurnPass::PendingNow() const {
  intentpb::Pending pending;
  if (decides_) return pending;
  if (set_aside_) pending.set_resumable_goal(core::Shortened(set_aside_->goal, 2000));
  if (!last_) return pending;
  if (last_->plan) *pending.mutable_plan() = PendingPlanOf(*last_->plan);
  for (const PendingAction& action : last_->pending) {
    intentpb::PendingAction* told = pending.add_actions();
    told->set_id(action.action_id);
    told->set_tool(action.tool);
    told->set_summary(core::Shortened(action.summary, 2000));
    for (const std::string& target : PendingTargets(action)) told->add_targets(target);
    if (!action.arguments.is_object()) continue;
    for (const auto& [key, value] : action.arguments.items()) {
      (*told->mutable_settings())[key] = core::Shortened(
          value.is_string() ? value.get<std::string>()
                            : value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
          4000);
    }
  }
  if (AnswerSkipsAnalysis(*last_)) *pending.mutable_question() = PendingQuestionOf(*last_);
  return pending;
}

const intentpb::ReplyDecision& TurnPass::Reply() const {
  return heard_.ok() ? heard_->analysis().reply() : intentpb::ReplyDecision::default_instance();
}

// A plan of the flow waits for this message (its review, a step's question,
// "continue"); a resumed flow goes on with the plan it was running.
void TurnPass::FindPlan() {
  if (!PlansOn()) return;
  if (resuming_ && set_aside_->plan) {
    plan_target_ = set_aside_->plan;
    plan_move_ = PlanMove::kContinue;
  } else if (!resuming_ && last_ && last_->plan) {
    plan_target_ = last_->plan;
    plan_move_ = PlanMoveFor(*last_->plan, Reply(), request_.decision());
    plan_from_last_ = plan_move_.has_value();
  } else if (!created_ && !decides_ && Reply().kind() == intentpb::REPLY_KIND_RESUME) {
    // "continue" after the orchestrator running a plan stopped mid-turn:
    // no reply named the plan, the plan store still has it.
    absl::StatusOr<std::optional<std::string>> left =
        runner_.plans_->LatestUnfinished(ctx_.who(), conversation_id_);
    if (left.ok() && left->has_value()) {
      plan_target_ = PlanRef{**left, PlanStatusName(PlanStatus::kRunning), ""};
      plan_move_ = PlanMove::kContinue;
    }
  }
}

// An answer to the flow's own clarifying question continues the flow with
// what the intent service read it to give, as does a reply to its plan
// (unless it changes the plan: the analysis then finds what changed).
void TurnPass::ChooseKind() {
  plan_reply_ = plan_move_.has_value() && *plan_move_ != PlanMove::kRevise;
  answering_ = continuing_ && !plan_reply_ && AnswerSkipsAnalysis(*last_);
  // (A retry that did not finish runs as the kind of turn it is.)
  if (resuming_) {
    kind_ = TurnKind::kResume;
  } else if (plan_move_ || decides_ || (last_ && !last_->pending.empty())) {
    kind_ = TurnKind::kReply;
  } else if (answering_) {
    kind_ = TurnKind::kAnswer;
  } else {
    kind_ = TurnKind::kFresh;
  }
}

// The flow's context box and revision, from the flow store: read already
// for the flow the last reply left waiting, else (a resumed flow, a flow of
// routing written by an older version) read now. When the store has none,
// the box is what older routing carried, if anything.
void TurnPass::LoadBox() {
  if (continuing_ && last_loaded_) {
    box_ = last_->box;
    flow_revision_ = last_->revision;
  } else if (resuming_ || continuing_) {
    stage_ = "read_flow";
    absl::StatusOr<FlowState> loaded = runner_.flows_->Load(DownstreamCall(), flow_id_);
    if (loaded.ok()) {
      box_ = std::move(loaded->box);
      flow_revision_ = loaded->revision;
    } else {
      if (!absl::IsNotFound(loaded.status())) {
        RecordError("downstream_unavailable", "the flow's context box could not be read: " +
                                                  std::string(loaded.status().message()));
      }
      if (resuming_ && set_aside_->box) box_ = *set_aside_->box;
      if (continuing_) box_ = last_->box;
    }
  }
  box_.goal = goal_;
  ContextBox::Add(box_.constraints, ContextConstraint(request_));
  if (resuming_) ContextBox::Add(box_.progress, "resumed after an interruption");
  if (set_aside_ && !resuming_) {
    ContextBox::Add(box_.notes, "set aside, can be resumed: " + set_aside_->goal);
  }
}

void TurnPass::Announce() {
  pb::SessionEvent* session = emit_.Next().mutable_session();
  session->set_conversation_id(conversation_id_);
  session->set_conversation_created(created_);
  session->set_turn_id(turn_id_);
  session->set_flow_id(flow_id_);
  if (suspended_now_) session->set_suspended_flow_id(suspended_now_->flow_id);
  emit_.Send();
  TellLastTurn();
  emit_.State(pb::AGENT_STATE_THINKING, "Reading what you asked");
  if (Masked()) {
    emit_.Error(pb::CHAT_ERROR_CODE_SECRET_MASKED,
                "your message holds what looks like a credential: it was replaced by [REDACTED] "
                "before it was stored or read, and the assistant never sees it",
                /*fatal=*/false);
  }
  if (control_.local_only()) {
    emit_.Error(pb::CHAT_ERROR_CODE_BUDGET_EXCEEDED,
                "the LLM budget of your organisation is spent for now: this answer is made "
                "without the language model",
                /*fatal=*/false);
  }
  stage_ = "store_user_message";
  if (unstored_) {
    emit_.Error(pb::CHAT_ERROR_CODE_STORAGE_UNAVAILABLE,
                "conversation storage is unreachable: this answer is not remembered and no "
                "conversation was started; send the message again later to start one",
                /*fatal=*/false);
  } else if (user_spooled_) {
    emit_.Error(pb::CHAT_ERROR_CODE_STORAGE_UNAVAILABLE,
                "conversation storage is unreachable: answering without the history; this turn "
                "is not remembered yet, its messages are stored once storage is back",
                /*fatal=*/false);
  } else if (!window_.ok() && !control_.cancelled()) {
    stage_ = "read_window";
    emit_.Error(pb::CHAT_ERROR_CODE_STORAGE_UNAVAILABLE,
                "the conversation history could not be read; answering from this message alone",
                /*fatal=*/false, std::string(window_.status().message()));
  }
}

// What the conversation's previous turn left, as the flow its reply
// belongs to tells it: sent when there is such a reply (one the
// orchestrator wrote, with its routing).
void TurnPass::TellLastTurn() {
  if (!last_) return;
  const FlowState& last = *last_;
  pb::LastTurnContextEvent* told = emit_.Next().mutable_last_turn_context();
  told->set_turn_id(last.turn_id);
  told->set_flow_id(last.flow_id);
  switch (last.status) {
    case FlowStatus::kDone:
      told->set_flow_status(pb::FLOW_STATUS_DONE);
      break;
    case FlowStatus::kWaiting:
      told->set_flow_status(pb::FLOW_STATUS_WAITING);
      break;
    case FlowStatus::kSuspended:
      told->set_flow_status(pb::FLOW_STATUS_SUSPENDED);
      break;
  }
  told->set_action_type(PublicActionType(last.action_type));
  told->set_goal(last.goal);
  told->mutable_entities()->insert(last.entities.begin(), last.entities.end());
  for (const std::string& tool : last.tools_used) told->add_tools_used(tool);
  told->set_pending_actions(static_cast<int32_t>(last.pending.size()));
  told->set_question_pending(last.clarifications > 0 || last.recovery.has_value());
  if (last.plan) {
    told->set_plan_id(last.plan->plan_id);
    const std::optional<PlanStatus> status = ParsePlanStatus(last.plan->status);
    if (status) told->set_plan_status(ToProto(*status));
  }
  if (last.suspended_flow) told->set_suspended_flow_id(last.suspended_flow->flow_id);
  emit_.Send();
}

}  // namespace omniforge::orchestrator
