#include "services/orchestrator/turn/turn_runner.h"

#include <algorithm>
#include <future>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "libs/core/clock.h"
#include "libs/core/ids.h"
#include "libs/core/logging.h"
#include "libs/core/struct_json.h"
#include "libs/core/text.h"
#include "libs/llm/model_call_proto.h"
#include "services/orchestrator/approvals/approval_gate.h"
#include "services/orchestrator/planner/local_policy.h"
#include "services/orchestrator/planner/model_planner.h"
#include "services/orchestrator/approvals/preview.h"
#include "services/orchestrator/flow/routing.h"
#include "services/orchestrator/usage/usage_attribution.h"
#include "services/orchestrator/usage/usage_meter.h"

namespace omniforge::orchestrator {
namespace {

using nlohmann::json;

constexpr size_t kMaxMessageBytes = 64 * 1024;
constexpr int64_t kCatalogRefreshMicros = 60'000'000;

using core::JsonFromStruct;

json ParseObject(const std::string& text) {
  json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return parsed.is_discarded() ? json::object() : parsed;
}

// Builds each event of a turn and hands it to the sink; error events are
// also handed to `on_error` (with the cause behind them, when known).
class Emitter final {
 public:
  using ErrorHook = std::function<void(pb::ChatErrorCode, const std::string& message)>;
  Emitter(EventSink& sink, ErrorHook on_error) : sink_(sink), on_error_(std::move(on_error)) {}

  pb::ChatEvent& Next() {
    event_.Clear();
    return event_;
  }
  void Send() { sink_.Emit(std::move(event_)); }

  void State(pb::AgentState state, const std::string& details) {
    pb::AgentStateEvent* e = Next().mutable_agent_state();
    e->set_state(state);
    e->set_details(details);
    Send();
  }
  void Error(pb::ChatErrorCode code, const std::string& message, bool fatal,
             const std::string& cause = "") {
    pb::ErrorEvent* e = Next().mutable_error();
    e->set_code(code);
    e->set_message(message);
    e->set_fatal(fatal);
    Send();
    on_error_(code, cause.empty() ? message : message + ": " + cause);
  }

 private:
  EventSink& sink_;
  ErrorHook on_error_;
  pb::ChatEvent event_;
};

// A call that failed, as a tool result the planner (and the user) reads.
json ErrorResult(const absl::Status& status) {
  return {{"error",
           {{"code", absl::StatusCodeToString(status.code())},
            {"message", std::string(status.message())}}}};
}

// A stored message's metadata: asked for as JSON text (metadata_as_json),
// read from the Struct when storage sent one instead.
json MetadataOf(const convpb::Message& m) {
  if (m.metadata_json().empty()) return JsonFromStruct(m.metadata());
  return ParseObject(m.metadata_json());
}

// The routing stored with message `m`, parsed once per message.
std::shared_ptr<const Routing> RoutingOf(RoutingMemo& memo, const convpb::Message& m) {
  return memo.Of(m.id(), [&m] { return RoutingFromJson(MetadataOf(m)); });
}

// The routing of the newest assistant message in `window`, if any.
std::optional<Routing> LastRouting(RoutingMemo& memo,
                                   const convpb::GetContextWindowResponse& window) {
  for (int i = window.messages_size() - 1; i >= 0; --i) {
    const convpb::Message& m = window.messages(i);
    if (m.role() == convpb::ROLE_ASSISTANT) return *RoutingOf(memo, m);
  }
  return std::nullopt;
}

// The window as the intent service reads history: user and assistant
// turns, the assistant's with the routing stored beside them.
void AddHistory(RoutingMemo& memo, const convpb::GetContextWindowResponse& window,
                intentpb::AnalyzeIntentRequest& request) {
  for (const convpb::Message& m : window.messages()) {
    intentpb::Turn* turn = nullptr;
    if (m.role() == convpb::ROLE_USER) {
      turn = request.add_history();
      turn->set_role(intentpb::TURN_ROLE_USER);
    } else if (m.role() == convpb::ROLE_ASSISTANT) {
      turn = request.add_history();
      turn->set_role(intentpb::TURN_ROLE_ASSISTANT);
      const std::shared_ptr<const Routing> routing = RoutingOf(memo, m);
      turn->set_action_type(routing->action_type);
      turn->mutable_entities()->insert(routing->entities.begin(), routing->entities.end());
      for (const std::string& name : routing->listed_agents) turn->add_listed_agents(name);
      turn->set_pending_action(!routing->pending.empty());
    } else {
      continue;
    }
    turn->set_content(m.content());
  }
}

void AddAgents(const std::vector<AgentInfo>& agents, intentpb::AnalyzeIntentRequest& request) {
  for (const AgentInfo& agent : agents) {
    intentpb::CatalogItem* item = request.add_available_agents();
    item->set_name(agent.name);
    item->set_description(core::Shortened(agent.description, 2000));
  }
}

// Whether the intent service would be given the same agents (AddAgents).
bool SameForAnalysis(const std::vector<AgentInfo>& a, const std::vector<AgentInfo>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const AgentInfo& x, const AgentInfo& y) {
                      return x.name == y.name && x.description == y.description;
                    });
}

// Whether the newest reply in `window` leaves nothing for this message to
// continue (no pending action, question, plan or suspended flow): the
// message then gets a new analysis.
bool StartsAFreshFlow(RoutingMemo& memo, const convpb::GetContextWindowResponse& window) {
  const std::optional<Routing> last = LastRouting(memo, window);
  return !last || (last->pending.empty() && last->clarifications == 0 && !last->plan &&
                   !last->suspended_flow);
}

// The error log's kind of an error event; empty for what is not a failure
// of the orchestration (a cancel is the user's choice).
std::string ErrorKind(pb::ChatErrorCode code) {
  switch (code) {
    case pb::CHAT_ERROR_CODE_TOOL_CALL_LIMIT:
      return "tool_call_limit";
    case pb::CHAT_ERROR_CODE_TIME_LIMIT:
      return "time_limit";
    case pb::CHAT_ERROR_CODE_ITERATION_LIMIT:
      return "iteration_limit";
    case pb::CHAT_ERROR_CODE_MODEL_FAILED:
      return "model_failed";
    case pb::CHAT_ERROR_CODE_TOOL_FAILED:
      return "tool_failed";
    case pb::CHAT_ERROR_CODE_PLAN_FAILED:
      return "plan_failed";
    case pb::CHAT_ERROR_CODE_STORAGE_UNAVAILABLE:
    case pb::CHAT_ERROR_CODE_INTERNAL:  // only for a service out of reach
      return "downstream_unavailable";
    default:
      return "";
  }
}

// The part of the system an error log row blames (TurnError::component):
// the turn itself for its guardrails, else the service or store that the
// turn's step `stage` was waiting for.
std::string ErrorComponent(const std::string& kind, const std::string& stage) {
  if (kind == "tool_call_limit" || kind == "time_limit" || kind == "iteration_limit") {
    return "turn";
  }
  if (stage == "store_user_message" || stage == "read_window" || stage == "store_reply") {
    return "conversation";
  }
  if (stage == "tool_call" || stage == "list_agents") return "executor";
  if (stage == "analyze_intent") return "intent";
  if (stage == "planner_stream") return "llm";
  if (stage == "plan") return "plans";
  if (stage == "read_flow" || stage == "store_flow" || stage == "store_decision") {
    return "orchestration";
  }
  return "orchestrator";
}

// The analysis of a turn that resumes a suspended flow: the flow's own,
// without the intent service.
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

// What the client's context constrains, for the context box.
std::string ContextConstraint(const pb::StreamChatRequest& request) {
  if (request.context_type() == intentpb::CONTEXT_TYPE_UNSPECIFIED ||
      request.context_type() == intentpb::CONTEXT_TYPE_GLOBAL) {
    return "";
  }
  std::string text = "context " + intentpb::ContextType_Name(request.context_type());
  if (!request.entity_id().empty()) text += ", on screen: " + request.entity_id();
  return text;
}

// Ends the turn's control with "not suspended" on every path that did not
// suspend, early returns included.
class EndsControl final {
 public:
  explicit EndsControl(TurnControl& control) : control_(control) {}
  ~EndsControl() { control_.Ended(std::nullopt); }
  EndsControl(const EndsControl&) = delete;
  EndsControl& operator=(const EndsControl&) = delete;

 private:
  TurnControl& control_;
};

// The words stored for a structured decision sent without a message.
std::string DecisionWords(const pb::ApprovalDecision& decision) {
  switch (decision.kind()) {
    case pb::DECISION_KIND_APPROVE:
      return "Approve " + decision.action_id();
    case pb::DECISION_KIND_REJECT:
      return "Reject " + decision.action_id();
    default:
      return "Change " + decision.action_id() + ": " +
             core::Shortened(decision.arguments_json(), 2000);
  }
}

// What the user's message does to the plan the flow waits on.
enum class PlanMove { kApprove, kRevise, kReject, kAnswer, kContinue };

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

