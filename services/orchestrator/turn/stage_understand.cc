// Stage 4, Understand: what the message wants. A resume, a reply to the
// flow's plan and an answer to the flow's own question are read from the
// flow itself; anything else goes to the intent service with the history
// and the user's agents (or takes the analysis made early, beside the
// store, when it read exactly this history). Emits the IntentEvent.
#include "libs/core/logging.h"
#include "libs/llm/model_call_proto.h"
#include "services/orchestrator/planner/local_policy.h"
#include "services/orchestrator/turn/history.h"
#include "services/orchestrator/turn/turn_pass.h"

namespace omniforge::orchestrator {

void TurnPass::Understand() {
  ReadAgents();
  if (kind_ == TurnKind::kResume) {
    analysis_ = ResumeAnalysis(*set_aside_);
  } else if (plan_reply_) {
    analysis_ = PlanReplyAnalysis(last_.value_or(FlowState{}), *plan_move_);
  } else if (answering_) {
    AnswerOrAsk();
  } else {
    analysis_ = AnalyzeMessage();
  }
  *emit_.Next().mutable_intent()->mutable_analysis() = analysis_;
  emit_.Send();
  for (const auto& [key, value] : analysis_.entities()) box_.entities[key] = value;
  ContextBox::Add(box_.notes, "understood as " +
                                  intentpb::ActionType_Name(analysis_.action_type()) + " (" +
                                  intentpb::IntentSource_Name(analysis_.source()) + ")");
}

// The answer to the flow's own question, merged in without the intent
// service. In local mode, one that settles nothing may be a request of its
// own ("where were we?", "create a new one that does both"): the intent
// service's analysis is taken when it finds a request in it. (The model
// planner reads such answers itself.)
void TurnPass::AnswerOrAsk() {
  bool settles = true;
  analysis_ = AnalysisOfAnswer(*last_, request_.message(), agents_, &settles);
  if (!settles && runner_.planner_ == nullptr) {
    intentpb::IntentAnalysis analysed = AnalyzeMessage();
    const bool a_request =
        analysed.summary_worthy() ||
        (last_->asked == kAskedOption && analysed.action_type() != intentpb::ACTION_TYPE_UNKNOWN &&
         !analysed.is_ambiguous());
    if (a_request) {
      analysis_ = std::move(analysed);
      return;
    }
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
    agents_ = early_analysis_ ? std::move(early_analysis_->agents)
                              : AgentsFromListResult(ParseObject(listed->result_json()));
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

// The intent service's analysis; without it, an UNKNOWN analysis (and a
// non-fatal error event unless the turn was cancelled).
intentpb::IntentAnalysis TurnPass::AnalyzeMessage() {
  absl::StatusOr<intentpb::AnalyzeIntentResponse> analyzed = absl::UnknownError("not asked");
  // The early analysis read the window this turn took (all of it is
  // history: the message came right after it), with the same agents.
  if (early_analysis_ && early_analysis_->window != 0 && early_analysis_->window == kept_version_) {
    analyzed = std::move(early_analysis_->response);
  } else {
    intentpb::AnalyzeIntentRequest analyze;
    analyze.set_message(request_.message());
    analyze.set_context_type(request_.context_type());
    AddHistory(runner_.routings_, history_, analyze);
    AddAgents(agents_, analyze);
    analyzed = runner_.understanding_.AnalyzeIntent(DownstreamCall(), analyze);
    AddIntentCalls(analyzed);
  }
  intentpb::IntentAnalysis analysis;
  if (analyzed.ok()) return analyzed->analysis();
  analysis.set_action_type(intentpb::ACTION_TYPE_UNKNOWN);
  if (control_.cancelled()) {
    analysis.set_reasoning("the turn was cancelled");
    return analysis;
  }
  analysis.set_reasoning("the intent service could not be reached");
  stage_ = "analyze_intent";
  emit_.Error(pb::CHAT_ERROR_CODE_INTERNAL,
              "understanding is unavailable right now; answering with what I can",
              /*fatal=*/false, std::string(analyzed.status().message()));
  core::LogWarn("intent analysis failed", {{"component", "orchestrator"},
                                           {"stage", "analyze_intent"},
                                           {"error", std::string(analyzed.status().message())}});
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
  context_type_ = request_.context_type() == intentpb::CONTEXT_TYPE_UNSPECIFIED
                      ? intentpb::CONTEXT_TYPE_GLOBAL
                      : request_.context_type();
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
