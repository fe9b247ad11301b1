// Stage 4, Understand: what the message wants. The intent service read it
// in LoadFlow (Interpret), told what waits for it: a resume, a reply to the
// flow's plan and an answer to the flow's own question continue the flow
// with its own action and entities and what the reply adds; anything else
// is the service's analysis. Emits the IntentEvent.
#include "libs/core/logging.h"
#include "libs/llm/model_call_proto.h"
#include "services/intent/entities/email_entities.h"
#include "services/intent/entities/entities.h"
#include "services/orchestrator/planner/email_flow.h"
#include "services/orchestrator/planner/local_policy.h"
#include "services/orchestrator/planner/meeting_flow.h"
#include "services/orchestrator/turn/history.h"
#include "services/orchestrator/turn/turn_pass.h"

namespace omniforge::orchestrator {

void TurnPass::Understand() {
  intentpb::IntentAnalysis heard = Heard();
  if (kind_ == TurnKind::kResume) {
    analysis_ = ResumeAnalysis(*set_aside_);
  } else if (plan_reply_) {
    analysis_ = PlanReplyAnalysis(last_.value_or(FlowState{}), *plan_move_);
  } else if (answering_) {
    AnswerOrAsk(heard);
  } else {
    analysis_ = std::move(heard);
  }
  // The meeting and email flows' progress is their own state, not what the
  // user said.
  intentpb::IntentAnalysis shown = analysis_;
  for (auto it = shown.mutable_entities()->begin(); it != shown.mutable_entities()->end();) {
    it = IsMeetingProgress(it->first) || IsEmailProgress(it->first)
             ? shown.mutable_entities()->erase(it)
             : std::next(it);
  }
  *emit_.Next().mutable_intent()->mutable_analysis() = PublicAnalysis(shown);
  emit_.Send();
  for (const auto& [key, value] : shown.entities()) box_.entities[key] = value;
  ContextBox::Add(box_.notes, "understood as " +
                                  intentpb::ActionType_Name(analysis_.action_type()) + " (" +
                                  intentpb::IntentSource_Name(analysis_.source()) + ")");
  TellOntology();
}

// What the turn knows of the user's workspace before it plans: the
// client's context, what the message and the flow name, the user's agents
// and the executor's tools (listed now, or kept from a listing less than a
// minute old).
void TurnPass::TellOntology() {
  catalog_ = runner_.Catalog(DownstreamCall());
  pb::OntologyLoadedEvent* told = emit_.Next().mutable_ontology_loaded();
  told->set_context_type(emit_.context_type());
  told->set_entity_id(request_.entity_id());
  told->mutable_entities()->insert(box_.entities.begin(), box_.entities.end());
  for (const AgentInfo& agent : agents_) told->add_agent_names(agent.name);
  told->set_agents_listed(agent_list_.has_value());
  for (const execpb::ToolDescriptor& tool : catalog_->tools) told->add_tool_names(tool.name());
  told->set_time_zone(time_zone_);
  emit_.Send();
}

// The answer to the flow's own question, merged into the flow. In local
// mode, one that settles nothing may be a request of its own ("where were
// we?", "create a new one that does both"): the intent service's analysis
// is taken when its reading says so. (The model planner reads such answers
// itself.)
void TurnPass::AnswerOrAsk(const intentpb::IntentAnalysis& heard) {
  if (last_->asked == kAskedRecovery) {
    HearRecovery(heard);
    return;
  }
  // The meeting flow's question: its answer goes on with the meeting, or,
  // when it asks for another meeting, starts that one. The same for the
  // email flow's.
  if (last_->asked == kAskedMeeting && !ModelPlans()) {
    const bool another = heard.entities().contains(intent::kAttendeesEntity);
    analysis_ = another ? heard : MeetingAnswer(*last_, heard, request_.message());
    ContextBox::Add(box_.progress, "the user answered: " + request_.message());
    return;
  }
  if (last_->asked == kAskedEmail && !ModelPlans()) {
    const bool another = heard.entities().contains(intent::kEmailToEntity);
    analysis_ = another ? heard : EmailAnswer(*last_, heard, request_.message());
    ContextBox::Add(box_.progress, "the user answered: " + request_.message());
    return;
  }
  bool settles = true;
  analysis_ = AnalysisOfAnswer(*last_, heard.reply(), &settles);
  const intentpb::ReplyKind kind = heard.reply().kind();
  if (!settles && !ModelPlans() &&
      (kind == intentpb::REPLY_KIND_RECAP || kind == intentpb::REPLY_KIND_NEW_REQUEST)) {
    analysis_ = heard;
    return;
  }
  ContextBox::Add(box_.progress, "the user answered: " + request_.message());
}

// The user's agents, for the intent service and the planner: listed beside
// the store (by the early analysis, or on a side call of their own).
void TurnPass::ReadAgents() {
  if (early_.valid()) early_analysis_ = early_.get();
  // The model calls the intent service made for this turn, used or not:
  // recorded with the turn's own once its attribution is known.
  if (early_analysis_) {
    intent_calls_ = std::move(early_analysis_->discarded_calls);
    AddIntentCalls(early_analysis_->response);
  }
  absl::StatusOr<execpb::InvokeToolResponse> listed =
      early_analysis_ ? std::move(early_analysis_->listed) : agents_listed_.get();
  if (listed.ok() && !listed->is_error()) {
    AgentListing listing = early_analysis_ ? std::move(early_analysis_->listing)
                                           : ListingFromResult(ParseObject(listed->result_json()));
    agents_ = std::move(listing.agents);
    time_zone_ = std::move(listing.time_zone);
    notices_ = std::move(listing.notices);
    notice_ids_ = std::move(listing.notice_ids);
    runner_.SawAgents(ctx_.who(), agents_);
    agent_list_ = *std::move(listed);  // a planner step listing them again reuses it
  } else if (!listed.ok()) {
    stage_ = "list_agents";
    core::LogWarn("agents could not be listed",
                  {{"component", "orchestrator"},
                   {"stage", "list_agents"},
                   {"error", std::string(listed.status().message())}});
    RecordError("downstream_unavailable",
                "the agents could not be listed: " + std::string(listed.status().message()));
  }
}

void TurnPass::AddIntentCalls(const absl::StatusOr<intentpb::AnalyzeIntentResponse>& answer) {
  if (answer.ok()) {
    intent_calls_.insert(intent_calls_.end(), answer->model_calls().begin(),
                         answer->model_calls().end());
  }
}

// The intent service's reading of the message, told what waits for it
// (PendingNow). With nothing waiting, the early analysis serves when it
// read the window this turn took (all of it is history: the message came
// right after it), with the same agents.
void TurnPass::Interpret() {
  ReadAgents();
  const intentpb::Pending pending = PendingNow();
  const bool waits = !pending.resumable_goal().empty() || pending.actions_size() > 0 ||
                     pending.plan().stage() != intentpb::PLAN_STAGE_UNSPECIFIED ||
                     pending.question().kind() != intentpb::QUESTION_KIND_UNSPECIFIED;
  if (!waits && early_analysis_ && early_analysis_->window != 0 &&
      early_analysis_->window == kept_version_) {
    heard_ = std::move(early_analysis_->response);
    return;
  }
  intentpb::AnalyzeIntentRequest analyze;
  analyze.set_message(request_.message());
  analyze.set_context_type(InternalContextType(request_.context_type()));
  analyze.set_local_only(control_.local_only());
  AddHistory(runner_.routings_, history_, analyze);
  AddAgents(agents_, analyze);
  if (waits) *analyze.mutable_pending() = pending;
  heard_ = runner_.understanding_.AnalyzeIntent(DownstreamCall(), analyze);
  AddIntentCalls(heard_);
}

// The intent service's analysis; without it, an UNKNOWN analysis that
// decides nothing of what waits (and a non-fatal error event unless the
// turn was cancelled).
intentpb::IntentAnalysis TurnPass::Heard() {
  if (heard_.ok()) return heard_->analysis();
  intentpb::IntentAnalysis analysis;
  analysis.set_action_type(intentpb::ACTION_TYPE_UNKNOWN);
  if (control_.cancelled()) {
    analysis.set_reasoning("the turn was cancelled");
    return analysis;
  }
  analysis.set_reasoning("the intent service could not be reached");
  stage_ = "analyze_intent";
  emit_.Error(pb::CHAT_ERROR_CODE_INTERNAL,
              "understanding is unavailable right now; answering with what I can",
              /*fatal=*/false, std::string(heard_.status().message()));
  core::LogWarn("intent analysis failed", {{"component", "orchestrator"},
                                           {"stage", "analyze_intent"},
                                           {"error", std::string(heard_.status().message())}});
  return analysis;
}

// What the planners are given. From here on every model call of the turn
// is recorded for it: the planner's, and a plan's generation and reviews,
// whichever way the plan came (the model, the policy, the user's answer to
// a plan); the intent service's calls are recorded now.
void TurnPass::PrepareInput() {
  input_ = PolicyInput{
      analysis_, resuming_ ? goal_ : request_.message(), resuming_ ? std::nullopt : last_,
      agents_,   runner_.options_.max_clarifications,    goal_};
  context_type_ = request_.context_type() == pb::CONTEXT_TYPE_UNSPECIFIED
                      ? intentpb::CONTEXT_TYPE_GLOBAL
                      : InternalContextType(request_.context_type());
  input_.context_type = context_type_;
  model_calls_.Attribute(UsageAttribution{ctx_.who().tenant_id, ctx_.who().user_id,
                                          conversation_id_, turn_id_,
                                          intentpb::ContextType_Name(context_type_)});
  for (const ::omniforge::llm::v1::ModelCall& call : intent_calls_) {
    const llm::UsageRecord record = llm::FromProto(call);
    model_usage_.Add(record);
    model_calls_.Record(record);
  }
  input_.plans = PlansOn();
  input_.history = PolicyHistory(runner_.routings_, history_);
  input_.time_zone = time_zone_;
  // The local policy resolves what the message refers to with the flow's
  // entities too ("run it" once the flow has named an agent); the
  // message's own entities win.
  if (resuming_ || continuing_) {
    input_.intent.mutable_entities()->insert(box_.entities.begin(), box_.entities.end());
  }
  // The planner sees the flow as the last turn left it; what blocks it and
  // what comes next are this turn's to say.
  carried_ = box_;
  box_.blockers.clear();
  box_.next.clear();
}

}  // namespace omniforge::orchestrator