// The analysis of a reply to the flow's plan, made without the intent
// service: the flow's action and entities, and what the reply does.
intentpb::IntentAnalysis PlanReplyAnalysis(const Routing& last, PlanMove move) {
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

// A call's arguments as the user knows them: a target resolved to its id is
// named again.
json NamedArguments(const PendingAction& action) {
  json args = action.arguments;
  for (auto& [key, target] : action.targets.items()) {
    if (target.is_object() && target.contains("name") && args.contains(key)) {
      args[key] = target["name"];
    }
  }
  return args;
}

// The move the approval gate decided, if it decided one: approved actions
// run with their own keys, a rejection or refusal says so, a structured edit
// previews the changed action; a spoken edit goes to the local policy's
// revision (`local`) or to the model. nullopt: the planner decides.
std::optional<Move> GateMove(const PendingResolution& gate, const Routing& last, bool local,
                             const PolicyInput& input) {
  Move move;
  move.action_type = last.action_type;
  move.entities = last.entities;
  switch (gate.reply) {
    case PendingReply::kApprove:
    case PendingReply::kReject:
      for (const PendingAction& action : gate.approved) {
        move.run.push_back(
            {action.tool, action.arguments, ApprovedStepKey(action), NamedArguments(action)});
      }
      move.propose = gate.previewed_again;
      move.reply = gate.reply_text;
      return move;
    case PendingReply::kEdit:
      if (!gate.previewed_again.empty()) {
        move.propose = gate.previewed_again;
        move.reply = "Changed as you asked; nothing has run yet.";
        return move;
      }
      if (local) return ReviseLocally(input, gate.other_agent);
      return std::nullopt;
    case PendingReply::kOther:
      if (gate.refusal.empty()) return std::nullopt;
      move.reply = gate.reply_text;
      return move;
  }
  return std::nullopt;
}

// The proposals of a turn through the gate's policy: those it runs go to
// `move.run` (each with its own key), those it refuses are recorded in
// `decisions` and returned as words in `denied`; the rest are sealed
// (targets, digest, expiry) and returned to preview.
std::vector<PendingAction> PassProposals(Move& move,
                                         const std::vector<execpb::ToolDescriptor>& tools,
                                         const std::vector<AgentInfo>& agents,
                                         const ApprovalPolicy& policy, int64_t now_micros,
                                         std::vector<GateDecision>& decisions,
                                         std::vector<std::string>& denied) {
  std::vector<PendingAction> asking;
  for (PendingAction& action : move.propose) {
    // Never less than the catalog says.
    if (const execpb::ToolRisk known = RiskIn(tools, action.tool); known > action.risk) {
      action.risk = known;
    }
    if (action.digest.empty()) SealPendingAction(action, agents, now_micros, policy.pending_ttl);
    if (action.summary.empty()) {
      std::string description;
      for (const execpb::ToolDescriptor& d : tools) {
        if (d.name() == action.tool) description = d.description();
      }
      action.summary = ActionSummary(action.tool, NamedArguments(action), description);
    }
    switch (policy.Decide(action.tool, action.risk)) {
      case GateVerdict::kRun:
        decisions.push_back({action.action_id, action.digest, action.tool, action.summary,
                             action.risk, pb::ACTION_OUTCOME_AUTO_APPROVED, "policy"});
        move.run.push_back(
            {action.tool, action.arguments, ApprovedStepKey(action), NamedArguments(action)});
        break;
      case GateVerdict::kDeny:
        decisions.push_back({action.action_id, action.digest, action.tool, action.summary,
                             action.risk, pb::ACTION_OUTCOME_DENIED, "policy"});
        denied.push_back(action.summary);
        break;
      case GateVerdict::kAsk:
        asking.push_back(action);
        break;
    }
  }
  move.propose.clear();
  return asking;
}

// A plan's events go out with the turn's, numbered by the same stream; the
// engine's threads take turns.
class PlanEvents final : public PlanEventSink {
 public:
  explicit PlanEvents(Emitter& emit) : emit_(emit) {}
  void Emit(pb::ChatEvent event) override {
    std::lock_guard lock(mu_);
    emit_.Next() = std::move(event);
    emit_.Send();
  }

 private:
  std::mutex mu_;
  Emitter& emit_;
};

}  // namespace

void TurnControl::SetFlow(SuspendedFlow flow) {
  std::lock_guard<std::mutex> lock(mu_);
  flow_ = std::move(flow);
}

void TurnControl::Ended(std::optional<SuspendedFlow> suspended) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ended_) return;
    ended_ = true;
    suspended_ = std::move(suspended);
  }
  ended_cv_.notify_all();
}

std::optional<SuspendedFlow> TurnControl::SuspendedState() {
  std::lock_guard<std::mutex> lock(mu_);
  return ended_ ? suspended_ : std::nullopt;
}

std::optional<SuspendedFlow> TurnControl::AwaitSuspension(int64_t deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto until = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::microseconds(deadline)));
  if (ended_cv_.wait_until(lock, until, [this] { return ended_; })) return suspended_;
  return flow_;
}

absl::Status ValidateStreamChatRequest(const pb::StreamChatRequest& request) {
  const pb::ApprovalDecision& decision = request.decision();
  if (!pb::DecisionKind_IsValid(decision.kind())) {
    return absl::InvalidArgumentError("decision.kind: unknown value " +
                                      std::to_string(decision.kind()));
  }
  const bool decides = decision.kind() != pb::DECISION_KIND_UNSPECIFIED;
  if (decides || !decision.action_id().empty() || !decision.arguments_json().empty()) {
    if (!decides) return absl::InvalidArgumentError("decision.kind: must be set");
    if (!core::IsSafeToken(decision.action_id())) {
      return absl::InvalidArgumentError(
          "decision.action_id: the preview's action_id (1..128 characters of "
          "[A-Za-z0-9._:@-])");
    }
    if (request.conversation_id().empty()) {
      return absl::InvalidArgumentError(
          "conversation_id: a decision answers a preview of an existing conversation");
    }
    if (!decision.arguments_json().empty()) {
      if (decision.kind() != pb::DECISION_KIND_EDIT) {
        return absl::InvalidArgumentError("decision.arguments_json: only with DECISION_KIND_EDIT");
      }
      if (decision.arguments_json().size() > kMaxMessageBytes) {
        return absl::InvalidArgumentError("decision.arguments_json: at most 64 KiB");
      }
      const json args = json::parse(decision.arguments_json(), nullptr, false);
      if (!args.is_object()) {
        return absl::InvalidArgumentError("decision.arguments_json: must be a JSON object");
      }
    }
  }
  if (request.message().empty() && !decides) {
    return absl::InvalidArgumentError("message: must not be empty");
  }
  if (request.message().size() > kMaxMessageBytes) {
    return absl::InvalidArgumentError("message: at most 64 KiB");
  }
  if (!core::IsValidUtf8(request.message())) {
    return absl::InvalidArgumentError("message: must be valid UTF-8");
  }
  if (!intentpb::ContextType_IsValid(request.context_type())) {
    return absl::InvalidArgumentError("context_type: unknown value " +
                                      std::to_string(request.context_type()));
  }
  if (!request.conversation_id().empty() && !core::IsUuid(request.conversation_id())) {
    return absl::InvalidArgumentError("conversation_id: must be a UUID");
  }
  if (!request.turn_id().empty() && !core::IsSafeToken(request.turn_id())) {
    return absl::InvalidArgumentError("turn_id: 1..128 characters of [A-Za-z0-9._:@-]");
  }
  if (!request.entity_id().empty() && !core::IsSafeToken(request.entity_id())) {
    return absl::InvalidArgumentError("entity_id: 1..128 characters of [A-Za-z0-9._:@-]");
  }
  return absl::OkStatus();
}

TurnRunner::TurnRunner(Memory& memory, Understanding& understanding, Tools& tools,
                       TurnOptions options, llm::ChatModel* planner, FlowStore* flows,
                       TurnErrorLog* errors, PlanEngine* plans, AppendSpool* spool)
    : memory_(memory),
      understanding_(understanding),
      tools_(tools),
      options_(options),
      planner_(planner),
      flows_(flows),
      errors_(errors),
      plans_(plans),
      spool_(spool),
      windows_(
          {.max_bytes = options.window_cache_bytes, .token_budget = options.context_token_budget}) {
  if (planner_ == nullptr) return;
  metered_planner_ = std::make_unique<MeteredChatModel>(*planner_);
  for (const auto& [type, model] : options_.planner_by_context) {
    metered_by_context_[type] = std::make_unique<MeteredChatModel>(*model);
  }
}

std::shared_ptr<const TurnRunner::ToolCatalog> TurnRunner::Catalog(const core::Identity& who,
                                                                   int64_t deadline) const {
  std::lock_guard<std::mutex> lock(catalog_mu_);
  const int64_t now = core::NowMicros();
  if (catalog_ == nullptr || now - catalog_fetched_at_ > kCatalogRefreshMicros) {
    absl::StatusOr<execpb::ListToolsResponse> listed =
        tools_.ListTools(who, execpb::ListToolsRequest(), deadline);
    if (listed.ok()) {
      auto fresh = std::make_shared<ToolCatalog>();
      fresh->tools.assign(listed->tools().begin(), listed->tools().end());
      for (const execpb::ToolDescriptor& d : fresh->tools) fresh->risk_by_name[d.name()] = d.risk();
      catalog_ = std::move(fresh);
      catalog_fetched_at_ = now;
    }
  }
  return catalog_ != nullptr ? catalog_ : std::make_shared<const ToolCatalog>();
}

execpb::ToolRisk TurnRunner::RiskOf(const core::Identity& who, const std::string& tool,
                                    int64_t deadline) const {
  const std::shared_ptr<const ToolCatalog> catalog = Catalog(who, deadline);
  auto it = catalog->risk_by_name.find(tool);
  return it == catalog->risk_by_name.end() ? execpb::TOOL_RISK_UNSPECIFIED : it->second;
}

std::shared_ptr<const std::vector<AgentInfo>> TurnRunner::AgentsSeen(
    const core::Identity& who) const {
  std::lock_guard<std::mutex> lock(agents_mu_);
  auto it = agents_seen_.find(AgentsKey(who));
  return it == agents_seen_.end() ? nullptr : it->second;
}

