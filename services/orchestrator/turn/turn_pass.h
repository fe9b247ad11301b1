// One chat turn on its way through the stages (TurnRunner::Run lists them):
//
//   StoreMessage  stage_store.cc        the user's message, once per turn_id;
//                                       the agents listed and the history
//                                       read beside it
//   Replay        stage_replay.cc       a retried turn that finished: its reply
//   LoadFlow      stage_load_flow.cc    the history, the flow this message
//                                       continues, resumes or starts, its kind
//   Understand    stage_understand.cc   the analysis (the intent service, or
//                                       the flow's own for a reply or resume)
//   Decide        stage_decide.cc       the approval gate, a reply to the
//                                       flow's plan, the model or local planner
//   Act           stage_act.cc          the move through the gate's policy,
//                                       tools and plans under the guardrails
//   Compose       stage_compose.cc      the reply's words, previews, waiting
//   Save          stage_save.cc         the reply with its routing, the flow's
//                                       state, the audit trail, `done`
//
// A TurnPass is the state one turn builds up as it goes (what each stage
// leaves for the next), with the turn's CallContext. Made and used on the
// thread that runs the turn; side calls it starts finish before it is gone.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "libs/core/call.h"
#include "libs/core/side_threads.h"
#include "services/orchestrator/flow/notices.h"
#include "services/orchestrator/planner/meeting_flow.h"
#include "services/orchestrator/planner/model_planner.h"
#include "services/orchestrator/plans/assessment.h"
#include "services/orchestrator/plans/plan_assessment.h"
#include "services/orchestrator/turn/call_context.h"
#include "services/orchestrator/turn/emitter.h"
#include "services/orchestrator/turn/plan_reply.h"
#include "services/orchestrator/turn/turn_kind.h"
#include "services/orchestrator/turn/turn_runner.h"
#include "services/orchestrator/usage/usage_attribution.h"
#include "services/orchestrator/usage/usage_meter.h"

namespace omniforge::orchestrator {

class TurnPass final {
 public:
  TurnPass(const TurnRunner& runner, const core::Identity& who,
           const pb::StreamChatRequest& request, TurnControl& control, EventSink& sink,
           core::TimePoint client_deadline, std::shared_ptr<TurnControl> interrupted);
  TurnPass(const TurnPass&) = delete;
  TurnPass& operator=(const TurnPass&) = delete;

  // The stages, in order. StoreMessage's error ends the turn with nothing
  // emitted or stored; Replay returns true when it replayed the turn (done).
  absl::Status StoreMessage();
  bool Replay();
  // Replay for a reattach: names the conversation and turn from the request
  // (nothing stored); NOT_FOUND when there is no stored outcome.
  absl::Status ReplayStored();
  void LoadFlow();
  void Understand();
  void Decide();
  void Act();
  void Compose();
  void Save();

  TurnKind kind() const { return kind_; }
  // Known once StoreMessage succeeded.
  const std::string& conversation_id() const { return conversation_id_; }
  const std::string& turn_id() const { return turn_id_; }

  // For the model planner's session (PlannerIo): one tool, one plan.
  std::optional<ToolRun> RunTool(const ToolStep& step, std::string* described);
  absl::StatusOr<execpb::InvokeToolResponse> InvokeWithRetry(
      const execpb::InvokeToolRequest& invoke);
  std::optional<ToolRun> CreatePlan(const std::string& arguments_json);
  bool Stopped() const;
  Emitter& emit() { return emit_; }

 private:
  // The stored reply of turn_id_ in conversation_id_ replayed (true), none
  // stored (false), or the error of reading the conversation.
  absl::StatusOr<bool> ReplayFromStorage();
  using PlanCall = std::function<absl::StatusOr<PlanOutcome>()>;
  // What the side thread of a fresh request on a kept window found.
  struct EarlyAnalysis {
    absl::StatusOr<execpb::InvokeToolResponse> listed;
    AgentListing listing;  // read from `listed`
    uint64_t window = 0;   // the version of the window read; 0: not asked
    absl::StatusOr<intentpb::AnalyzeIntentResponse> response = absl::UnknownError("not asked");
    // The model calls of an analysis asked again with the listed agents.
    std::vector<::omniforge::llm::v1::ModelCall> discarded_calls;
  };

  // stage_store.cc
  absl::Status StartConversation();
  void StartSideCalls();
  EarlyAnalysis AnalyzeEarly();
  absl::StatusOr<convpb::GetContextWindowResponse> ReadWindow(const core::Call& call);
  absl::StatusOr<std::optional<convpb::AppendMessageResponse>> Store(
      const convpb::AppendMessageRequest& message, const core::Call& call);
  // stage_load_flow.cc
  void TakeHistory();
  FlowState LastFlow(const Routing& routing);
  std::optional<SuspendedFlow> ReadSetAside(const std::string& flow_id);
  intentpb::Pending PendingNow() const;
  const intentpb::ReplyDecision& Reply() const;
  void FindPlan();
  void ChooseKind();
  void LoadBox();
  void Announce();
  void TellLastTurn();
  // stage_understand.cc
  void ReadAgents();
  void Interpret();
  void AnswerOrAsk(const intentpb::IntentAnalysis& heard);
  intentpb::IntentAnalysis Heard();
  void AddIntentCalls(const absl::StatusOr<intentpb::AnalyzeIntentResponse>& answer);
  void TellOntology();
  void PrepareInput();
  // stage_decide.cc
  void ResolveGate();
  intentpb::IntentAnalysis SaidNow() const;
  void ReplyToPlan();
  PlanCall PlanCallFor(PlanMove move, std::string& doing);
  void AuditPlanReply(const std::optional<absl::StatusOr<PlanOutcome>>& outcome);
  // stage_decide_meeting.cc
  // The meeting flow from `meeting` (meeting_flow.h) to the turn's move.
  Move DecideMeeting(MeetingState meeting);
  // The planner model of the turn's context type (planner.profiles), else
  // the planner's; only when ModelPlans().
  llm::ChatModel& PlannerModel() const;
  void AskModel();
  void TakeModelAnswer(const PlannerRequest& plan);
  PlannerRequest ModelRequest() const;
  // stage_act.cc
  void ReportOutOfTime();
  bool StoppedBeforeCall();
  void SendToolCall(const ToolStep& step, const std::string& call_id, execpb::ToolRisk risk);
  execpb::InvokeToolRequest Invocation(const ToolStep& step, execpb::ToolRisk risk) const;
  void DescribeToolResult(const ToolStep& step,
                          const absl::StatusOr<execpb::InvokeToolResponse>& result,
                          pb::ToolResultEvent& event, ToolRun& ran, std::string* described);
  std::optional<absl::StatusOr<PlanOutcome>> RunPlan(const std::string& doing,
                                                     const PlanCall& call);
  void HoldPlan(const PlanOutcome& outcome);
  void RecordExecutionMode(ExecutionMode mode);
  std::optional<absl::StatusOr<PlanOutcome>> MakePlan(const PlanRequest& asked);
  PlanContext MakePlanContext();
  void GateRuns(const std::vector<execpb::ToolDescriptor>& tools);
  void PassGate();
  void KeepCarried();
  void RunMoves();
  // stage_recover.cc
  void NoteFailedCall(const ToolStep& step,
                      const absl::StatusOr<execpb::InvokeToolResponse>& result);
  void NoteFailedPlan(const Plan& plan);
  bool AsksAboutFailure() const;
  void AskAboutFailure();
  void HearRecovery(const intentpb::IntentAnalysis& heard);
  bool AnswerRecovery();
  void RecoverPlanStep(const Recovery& failed, Move& move);
  void AskForOtherAgent(Move& move);
  // stage_compose.cc
  void ChooseText();
  void ShowPreviews();
  void TellNotices();
  void Ask(const std::string& words);
  // stage_save.cc
  FlowState MakeFlowState();
  void MarkNoticesSeen();
  void SaveFlowAndReply(const FlowState& state);
  void ReportFlowNotSaved(const absl::Status& saved);
  void AuditDecisions();
  // How well the turn did: the plan it ran, else its tool calls, the
  // request's clarity and what waits for the user; nullopt for a turn
  // cancelled or set aside.
  std::optional<Assessment> AssessTurn() const;
  void SendDone();
  bool TrySuspend();
  // A plan call's outcome in words (`doing` names the call); empty when a
  // guardrail stopped it.
  static std::string PlanText(const std::optional<absl::StatusOr<PlanOutcome>>& outcome,
                              const std::string& doing);
  void RecordError(const std::string& kind, const std::string& message);
  // One downstream call of the turn (CallContext::ForCall), within the
  // turn's deadline and cancelled with it.
  core::Call DownstreamCall() const { return ctx_.ForCall(runner_.options_.call_timeout); }
  bool PlansOn() const { return runner_.plans_ != nullptr; }
  // The model planner decides this turn: there is one and the tenant's
  // budget allows model calls.
  bool ModelPlans() const { return runner_.planner_ != nullptr && !control_.local_only(); }

  const TurnRunner& runner_;
  const pb::StreamChatRequest& asked_;
  pb::StreamChatRequest worded_;  // a decision worded, a credential masked (or empty)
  bool Masked() const { return !asked_.message().empty() && !worded_.message().empty(); }
  const pb::StreamChatRequest& request_;
  const bool decides_;
  TurnControl& control_;
  const std::shared_ptr<TurnControl> interrupted_;
  // What the turn's model calls cost, for `done` (plans made in the turn too).
  UsageTotals model_usage_;
  // Given with every model call of the turn (llm::CallContext::usage): sums
  // them into model_usage_, and stores them as the turn's row once it is
  // attributed (Understand) and over.
  ModelUsage model_calls_;
  CallContext ctx_;
  const int64_t started_;