void TurnRunner::SawAgents(const core::Identity& who, const std::vector<AgentInfo>& agents) const {
  const std::string key = AgentsKey(who);
  {
    std::lock_guard<std::mutex> lock(agents_mu_);
    auto it = agents_seen_.find(key);
    // Most turns see what the last one saw: nothing to copy.
    if (it != agents_seen_.end() && SameForAnalysis(*it->second, agents)) return;
  }
  auto seen = std::make_shared<const std::vector<AgentInfo>>(agents);
  std::lock_guard<std::mutex> lock(agents_mu_);
  // A bound on memory; the next turn of each user fills it again.
  if (agents_seen_.size() >= kMaxUsersSeen) agents_seen_.clear();
  agents_seen_[key] = std::move(seen);
}

absl::Status TurnRunner::Run(const core::Identity& who, const pb::StreamChatRequest& asked,
                             TurnControl& control, EventSink& sink, int64_t client_deadline,
                             const std::shared_ptr<TurnControl>& interrupted) const {
  const EndsControl ends_control(control);
  if (absl::Status valid = ValidateStreamChatRequest(asked); !valid.ok()) return valid;
  // A decision sent without words is stored as words that say it.
  pb::StreamChatRequest worded;
  if (asked.message().empty()) {
    worded = asked;
    worded.set_message(DecisionWords(asked.decision()));
  }
  const pb::StreamChatRequest& request = asked.message().empty() ? worded : asked;
  const bool decides = request.decision().kind() != pb::DECISION_KIND_UNSPECIFIED;
  // Cancelling the turn cancels its downstream calls in flight (the writes
  // that keep what it did open scopes of their own that are not cancelled).
  const core::ScopedCallCancellation cancellable(&control.cancel_signal());
  // What the turn's model calls cost, for `done` (plans made in the turn too).
  UsageTotals model_usage;
  const ScopedUsageMeter metered(&model_usage);
  const int64_t started = core::NowMicros();
  int64_t turn_deadline =
      started +
      std::chrono::duration_cast<std::chrono::microseconds>(options_.turn_timeout).count();
  if (client_deadline > 0) turn_deadline = std::min(turn_deadline, client_deadline);
  const int64_t call_micros =
      std::chrono::duration_cast<std::chrono::microseconds>(options_.call_timeout).count();
  auto call_deadline = [&] { return std::min(turn_deadline, core::NowMicros() + call_micros); };

  // The user's agents, for the intent service and the planner: listed while
  // the message is stored and the window read.
  execpb::InvokeToolRequest list_agents;
  list_agents.set_tool_name("list_agents");
  // A fresh request on a conversation whose window is kept: its analysis
  // runs while the message is stored, from the kept window and the agents,
  // on a side thread of its own (which also lists them). The turn uses it
  // only if that window is the one it takes once the message is stored (so
  // its own request would be the same); otherwise it asks again.
  // (Only a conversation the request names can have a kept window.)
  const bool window_kept =
      !request.conversation_id().empty() && windows_.Has(who, request.conversation_id());
  const bool analyze_early =
      window_kept && interrupted == nullptr && !IsResumeRequest(request.message());
  core::SideCall<absl::StatusOr<execpb::InvokeToolResponse>> agents_listed;
  if (!analyze_early) {
    agents_listed =
        side_calls_.Async([&] { return tools_.InvokeTool(who, list_agents, call_deadline()); });
  }

  // The conversation: the caller's own, or a new one.
  std::string conversation_id = request.conversation_id();
  bool created = false;
  // Set when storage cannot start the new conversation: the turn answers
  // without storing anything. The spool does not start it later: the
  // service picks a conversation's id and CreateConversation has no
  // idempotency key, so the client would hold no id for it, and a retried
  // create that had landed would start a second one. The client sends the
  // message again once storage is back.
  bool unstored = false;
  if (conversation_id.empty()) {
    convpb::CreateConversationRequest create;
    create.set_title(core::Shortened(request.message(), 80));
    absl::StatusOr<convpb::CreateConversationResponse> made =
        memory_.CreateConversation(who, create, call_deadline());
    if (made.ok()) {
      conversation_id = made->conversation().id();
      created = true;
    } else if (spool_ != nullptr && IsStorageUnreachable(made.status())) {
      unstored = true;
    } else {
      return made.status();
    }
  }
  // (An existing conversation is checked by the append below: memory
  // answers NOT_FOUND for one that is not the caller's, and stores nothing.)

  // The history so far, read while the message is stored (the window then
  // holds the turns before it; a new conversation has none), unless the
  // window this orchestrator kept after the conversation's last turn still
  // holds (known once the message has its seq).
  auto read_window = [&] {
    convpb::GetContextWindowRequest window_request;
    window_request.set_conversation_id(conversation_id);
    window_request.set_token_budget(options_.context_token_budget);
    window_request.set_metadata_as_json(true);
    return memory_.GetContextWindow(who, window_request, call_deadline());
  };
  uint64_t kept_version = 0;  // of the kept window the turn took, if any
  core::SideCall<absl::StatusOr<convpb::GetContextWindowResponse>> window_read;
  if (!created && !unstored && !window_kept) window_read = side_calls_.Async(read_window);

  struct EarlyAnalysis {
    absl::StatusOr<execpb::InvokeToolResponse> listed;
    std::vector<AgentInfo> agents;  // read from `listed`
    uint64_t window = 0;            // the version of the window read; 0: not asked
    absl::StatusOr<intentpb::AnalyzeIntentResponse> response = absl::UnknownError("not asked");
    // The model calls of an analysis asked again with the listed agents.
    std::vector<::omniforge::llm::v1::ModelCall> discarded_calls;
  };
  core::SideCall<EarlyAnalysis> early;
  if (analyze_early) {
    early = side_calls_.Async([&] {
      // The agents are listed while the history is built and, when this
      // user's agents at their last turn are known, while the intent
      // service reads the message with those: that analysis stands if the
      // list is the same (what the service was given is then exactly what
      // it would be given now), else it is asked again.
      std::promise<absl::StatusOr<execpb::InvokeToolResponse>> listing;
      std::future<absl::StatusOr<execpb::InvokeToolResponse>> listed = listing.get_future();
      tools_.InvokeToolThen(who, list_agents, call_deadline(),
                            [&listing](absl::StatusOr<execpb::InvokeToolResponse> result) {
                              listing.set_value(std::move(result));
                            });
      // Shared with the cache, and let go of before anything waits, so that
      // the turn's Take can move it out instead of copying it.
      std::optional<WindowCache::Kept> kept = windows_.Read(who, conversation_id);
      const bool fresh = kept.has_value() && StartsAFreshFlow(routings_, *kept->window);
      intentpb::AnalyzeIntentRequest analyze;
      if (fresh) AddHistory(routings_, *kept->window, analyze);
      const uint64_t version = fresh ? kept->version : 0;
      kept.reset();
      analyze.set_message(request.message());
      analyze.set_context_type(request.context_type());
      const std::shared_ptr<const std::vector<AgentInfo>> seen = fresh ? AgentsSeen(who) : nullptr;
      absl::StatusOr<intentpb::AnalyzeIntentResponse> guessed = absl::UnknownError("not asked");
      if (seen) {
        AddAgents(*seen, analyze);
        guessed = understanding_.AnalyzeIntent(who, analyze, call_deadline());
      }
      EarlyAnalysis out{listed.get()};
      if (out.listed.ok() && !out.listed->is_error()) {
        out.agents = AgentsFromListResult(ParseObject(out.listed->result_json()));
      }
      if (!fresh) return out;
      out.window = version;
      if (seen && SameForAnalysis(*seen, out.agents)) {
        out.response = std::move(guessed);
        return out;
      }
      if (guessed.ok()) {
        out.discarded_calls.assign(guessed->model_calls().begin(), guessed->model_calls().end());
      }
      analyze.clear_available_agents();
      AddAgents(out.agents, analyze);
      out.response = understanding_.AnalyzeIntent(who, analyze, call_deadline());
      return out;
    });
  }

  // The user's message, once per turn_id.
  const std::string turn_id = request.turn_id().empty() ? core::NewUuid() : request.turn_id();
  convpb::AppendMessageRequest user_message;
  user_message.set_conversation_id(conversation_id);
  user_message.set_role(convpb::ROLE_USER);
  user_message.set_content(request.message());
  user_message.set_idempotency_key("turn:" + turn_id + ":user");
  user_message.set_metadata_json(json{
      {"turn_id", turn_id},
      {"context_type", intentpb::ContextType_Name(request.context_type())},
      {"entity_id",
       request.entity_id()}}.dump());
  // Through the spool, a message storage cannot take now waits there
  // (nullopt) and the turn goes on.
  auto store =
      [&](const convpb::AppendMessageRequest& message,
          int64_t deadline) -> absl::StatusOr<std::optional<convpb::AppendMessageResponse>> {
    const core::ScopedCallCancellation kept(nullptr);  // a message is stored once taken
    if (spool_ != nullptr) return spool_->Append(who, message, deadline);
    absl::StatusOr<convpb::AppendMessageResponse> stored =
        memory_.AppendMessage(who, message, deadline);
    if (!stored.ok()) return stored.status();
    return std::optional<convpb::AppendMessageResponse>(*std::move(stored));
  };
  absl::StatusOr<std::optional<convpb::AppendMessageResponse>> stored_user =
      unstored ? std::optional<convpb::AppendMessageResponse>()
               : store(user_message, call_deadline());
  if (!stored_user.ok()) return stored_user.status();
  const bool user_spooled = !unstored && !stored_user->has_value();
  const convpb::AppendMessageResponse stored_user_message =
      stored_user->value_or(convpb::AppendMessageResponse());

  // Failures of the orchestration go to the error log as well as to the
  // user, with the step of the turn they happened in (and the tool called).
  std::string stage = "store_user_message";
  std::string stage_tool;
  auto record_error = [&](const std::string& kind, const std::string& message) {
    // A cancelled turn's calls fail because it was cancelled: the user's
    // choice, not a failure of the orchestration.
    if (errors_ == nullptr || kind.empty() || control.cancelled()) return;
    errors_->Record({who.tenant_id, who.user_id, conversation_id, turn_id, kind, message,
                     ErrorComponent(kind, stage), stage, stage_tool});
  };
  Emitter emit(sink, [&](pb::ChatErrorCode code, const std::string& message) {
    record_error(ErrorKind(code), message);
  });
  // The turn's messages are stored in order, each once: the window kept for
  // the next turn can follow them.
  const bool user_stored_now = !unstored && !user_spooled && !stored_user_message.deduplicated();
  absl::StatusOr<convpb::GetContextWindowResponse> window =
      window_read.valid() ? window_read.get() : convpb::GetContextWindowResponse();
  if (window_kept) {
    std::optional<convpb::GetContextWindowResponse> kept;
    if (user_stored_now) {
      kept = windows_.Take(who, conversation_id, stored_user_message.message(), &kept_version);
    }
    window = kept.has_value() ? *std::move(kept) : read_window();
  }

  // A retried turn that already finished: replay its stored reply.
  if (stored_user_message.deduplicated()) {
    convpb::ListMessagesRequest after;
    after.set_conversation_id(conversation_id);
    after.set_limit(500);
    after.set_metadata_as_json(true);
    absl::StatusOr<convpb::ListMessagesResponse> recent =
        memory_.ListMessages(who, after, call_deadline());
    if (recent.ok()) {
      for (const convpb::Message& m : recent->messages()) {
        if (m.role() != convpb::ROLE_ASSISTANT || m.seq() <= stored_user_message.message().seq()) {
          continue;
        }
        const Routing routing = RoutingFromJson(MetadataOf(m));
        if (routing.turn_id != turn_id) continue;
        pb::SessionEvent* session = emit.Next().mutable_session();
        session->set_conversation_id(conversation_id);
        session->set_turn_id(turn_id);
        session->set_flow_id(routing.flow_id);
        session->set_replayed(true);
        emit.Send();
        emit.Next().mutable_text()->set_delta(m.content());
        emit.Send();
        pb::DoneEvent* done = emit.Next().mutable_done();
        done->set_is_final(routing.pending.empty() && routing.clarifications == 0 &&
                           !routing.suspended);
        done->set_assistant_message_id(m.id());
        done->mutable_usage()->set_duration_ms((core::NowMicros() - started) / 1000.0);
        emit.Send();
        return absl::OkStatus();
      }
    }
  }

  // Drop the message just stored (and anything after it) from the history.
  // The window is this turn's own: its messages move, none is copied.
  convpb::GetContextWindowResponse history;
  if (window.ok()) {
    history.Swap(&*window);
    int keep = 0;
    while (keep < history.messages_size() &&
           (user_spooled || history.messages(keep).seq() < stored_user_message.message().seq())) {
      ++keep;
    }
    history.mutable_messages()->DeleteSubrange(keep, history.messages_size() - keep);
  }
  // The window kept for the next turn starts from this history.
  const bool history_known = user_stored_now && window.ok();
  const std::optional<Routing> last = LastRouting(routings_, history);

  // The flow this message suspends, once it has stopped at a safe point (or
  // as far as it is known when it takes longer than a call's time); else the
  // one an earlier message suspended, still waiting to be resumed.
  std::optional<SuspendedFlow> suspended_now;
  if (interrupted != nullptr) suspended_now = interrupted->AwaitSuspension(call_deadline());
  std::optional<SuspendedFlow> set_aside =
      suspended_now ? suspended_now : (last ? last->suspended_flow : std::nullopt);
  // A structured decision is never read as words (a resume, a "continue").
  const bool resuming = !decides && set_aside.has_value() && IsResumeRequest(request.message());
  // A plan of the flow waits for this message (its review, a step's
  // question, "continue"); a resumed flow goes on with the plan it was
  // running.
  std::optional<PlanMove> plan_move;
  std::optional<PlanRef> plan_target;
  bool plan_from_last = false;  // the plan is the last reply's: its flow goes on
  if (plans_ != nullptr && resuming && set_aside->plan) {
    plan_target = set_aside->plan;
    plan_move = PlanMove::kContinue;
  } else if (plans_ != nullptr && !resuming && last && last->plan) {
    plan_target = last->plan;
    plan_move = PlanMoveFor(*last->plan, request.message(), request.decision());
    plan_from_last = plan_move.has_value();
  } else if (plans_ != nullptr && !created && !decides && IsResumeRequest(request.message())) {
    // "continue" after the orchestrator running a plan stopped mid-turn:
    // no reply named the plan, the plan store still has it.
    absl::StatusOr<std::optional<std::string>> left =
        plans_->LatestUnfinished(who, conversation_id);
    if (left.ok() && left->has_value()) {
      plan_target = PlanRef{**left, PlanStatusName(PlanStatus::kRunning), ""};
      plan_move = PlanMove::kContinue;
    }
  }
  const bool continuing =
      !resuming && last && (!last->pending.empty() || last->clarifications > 0 || plan_from_last);
  // A plan waiting for review that this message does not answer (a
  // question, another request) keeps waiting.
  std::optional<PlanRef> plan_carried;
  if (!resuming && !plan_from_last && last && last->plan &&
      (ParsePlanStatus(last->plan->status) == PlanStatus::kPendingReview ||
       ParsePlanStatus(last->plan->status) == PlanStatus::kWaitingOnUser)) {
    plan_carried = last->plan;
  }
  // An answer to the flow's own clarifying question needs no new analysis,
  // nor does a reply to its plan (unless it changes the plan: the analysis
  // then finds what changed).
  const bool plan_reply = plan_move.has_value() && *plan_move != PlanMove::kRevise;
  const bool answering = continuing && !plan_reply && AnswerSkipsAnalysis(*last);
  std::string flow_id = core::NewUuid();
  std::string goal = request.message();
  if (resuming) {
    flow_id = set_aside->flow_id;
    goal = set_aside->goal;
  } else if (continuing) {
    if (!last->flow_id.empty()) flow_id = last->flow_id;
    if (!last->goal.empty()) goal = last->goal;
  }
  goal = core::Shortened(goal, 2000);
  control.SetFlow({flow_id, goal, intentpb::ACTION_TYPE_UNSPECIFIED, {}, std::nullopt});

  // The flow's context box: kept by the flow store, else in the routing.
  ContextBox box;
  if (resuming || continuing) {
    std::optional<ContextBox> kept = resuming ? set_aside->box : last->box;
    if (flows_ != nullptr) {
      stage = "read_flow";
      absl::StatusOr<ContextBox> loaded = flows_->Load(who, flow_id, call_deadline());
      if (loaded.ok()) {
        kept = *std::move(loaded);
      } else if (!absl::IsNotFound(loaded.status())) {
        record_error("downstream_unavailable", "the flow's context box could not be read: " +
                                                   std::string(loaded.status().message()));
      }
    }
    if (kept) box = *std::move(kept);
  }
  box.goal = goal;
  ContextBox::Add(box.constraints, ContextConstraint(request));
  if (resuming) ContextBox::Add(box.progress, "resumed after an interruption");
  if (set_aside && !resuming) {
    ContextBox::Add(box.notes, "set aside, can be resumed: " + set_aside->goal);
  }

  {
    pb::SessionEvent* session = emit.Next().mutable_session();
    session->set_conversation_id(conversation_id);
    session->set_conversation_created(created);
    session->set_turn_id(turn_id);
    session->set_flow_id(flow_id);
    if (suspended_now) session->set_suspended_flow_id(suspended_now->flow_id);
    emit.Send();
  }
  emit.State(pb::AGENT_STATE_THINKING, "Reading what you asked");
  stage = "store_user_message";
  if (unstored) {
    emit.Error(pb::CHAT_ERROR_CODE_STORAGE_UNAVAILABLE,
               "conversation storage is unreachable: this answer is not remembered and no "
               "conversation was started; send the message again later to start one",
               /*fatal=*/false);
  } else if (user_spooled) {
    emit.Error(pb::CHAT_ERROR_CODE_STORAGE_UNAVAILABLE,
               "conversation storage is unreachable: answering without the history; this turn "
               "is not remembered yet, its messages are stored once storage is back",
               /*fatal=*/false);
  } else if (!window.ok() && !control.cancelled()) {
    stage = "read_window";
    emit.Error(pb::CHAT_ERROR_CODE_STORAGE_UNAVAILABLE,
               "the conversation history could not be read; answering from this message alone",
               /*fatal=*/false, std::string(window.status().message()));
  }

  int tool_calls = 0;
  std::vector<AgentInfo> agents;
  // Kept so that a planner step listing the agents again reuses it.
  std::optional<execpb::InvokeToolResponse> agent_list;
  std::optional<EarlyAnalysis> early_analysis;
  if (early.valid()) early_analysis = early.get();
  // The model calls the intent service made for this turn, used or not:
  // recorded with the turn's own once its attribution is known.
  std::vector<::omniforge::llm::v1::ModelCall> intent_calls;
  auto add_intent_calls = [&](const absl::StatusOr<intentpb::AnalyzeIntentResponse>& answer) {
    if (answer.ok()) {
      intent_calls.insert(intent_calls.end(), answer->model_calls().begin(),
                          answer->model_calls().end());
    }
  };
  if (early_analysis) {
    intent_calls = std::move(early_analysis->discarded_calls);
    add_intent_calls(early_analysis->response);
  }
  {
    absl::StatusOr<execpb::InvokeToolResponse> listed =
        early_analysis ? std::move(early_analysis->listed) : agents_listed.get();
    if (listed.ok() && !listed->is_error()) {
      agents = early_analysis ? std::move(early_analysis->agents)
                              : AgentsFromListResult(ParseObject(listed->result_json()));
      SawAgents(who, agents);
      agent_list = *std::move(listed);
    } else if (!listed.ok()) {
      stage = "list_agents";
      core::LogWarn("agents could not be listed",
                    {{"component", "orchestrator"},
                     {"stage", "list_agents"},
                     {"error", std::string(listed.status().message())}});
      record_error("downstream_unavailable",
                   "the agents could not be listed: " + std::string(listed.status().message()));
    }
  }

  intentpb::IntentAnalysis analysis;
  if (resuming) {
    analysis = ResumeAnalysis(*set_aside);
  } else if (plan_reply) {
    analysis = PlanReplyAnalysis(last.value_or(Routing{}), *plan_move);
  } else if (answering) {
    analysis = AnalysisOfAnswer(*last, request.message(), agents);
    ContextBox::Add(box.progress, "the user answered: " + request.message());
  } else {
    absl::StatusOr<intentpb::AnalyzeIntentResponse> analyzed = absl::UnknownError("not asked");
    // The early analysis read the window this turn took (all of it is
    // history: the message came right after it), with the same agents.
    if (early_analysis && early_analysis->window != 0 && early_analysis->window == kept_version) {
      analyzed = std::move(early_analysis->response);
    } else {
      intentpb::AnalyzeIntentRequest analyze;
      analyze.set_message(request.message());
      analyze.set_context_type(request.context_type());
      AddHistory(routings_, history, analyze);
      AddAgents(agents, analyze);
      analyzed = understanding_.AnalyzeIntent(who, analyze, call_deadline());
      add_intent_calls(analyzed);
    }
    if (analyzed.ok()) {
      analysis = analyzed->analysis();
    } else if (control.cancelled()) {
      analysis.set_action_type(intentpb::ACTION_TYPE_UNKNOWN);
      analysis.set_reasoning("the turn was cancelled");
    } else {
      analysis.set_action_type(intentpb::ACTION_TYPE_UNKNOWN);
      analysis.set_reasoning("the intent service could not be reached");
      stage = "analyze_intent";
      emit.Error(pb::CHAT_ERROR_CODE_INTERNAL,
                 "understanding is unavailable right now; answering with what I can",
                 /*fatal=*/false, std::string(analyzed.status().message()));
      core::LogWarn("intent analysis failed",
                    {{"component", "orchestrator"},
                     {"stage", "analyze_intent"},
                     {"error", std::string(analyzed.status().message())}});
    }
  }
  *emit.Next().mutable_intent()->mutable_analysis() = analysis;
  emit.Send();
  for (const auto& [key, value] : analysis.entities()) box.entities[key] = value;
  ContextBox::Add(box.notes, "understood as " + intentpb::ActionType_Name(analysis.action_type()) +
                                 " (" + intentpb::IntentSource_Name(analysis.source()) + ")");

  // A newer message on this conversation suspends the flow at a safe point:
  // after the analysis, before each tool call, while the model writes.
  bool suspended = false;
  auto suspend_now = [&] {
    if (!suspended && control.suspend_requested()) suspended = true;
    return suspended;
  };

  PolicyInput input{analysis, resuming ? goal : request.message(), resuming ? std::nullopt : last,
                    agents,   options_.max_clarifications,         goal};
  const intentpb::ContextType context_type =
      request.context_type() == intentpb::CONTEXT_TYPE_UNSPECIFIED ? intentpb::CONTEXT_TYPE_GLOBAL
                                                                   : request.context_type();
  input.context_type = context_type;
  // Every model call of the turn from here on is recorded for it: the
  // planner's, and a plan's generation and reviews, whichever way the plan
  // came (the model, the policy, the user's answer to a plan).
  const UsageAttribution attribution{who.tenant_id, who.user_id, conversation_id, turn_id,
                                     intentpb::ContextType_Name(context_type)};
  const ScopedUsageAttribution attributed(attribution);
  for (const ::omniforge::llm::v1::ModelCall& call : intent_calls) {
    const llm::UsageRecord record = llm::FromProto(call);
    model_usage.Add(record);
    if (options_.usage_sink != nullptr) options_.usage_sink->Record(record);
  }
  input.plans = plans_ != nullptr;

  // Runs one tool with its events, under the turn's guardrails; nullopt when
  // a guardrail stopped the turn (its error event is out) or the flow was
  // suspended.
  std::vector<std::string> listed;
  std::vector<std::string> tools_used;
  bool cancel_reported = false;
  bool time_reported = false;
  // The time guardrail's end of the turn, said once.
  auto report_out_of_time = [&] {
    if (time_reported) return;
    time_reported = true;
    emit.Error(pb::CHAT_ERROR_CODE_TIME_LIMIT,
               "this turn ran out of time; what was done so far is kept",
               /*fatal=*/true);
    ContextBox::Add(box.blockers, "the turn ran out of time");
  };
  // The guardrails before a tool call: true (its error event out) when the
  // turn must stop instead.
  auto stopped_before_call = [&]() -> bool {
    if (tool_calls >= options_.max_tool_calls) {
      emit.Error(pb::CHAT_ERROR_CODE_TOOL_CALL_LIMIT,
                 "this turn reached its limit of " + std::to_string(options_.max_tool_calls) +
                     " tool calls; what was done so far is kept",
                 /*fatal=*/true);
      ContextBox::Add(box.blockers, "the turn reached its tool call limit");
      return true;
    }
    if (control.cancelled()) {
      emit.Error(pb::CHAT_ERROR_CODE_CANCELLED, "the turn was cancelled", /*fatal=*/true);
      cancel_reported = true;
      return true;
    }
    if (core::NowMicros() >= turn_deadline) {
      report_out_of_time();
      return true;
    }
    return false;
  };
  auto run_tool = [&](const ToolStep& step, std::string* described) -> std::optional<ToolRun> {
    const std::string outer_stage = std::exchange(stage, "tool_call");
    const std::string outer_tool = std::exchange(stage_tool, step.tool);
    absl::Cleanup restore_stage = [&] {
      stage = outer_stage;
      stage_tool = outer_tool;
    };
    if (suspend_now()) {
      ContextBox::Add(box.next, "run " + step.tool + " " + step.arguments.dump());
      return std::nullopt;
    }
    if (stopped_before_call()) return std::nullopt;
    emit.State(pb::AGENT_STATE_EXECUTING_TOOL, "Running " + step.tool);
    const std::string call_id = core::NewUuid();
    const execpb::ToolRisk risk = RiskOf(who, step.tool, call_deadline());
    {
      pb::ToolCallEvent* call = emit.Next().mutable_tool_call();
      call->set_call_id(call_id);
      call->set_tool_name(step.tool);
      call->set_arguments_json(step.arguments.dump());
      call->set_risk(risk);
      emit.Send();
    }
    execpb::InvokeToolRequest invoke;
    invoke.set_tool_name(step.tool);
    invoke.set_arguments_json(step.arguments.dump());
    // A retried turn does not run a tool twice, nor an approved action a
    // second approval. Reads change nothing, so they go without a key and
    // its bookkeeping (two writes).
    if (!step.idempotency_key.empty()) {
      invoke.set_idempotency_key(step.idempotency_key);
    } else if (risk != execpb::TOOL_RISK_READ) {
      invoke.set_idempotency_key("turn:" + conversation_id + ":" + turn_id + ":" +
                                 std::to_string(tool_calls));
    }
    ++tool_calls;
    tools_used.push_back(step.tool);
    const int64_t call_started = core::NowMicros();
    absl::StatusOr<execpb::InvokeToolResponse> result;
    if (step.tool == "list_agents" && step.arguments.empty() && agent_list) {
      result = *agent_list;  // read a moment ago in this turn
    } else {
      result = tools_.InvokeTool(who, invoke, call_deadline());
    }
    pb::ToolResultEvent* out = emit.Next().mutable_tool_result();
    out->set_call_id(call_id);
    out->set_tool_name(step.tool);
    out->set_duration_ms((core::NowMicros() - call_started) / 1000.0);
    ToolRun ran;
    if (result.ok()) {
      ran = {result->result_json(), result->is_error()};
      out->set_result_json(ran.result_json);
      out->set_is_error(ran.is_error);
      emit.Send();
      if (described != nullptr) {
        ToolStep shown = step;
        if (!step.shown_arguments.is_null()) shown.arguments = step.shown_arguments;
        *described = DescribeResult(shown, ParseObject(ran.result_json), ran.is_error, &listed);
      }
    } else {
      const json error = ErrorResult(result.status());
      ran = {error.dump(), true};
      out->set_result_json(ran.result_json);
      out->set_is_error(true);
      emit.Send();
      if (control.cancelled()) {
        // Cut short by the cancel: the turn says CANCELLED, once.
      } else if (core::NowMicros() >= turn_deadline) {
        report_out_of_time();  // cut at the turn's deadline, not the tool's failure
      } else {
        emit.Error(pb::CHAT_ERROR_CODE_TOOL_FAILED, step.tool + " failed", /*fatal=*/false,
                   std::string(result.status().message()));
      }
      if (described != nullptr) *described = DescribeResult(step, error, true, nullptr);
    }
    ContextBox::Add(box.progress, (ran.is_error ? step.tool + " failed" : "ran " + step.tool));
    ContextBox::Add(box.data, step.tool + ": " + core::Shortened(ran.result_json, 240));
    if (ran.is_error) ContextBox::Add(box.blockers, step.tool + " failed");
    return ran;
  };

  // Plans: one call of the engine per turn, under the same guardrails as a
  // tool call; its events go out with the turn's. The plan it leaves waiting
  // for the user (for review, for an answer, or stopped before its end:
  // cancelled, out of time, suspended) is named in the routing.
  std::optional<Plan> plan_held;
  // The preview of plan_held when it waits for review: digest and expiry.
  std::string plan_digest;
  int64_t plan_expires = 0;
  std::string plan_words;  // the last plan in words, should the model write none
  PlanEvents plan_events(emit);
  const std::function<bool()> plan_stopped = [&control, turn_deadline] {
    return control.cancelled() || control.suspend_requested() || core::NowMicros() >= turn_deadline;
  };
  auto plan_context = [&] {
    PlanContext context;
    context.context_type = context_type;
    context.entity_id = request.entity_id();
    context.intent = input.intent;
    context.tools = Catalog(who, call_deadline())->tools;
    return context;
  };
  // nullopt: a guardrail stopped the turn first (its event is out).
  using PlanCall = std::function<absl::StatusOr<PlanOutcome>()>;
  auto run_plan = [&](const std::string& doing,
                      const PlanCall& call) -> std::optional<absl::StatusOr<PlanOutcome>> {
    const std::string outer_stage = std::exchange(stage, "plan");
    absl::Cleanup restore_stage = [&] { stage = outer_stage; };
    if (suspend_now()) {
      ContextBox::Add(box.next, doing + ": " + goal);
      return std::nullopt;
    }
    if (stopped_before_call()) return std::nullopt;
    ++tool_calls;
    tools_used.push_back(kCreatePlanTool);
    emit.State(pb::AGENT_STATE_EXECUTING_PLAN, doing);
    absl::StatusOr<PlanOutcome> outcome = call();
    // Cut by the turn's deadline (the plan stops at its next step): the
    // time guardrail's end, whichever way the plan came.
    const bool out_of_time =
        !control.cancelled() && !control.suspend_requested() && core::NowMicros() >= turn_deadline;
    if (!outcome.ok()) {
      if (out_of_time) {
        report_out_of_time();
      } else if (!control.cancelled()) {
        emit.Error(pb::CHAT_ERROR_CODE_PLAN_FAILED, doing + " failed", /*fatal=*/false,
                   std::string(outcome.status().message()));
      }
      ContextBox::Add(box.blockers, "the plan: " + std::string(outcome.status().message()));
      return outcome;
    }
    if (out_of_time && (outcome->plan.status == PlanStatus::kApproved ||
                        outcome->plan.status == PlanStatus::kRunning)) {
      report_out_of_time();
    }
    const Plan& plan = outcome->plan;
    plan_held.reset();
    plan_digest = outcome->digest;
    plan_expires = outcome->expires_at_micros;
    switch (plan.status) {
      case PlanStatus::kPendingReview:
        ContextBox::Add(box.blockers, "waiting for the user's review of the plan");
        plan_held = plan;
        break;
      case PlanStatus::kWaitingOnUser:
        ContextBox::Add(box.blockers, "a plan step waits for the user's answer");
        plan_held = plan;
        break;
      case PlanStatus::kApproved:
      case PlanStatus::kRunning:
        ContextBox::Add(box.blockers, "the plan stopped before its end");
        ContextBox::Add(box.next, "finish the plan when the user says continue");
        plan_held = plan;
        break;
      default:
        break;
    }
    ContextBox::Add(box.progress, "plan " + PlanStatusName(plan.status) + ": " +
                                      core::Shortened(plan.objective, 200));
    plan_words = PlanReplyText(plan);
    return outcome;
  };
  auto plan_text = [](const std::optional<absl::StatusOr<PlanOutcome>>& outcome,
                      const std::string& doing) -> std::string {
    if (!outcome) return "";
    if (!outcome->ok()) {
      return doing + " did not work: " + std::string(outcome->status().message());
    }
    return PlanReplyText((*outcome)->plan);
  };
  // agent_create_plan, as the model called it or the local policy asked.
  auto make_plan = [&](const PlanRequest& asked) {
    return run_plan(
        asked.mode == ExecutionMode::kAutoExecute ? "Making and running a plan" : "Making a plan",
        [&] {
          return plans_->CreatePlan(who, conversation_id, asked, plan_context(), plan_events,
                                    plan_stopped);
        });
  };
  auto create_plan = [&](const std::string& arguments_json) -> std::optional<ToolRun> {
    absl::StatusOr<PlanRequest> asked = ParsePlanRequest(arguments_json);
    if (!asked.ok()) return ToolRun{ErrorResult(asked.status()).dump(), true};
    std::optional<absl::StatusOr<PlanOutcome>> outcome = make_plan(*asked);
    if (!outcome) return std::nullopt;
    if (!outcome->ok()) return ToolRun{ErrorResult(outcome->status()).dump(), true};
    return ToolRun{(*outcome)->tool_result_json, false};
  };

  // The local policy resolves what the message refers to with the flow's
  // entities too ("run it" once the flow has named an agent); the
  // message's own entities win.
  if (resuming || continuing)
    input.intent.mutable_entities()->insert(box.entities.begin(), box.entities.end());
  // The planner sees the flow as the last turn left it; what blocks it and
  // what comes next are this turn's to say.
  const ContextBox carried = box;
  box.blockers.clear();
  box.next.clear();

  Move move;
  std::string text;
  bool text_sent = false;  // the model streamed the answer already
  PlannerResult planned;
  // The approval gate reads this message (or the client's decision) for the
  // actions the last turn left pending: it approves exactly those, drops
  // them, has them revised, or leaves them pending.
  std::vector<GateDecision> decisions;
  std::optional<PendingResolution> gate;
  std::optional<Move> approval;  // the gate decided this turn's move
  if (!resuming && !plan_move && last && !last->pending.empty()) {
    gate = ResolvePending(request.message(), request.decision(), analysis, last->pending, agents,
                          core::NowMicros(), options_.approvals.pending_ttl);
    // The policy as it is now: a tool denied since the preview never runs.
    for (auto it = gate->approved.begin(); it != gate->approved.end();) {
      if (options_.approvals.Decide(it->tool, it->risk) != GateVerdict::kDeny) {
        ++it;
        continue;
      }
      for (GateDecision& d : gate->decisions) {
        if (d.action_id == it->action_id) d.outcome = pb::ACTION_OUTCOME_DENIED;
      }
      gate->reply_text += (gate->reply_text.empty() ? "" : " ") +
                          std::string("The approval policy does not allow ") + it->summary +
                          " It was not run.";
      it = gate->approved.erase(it);
    }
    decisions = gate->decisions;
    approval = GateMove(*gate, *last, planner_ == nullptr, input);
    // What the gate decided is not the policy's to decide again.
    if (gate->reply != PendingReply::kOther) input.last->pending.clear();
  } else if (decides && !plan_move) {
    Move refused;
    refused.reply = "Nothing ran: no action " + request.decision().action_id() +
                    " is waiting for your decision (it was decided already, replaced, or never "
                    "existed).";
    emit.Error(pb::CHAT_ERROR_CODE_APPROVAL_REFUSED, refused.reply, /*fatal=*/false);
    approval = std::move(refused);
  }
  if (gate && !gate->refusal.empty()) {
    emit.Error(pb::CHAT_ERROR_CODE_APPROVAL_REFUSED, gate->refusal, /*fatal=*/false);
  }
  if (suspend_now()) {
    ContextBox::Add(box.next, "plan the answer to: " + goal);
  } else if (plan_move) {
    // The user's reply to the flow's plan goes to the engine.
    move.action_type = analysis.action_type();
    move.entities.insert(analysis.entities().begin(), analysis.entities().end());
    if (last) move.entities.insert(last->entities.begin(), last->entities.end());
    const std::string plan_id = plan_target->plan_id;
    std::string doing;
    PlanCall call;
    switch (*plan_move) {
      case PlanMove::kApprove:
        if (plan_target->digest.empty() || core::NowMicros() >= plan_target->expires_at_micros) {
          // Approved too late: shown again, nothing runs.
          doing = "Showing the plan again (its preview expired)";
          call = [&] { return plans_->Preview(who, plan_id, plan_context(), plan_events); };
          break;
        }
        doing = "Running the plan";
        call = [&] {
          return plans_->Approve(who, plan_id, plan_events, plan_stopped, plan_target->digest);
        };
        break;
      case PlanMove::kContinue:
        doing = "Running what is left of the plan";
        call = [&] { return plans_->Execute(who, plan_id, plan_events, plan_stopped); };
        break;
      case PlanMove::kAnswer:
        doing = "Going on with the plan";
        call = [&] {
          return plans_->AnswerQuestion(who, plan_id, request.message(), plan_events, plan_stopped);
        };
        break;
      case PlanMove::kRevise:
        doing = "Revising the plan";
        call = [&] {
          return plans_->Revise(who, plan_id, request.message(), plan_context(), plan_events);
        };
        break;
      case PlanMove::kReject:
        doing = "Dropping the plan";
        call = [&] { return plans_->Reject(who, plan_id, request.message()); };
        break;
    }
    const std::optional<absl::StatusOr<PlanOutcome>> outcome = run_plan(doing, call);
    move.reply = plan_text(outcome, doing);
    // The user's decision on a plan previewed for review, for the audit.
    if (outcome && outcome->ok() &&
        ParsePlanStatus(plan_target->status) == PlanStatus::kPendingReview) {
      pb::ActionOutcome decided = pb::ACTION_OUTCOME_UNSPECIFIED;
      if (*plan_move == PlanMove::kReject) decided = pb::ACTION_OUTCOME_REJECTED;
      if (*plan_move == PlanMove::kRevise) decided = pb::ACTION_OUTCOME_EDITED;
      if (*plan_move == PlanMove::kApprove) {
        decided = (*outcome)->plan.status == PlanStatus::kPendingReview
                      ? pb::ACTION_OUTCOME_EXPIRED  // shown again, not run
                      : pb::ACTION_OUTCOME_APPROVED;
      }
      decisions.push_back({plan_id, plan_target->digest, kCreatePlanTool, plan_target->objective,
                           execpb::TOOL_RISK_UNSPECIFIED, decided, decides ? "api" : "words"});
    }
    // A plan that could not be reached now still waits (another call acts
    // on it, or storage is down); one that moved on or is gone does not.
    if (outcome && !outcome->ok() && !absl::IsFailedPrecondition(outcome->status()) &&
        !absl::IsNotFound(outcome->status())) {
      auto kept = plans_->Get(who, plan_id);
      if (kept.ok()) plan_held = *std::move(kept);
    }
    // An approval of a plan that changed since its preview ran nothing: the
    // plan as it is now is shown for approval.
    if (*plan_move == PlanMove::kApprove && outcome && !outcome->ok() &&
        absl::IsFailedPrecondition(outcome->status())) {
      emit.Error(pb::CHAT_ERROR_CODE_APPROVAL_REFUSED, std::string(outcome->status().message()),
                 /*fatal=*/false);
      decisions.push_back({plan_id, plan_target->digest, kCreatePlanTool, plan_target->objective,
                           execpb::TOOL_RISK_UNSPECIFIED, pb::ACTION_OUTCOME_STALE,
                           decides ? "api" : "words"});
      absl::StatusOr<PlanOutcome> again =
          plans_->Preview(who, plan_id, plan_context(), plan_events);
      if (again.ok()) {
        plan_held = again->plan;
        plan_digest = again->digest;
        plan_expires = again->expires_at_micros;
        move.reply += "\n" + PlanReplyText(again->plan);
      }
    }
  } else if (planner_ != nullptr && !approval) {
    // The model plans; it streams its answer and runs what the gate lets
    // run unasked itself.
    class Io final : public PlannerIo {
     public:
      Io(Emitter& emit, decltype(run_tool)& run, decltype(create_plan)& plan,
         std::function<bool()> stopped)
          : emit_(emit), run_(run), plan_(plan), stopped_(std::move(stopped)) {}
      void Text(const std::string& delta) override {
        emit_.Next().mutable_text()->set_delta(delta);
        emit_.Send();
      }
      std::optional<ToolRun> RunTool(const ToolStep& step) override { return run_(step, nullptr); }
      std::optional<ToolRun> CreatePlan(const std::string& arguments_json) override {
        return plan_(arguments_json);
      }
      bool Stopped() override { return stopped_(); }

     private:
      Emitter& emit_;
      decltype(run_tool)& run_;
      decltype(create_plan)& plan_;
      std::function<bool()> stopped_;
    };
    PlannerRequest plan;
    plan.message = request.message();
    plan.context_type = context_type;
    plan.entity_id = request.entity_id();
    for (const convpb::Message& m : history.messages()) {
      if (m.role() == convpb::ROLE_USER || m.role() == convpb::ROLE_ASSISTANT) {
        plan.history.emplace_back(m.role() == convpb::ROLE_USER, m.content());
      }
    }
    plan.agents = agents;
    // A spoken edit goes to the model with what it changes.
    if (last && !resuming) plan.pending = last->pending;
    plan.approvals = &options_.approvals;
    plan.box = carried;
    plan.clarifications = last && continuing ? last->clarifications : 0;
    plan.max_clarifications = options_.max_clarifications;
    plan.resuming = resuming;
    plan.tools = Catalog(who, call_deadline())->tools;
    plan.offer_plans = plans_ != nullptr;
    plan.max_iterations = options_.max_iterations;
    plan.deadline_micros = turn_deadline;
    // Polled while the model streams, possibly off this thread: atomics only.
    plan.cancelled = [&control] { return control.cancelled() || control.suspend_requested(); };
    emit.State(pb::AGENT_STATE_THINKING, "Planning");
    Io io(emit, run_tool, create_plan, [&control, turn_deadline] {
      return control.cancelled() || control.suspend_requested() ||
             core::NowMicros() >= turn_deadline;
    });
    const auto profiled = metered_by_context_.find(plan.context_type);
    llm::ChatModel& model =
        profiled != metered_by_context_.end() ? *profiled->second : *metered_planner_;
    stage = "planner_stream";
    planned = RunModelPlanner(model, plan, io);
    if (planned.stopped) {
      // Cancelled, suspended or out of time: no fallback, keep what was said.
      planned.answered = true;
      if (!control.cancelled()) suspend_now();
      // Time ran out while the model answered (the stream is cut at the
      // turn's deadline) or between its steps.
      if (!control.cancelled() && !suspended && core::NowMicros() >= turn_deadline) {
        report_out_of_time();
      }
    }
    if (planned.answered) {
      move.action_type = analysis.action_type();
      move.entities.insert(analysis.entities().begin(), analysis.entities().end());
      move.propose = planned.propose;
      for (const std::string& tool : planned.denied) {
        decisions.push_back({core::NewUuid(), "", tool, "the model asked for " + tool,
                             RiskOf(who, tool, call_deadline()), pb::ACTION_OUTCOME_DENIED,
                             "policy"});
      }
      // A question counts against the cap; past it, the flow does not wait.
      move.clarifying = planned.asked && plan.clarifications < options_.max_clarifications;
      if (move.clarifying) move.asked = kAskedModel;
      text = planned.text;
      text_sent = !text.empty();
      if (planned.iteration_limit) {
        emit.Error(pb::CHAT_ERROR_CODE_ITERATION_LIMIT,
                   "the planner reached its limit of " + std::to_string(options_.max_iterations) +
                       " steps; what was done so far is kept",
                   /*fatal=*/true);
        ContextBox::Add(box.blockers, "the planner reached its iteration limit");
      }
      if (suspended) ContextBox::Add(box.next, "finish the answer to: " + goal);
    } else {
      emit.Error(pb::CHAT_ERROR_CODE_MODEL_FAILED,
                 "the language model could not answer; answering without it", /*fatal=*/false,
                 planned.error);
      core::LogWarn(
          "planner model failed",
          {{"component", "orchestrator"}, {"stage", "planner_stream"}, {"error", planned.error}});
      // An answer to a question is not met with another question.
      if (continuing && last->clarifications > 0) input.max_clarifications = 0;
    }
  }
  if (suspended) {
    move.propose.clear();  // drafted again when the flow resumes
  } else if (approval) {
    move = *std::move(approval);
  } else if (!plan_move && (planner_ == nullptr || !planned.answered)) {
    move = DecideLocally(input);
  }
  if (move.plan && plans_ != nullptr && !suspended) {
    PlanRequest asked;
    asked.objective = move.plan->objective;
    asked.mode = move.plan->draft ? ExecutionMode::kDraftOnly : ExecutionMode::kAutoExecute;
    move.reply = plan_text(make_plan(asked), "Making the plan");
  }
  // Every action proposed passes the gate: it runs (the policy lets it),
  // waits for the user's approval of exactly what is previewed, or is
  // refused. What waited and nothing replaced keeps waiting.
  std::vector<std::string> denied;
  const std::shared_ptr<const ToolCatalog> catalog = Catalog(who, call_deadline());
  // What the policy would run now, unless the gate approved it: anything
  // the policy does not run unasked is proposed instead.
  {
    std::vector<ToolStep> runs;
    for (ToolStep& step : move.run) {
      const execpb::ToolRisk risk = RiskIn(catalog->tools, step.tool);
      if (!step.idempotency_key.empty() ||
          options_.approvals.Decide(step.tool, risk) == GateVerdict::kRun) {
        runs.push_back(std::move(step));
        continue;
      }
      move.propose.push_back({core::NewUuid(), step.tool, step.arguments,
                              risk == execpb::TOOL_RISK_UNSPECIFIED ? execpb::TOOL_RISK_HIGH : risk,
                              ""});
    }
    move.run = std::move(runs);
  }
  std::vector<PendingAction> pending_after = PassProposals(
      move, catalog->tools, agents, options_.approvals, core::NowMicros(), decisions, denied);
  for (const std::string& what : denied) {
    const std::string said = "The approval policy does not allow this, so it was not run: " + what;
    emit.Error(pb::CHAT_ERROR_CODE_ACTION_DENIED, said, /*fatal=*/false);
    move.reply += (move.reply.empty() ? "" : "\n") + said;
  }
  if (pending_after.empty() && gate && !suspended) {
    pending_after = gate->carried;
  } else if (gate) {
    for (const PendingAction& old : gate->carried) {
      const bool kept =
          std::any_of(pending_after.begin(), pending_after.end(),
                      [&old](const PendingAction& a) { return a.action_id == old.action_id; });
      if (!kept) {
        GateDecision replaced{old.action_id, old.digest, old.tool,
                              old.summary,   old.risk,   pb::ACTION_OUTCOME_STALE,
                              "words"};
        decisions.push_back(std::move(replaced));
      }
    }
  }
  // Previews made now (the ones carried were shown before).
  std::vector<PendingAction> previews;
  for (const PendingAction& action : pending_after) {
    // (An action of an older release, sealed only now, is shown.)
    const bool shown_before =
        gate &&
        std::any_of(gate->carried.begin(), gate->carried.end(), [&action](const PendingAction& a) {
          return a.action_id == action.action_id && !a.digest.empty();
        });
    if (!shown_before) previews.push_back(action);
  }
  if (!text_sent) text = move.reply;
  if (planned.answered && !text_sent && text.empty()) text = plan_words;
  if (planned.answered && !text_sent && !previews.empty()) {
    // The model wrote no text.
    text = "Here is what I would do:";
    for (const PendingAction& action : previews) text += " " + action.summary;
  }
  if (listed.empty()) listed = move.listed_agents;

  // What the policy runs now (an approved action, or the local planner's reads).
  for (const ToolStep& step : move.run) {
    std::string described;
    if (!run_tool(step, &described)) {
      if (!suspended) break;
      continue;  // each step left is noted as NEXT of the suspended flow
    }
    text += (text.empty() ? "" : "\n") + described;
  }

  if (control.cancelled() && !cancel_reported && !suspended) {
    emit.Error(pb::CHAT_ERROR_CODE_CANCELLED, "the turn was cancelled", /*fatal=*/true);
  }
  const bool waiting = !suspended && (!pending_after.empty() || move.clarifying ||
                                      plan_held.has_value() || plan_carried.has_value());
  for (const PendingAction& action : previews) {
    FillPreview(action, *emit.Next().mutable_preview());
    emit.Send();
    ContextBox::Add(box.progress, "drafted " + action.tool);
    ContextBox::Add(box.blockers, "waiting for the user's approval: " + action.summary);
    ContextBox::Add(box.next, "run " + action.tool + " once approved");
  }
  if (!previews.empty()) {
  } else if (move.clarifying) {
    ContextBox::Add(box.progress, "asked: " + core::Shortened(text, 200));
    ContextBox::Add(box.blockers, "waiting for the user's answer");
    ContextBox::Add(box.next, "continue with the answer");
  } else if (gate) {
    for (const PendingAction& action : gate->approved) {
      ContextBox::Add(box.progress, "approved " + action.tool);
    }
  }
  if (waiting) emit.State(pb::AGENT_STATE_WAITING_ON_USER, "Waiting for your answer");
  if (planned.answered && plan_held && plan_held->status == PlanStatus::kPendingReview) {
    // The model presented its draft: the user is told how to answer.
    const std::string ask = std::string(text.empty() ? "" : "\n") + kPlanReviewQuestion;
    text += ask;
    if (text_sent) {
      emit.Next().mutable_text()->set_delta(ask);
      emit.Send();
    }
  }
  if (planned.answered && !previews.empty()) {
    const std::string ask = (text.empty() ? "" : "\n") + ApprovalQuestion(previews);
    text += ask;
    if (text_sent) {
      emit.Next().mutable_text()->set_delta(ask);
      emit.Send();
    }
  }
  if (suspended) {
    const std::string note = std::string(text.empty() ? "" : "\n") +
                             "(Set aside for your new message; say \"continue\" to pick it "
                             "up again.)";
    text += note;
    if (text_sent) {
      emit.Next().mutable_text()->set_delta(note);
      emit.Send();
    }
    ContextBox::Add(box.blockers, "suspended by a newer message");
    emit.State(pb::AGENT_STATE_SUSPENDED, "Set aside for your newer message; its state is saved");
  }
  if (!text_sent) {
    emit.Next().mutable_text()->set_delta(text);
    emit.Send();
  }

  Routing routing;
  routing.turn_id = turn_id;
  routing.flow_id = flow_id;
  routing.goal = goal;
  routing.action_type = move.action_type != intentpb::ACTION_TYPE_UNSPECIFIED
                            ? move.action_type
                            : analysis.action_type();
  routing.entities = move.entities;
  routing.listed_agents = listed;
  routing.pending = pending_after;
  routing.clarifications = move.clarifying ? (last ? last->clarifications : 0) + 1 : 0;
  routing.asked = move.asked;
  routing.tools_used = tools_used;
  routing.suspended = suspended;
  if (plan_held) {
    routing.plan = PlanRef{plan_held->id, PlanStatusName(plan_held->status), plan_held->objective,
                           plan_digest, plan_expires};
  } else if (plan_carried && !suspended && pending_after.empty()) {
    routing.plan = plan_carried;
  } else if (plan_carried && !suspended) {
    // A newer preview replaces the plan that waited: a "yes" now is for it.
    decisions.push_back({plan_carried->plan_id, plan_carried->digest, kCreatePlanTool,
                         plan_carried->objective, execpb::TOOL_RISK_UNSPECIFIED,
                         pb::ACTION_OUTCOME_STALE, "words"});
  }
  if (suspended) {
    SuspendedFlow self{flow_id,      goal,         routing.action_type,
                       box.entities, std::nullopt, routing.plan};
    if (flows_ == nullptr) self.box = box;
    routing.suspended_flow = self;
    control.Ended(std::move(self));  // the newer turn goes on from here
  } else if (!resuming) {
    routing.suspended_flow = std::move(set_aside);
  }
  if (flows_ == nullptr) routing.box = box;
  convpb::AppendMessageRequest reply;
  reply.set_conversation_id(conversation_id);
  reply.set_role(convpb::ROLE_ASSISTANT);
  reply.set_content(text.empty() ? " " : text);
  reply.set_idempotency_key("turn:" + turn_id + ":assistant");
  const json routing_json = RoutingToJson(routing);
  reply.set_metadata_json(routing_json.dump());
  // The flow's record is written while the reply is stored: one upsert,
  // for a flow that spans turns (it waits, is suspended, or was stored by an
  // earlier turn). A flow done within its first turn needs no record: its
  // box is never read again, and most turns are such flows.
  // The turn's closing writes (its reply, its flow) get a call's time of
  // their own, also when the turn ran out of time: what was done is kept.
  const int64_t closing_deadline = core::NowMicros() + call_micros;
  stage = "store_reply";
  core::SideCall<absl::Status> flow_saved;
  if (flows_ != nullptr && !unstored && (waiting || suspended || continuing || resuming)) {
    const core::ScopedCallCancellation kept(nullptr);  // not cancelled with the turn
    flow_saved = side_calls_.Async([&] {
      const FlowStatus status = suspended ? FlowStatus::kSuspended
                                : waiting ? FlowStatus::kWaiting
                                          : FlowStatus::kDone;
      return flows_->Save(who, {flow_id, conversation_id, turn_id, status, box}, closing_deadline);
    });
  }
  absl::StatusOr<std::optional<convpb::AppendMessageResponse>> stored_reply =
      unstored ? std::optional<convpb::AppendMessageResponse>() : store(reply, closing_deadline);
  if (stored_reply.ok() && !stored_reply->has_value() && !unstored && !user_spooled) {
    emit.Error(pb::CHAT_ERROR_CODE_STORAGE_UNAVAILABLE,
               "conversation storage became unreachable: the reply is stored once it is back",
               /*fatal=*/false);
  }
  if (!stored_reply.ok()) {
    emit.Error(pb::CHAT_ERROR_CODE_STORAGE_UNAVAILABLE,
               "the reply could not be stored; the next turn will not know it",
               /*fatal=*/false, std::string(stored_reply.status().message()));
    core::LogWarn("reply not stored", {{"component", "orchestrator"},
                                       {"stage", "store_reply"},
                                       {"error", std::string(stored_reply.status().message())}});
  }
  const bool stored_now =
      stored_reply.ok() && stored_reply->has_value() && !(*stored_reply)->deduplicated();
  // Read back from the stored JSON, exactly as a later turn (or another
  // replica) would parse it, only without the text.
  if (stored_now) {
    routings_.Remember((*stored_reply)->message().id(), RoutingFromJson(routing_json));
  }
  if (history_known && stored_now) {
    windows_.Advance(who, conversation_id, std::move(history), stored_user_message.message(),
                     (*stored_reply)->message());
  } else if (!unstored) {
    windows_.Forget(who, conversation_id);
  }
  if (flow_saved.valid()) {
    if (absl::Status saved = flow_saved.get(); !saved.ok()) {
      stage = "store_flow";
      core::LogWarn("flow not stored", {{"component", "orchestrator"},
                                        {"stage", "store_flow"},
                                        {"error", std::string(saved.message())}});
      record_error("downstream_unavailable",
                   "the flow's context box could not be stored: " + std::string(saved.message()));
    }
  }

  // Every decision of the gate, for the audit trail (ListActions).
  if (options_.audit != nullptr && core::IsUuid(conversation_id)) {
    for (const GateDecision& d : decisions) {
      ActionDecisionRecord record;
      record.tenant_id = who.tenant_id;
      record.user_id = who.user_id;
      record.conversation_id = conversation_id;
      record.turn_id = turn_id;
      record.action_id = d.action_id;
      record.digest = d.digest;
      record.tool = d.tool;
      record.summary = d.summary;
      record.risk = d.risk;
      record.outcome = d.outcome;
      record.decided_by = d.via == "policy" ? "policy" : who.user_id;
      record.via = d.via;
      if (absl::Status kept = options_.audit->Record(record); !kept.ok()) {
        stage = "store_decision";
        core::LogWarn("approval decision not recorded", {{"component", "orchestrator"},
                                                         {"stage", "store_decision"},
                                                         {"error", std::string(kept.message())}});
        record_error("downstream_unavailable",
                     "an approval decision could not be recorded: " + std::string(kept.message()));
      }
    }
  }

  pb::DoneEvent* done = emit.Next().mutable_done();
  done->set_is_final(!waiting && !suspended);
  if (stored_reply.ok() && stored_reply->has_value()) {
    done->set_assistant_message_id((*stored_reply)->message().id());
  }
  pb::TurnUsage* usage = done->mutable_usage();
  usage->set_tool_calls(tool_calls);
  usage->set_llm_calls(model_usage.llm_calls);
  usage->set_prompt_tokens(model_usage.prompt_tokens);
  usage->set_completion_tokens(model_usage.completion_tokens);
  usage->set_cost_usd(model_usage.cost_usd);
  usage->set_duration_ms((core::NowMicros() - started) / 1000.0);
  emit.Send();
  return absl::OkStatus();
}

}  // namespace omniforge::orchestrator