  // StoreMessage
  execpb::InvokeToolRequest list_agents_;
  bool window_kept_ = false;
  bool analyze_early_ = false;
  std::string conversation_id_;
  bool created_ = false;
  // Set when storage cannot start the new conversation: the turn answers
  // without storing anything.
  bool unstored_ = false;
  uint64_t kept_version_ = 0;  // of the kept window the turn took, if any
  std::string turn_id_;
  convpb::AppendMessageResponse stored_user_message_;
  bool user_spooled_ = false;
  bool user_stored_now_ = false;
  // The step of the turn failures happen in, for the error log.
  std::string stage_ = "store_user_message";
  std::string stage_tool_;
  Emitter emit_;
  TurnKind kind_ = TurnKind::kFresh;

  // LoadFlow
  absl::StatusOr<convpb::GetContextWindowResponse> window_ = convpb::GetContextWindowResponse();
  convpb::GetContextWindowResponse history_;
  bool history_known_ = false;
  // The flow the last reply belongs to: its state from the flow store when
  // it waited for this message (last_loaded_), else what the reply's
  // routing tells of it.
  std::optional<FlowState> last_;
  bool last_loaded_ = false;
  std::optional<SuspendedFlow> suspended_now_;
  std::optional<SuspendedFlow> set_aside_;
  // The intent service's reading of the message, told what is pending
  // (Interpret): its analysis and what it does to what waits.
  absl::StatusOr<intentpb::AnalyzeIntentResponse> heard_ = absl::UnknownError("not asked");
  bool resuming_ = false;
  std::optional<PlanMove> plan_move_;
  std::optional<PlanRef> plan_target_;
  bool plan_from_last_ = false;
  bool continuing_ = false;
  std::optional<PlanRef> plan_carried_;
  bool plan_reply_ = false;
  bool answering_ = false;
  std::string flow_id_;
  std::string goal_;
  ContextBox box_;
  // The revision of the flow's state this turn read (0: none), which its
  // save expects to replace.
  int64_t flow_revision_ = 0;

  // Understand
  std::vector<AgentInfo> agents_;
  // What the agents' listing also said: the user's time zone and the
  // notices to tell them this turn (flow/notices.h).
  std::string time_zone_;  // empty: the listing did not say
  bool notices_told_ = false;
  std::vector<pb::NoticeEvent> notices_;
  std::vector<std::string> notice_ids_;
  std::optional<execpb::InvokeToolResponse> agent_list_;
  std::optional<EarlyAnalysis> early_analysis_;
  std::vector<::omniforge::llm::v1::ModelCall> intent_calls_;
  intentpb::IntentAnalysis analysis_;
  PolicyInput input_;
  intentpb::ContextType context_type_ = intentpb::CONTEXT_TYPE_GLOBAL;
  // The executor's tools as this turn sees them (TellOntology), which the
  // model planner is offered.
  std::shared_ptr<const TurnRunner::ToolCatalog> catalog_;

  // Decide and Act
  int tool_calls_ = 0;
  bool suspended_ = false;
  std::vector<std::string> listed_;
  std::vector<std::string> tools_used_;
  bool cancel_reported_ = false;
  bool time_reported_ = false;
  std::optional<Plan> plan_held_;
  std::string plan_digest_;
  int64_t plan_expires_ = 0;
  std::string plan_words_;
  // For the turn's assessment: the plan this turn ran, assessed (HoldPlan);
  // why a plan call failed; each tool call as its result reads (the same
  // evidence the model planner assesses its iterations by).
  std::optional<Assessment> plan_assessed_;
  std::string plan_failure_;
  std::vector<CallOutcome> tool_runs_;
  // The work of this turn that failed for good (the first), which the
  // user is asked about unless something else waits (stage_recover.cc);
  // what the answer to the last turn's such question picked, or that it
  // picked nothing; the move that answer makes.
  std::optional<Recovery> failed_;
  std::optional<RecoveryChoice> recovery_choice_;
  bool recovery_unsettled_ = false;
  std::optional<Move> recovered_;
  PlanEvents plan_events_;
  std::function<bool()> plan_stopped_;
  ContextBox carried_;
  Move move_;
  std::string text_;
  bool text_sent_ = false;
  PlannerResult planned_;
  std::vector<GateDecision> decisions_;
  std::optional<PendingResolution> gate_;
  std::optional<Move> approval_;
  std::vector<PendingAction> pending_after_;
  std::vector<PendingAction> previews_;

  // Compose and Save
  bool waiting_ = false;
  std::optional<absl::StatusOr<std::optional<convpb::AppendMessageResponse>>> stored_reply_;

  // Last, so that they are waited for before the state they use is gone.
  core::SideCall<absl::StatusOr<execpb::InvokeToolResponse>> agents_listed_;
  core::SideCall<absl::StatusOr<convpb::GetContextWindowResponse>> window_read_;
  core::SideCall<EarlyAnalysis> early_;
};

}  // namespace omniforge::orchestrator
