// One chat turn, start to end, as a pipeline of stages (turn_pass.h lists
// them with their files): store the user's message (idempotently), load the
// flow it belongs to, understand it (the intent service, unless it answers
// the flow's own question, replies to its plan or asks to resume a
// suspended flow), decide (the approval gate, the planner), act (what may
// run, runs; what needs approval is previewed), compose the reply, and save
// it with its routing metadata and the flow's context box. Every step is
// streamed as an event.
//
// Work of several steps becomes a plan (PlanEngine): the model planner calls
// agent_create_plan, the local policy makes one for project work. A plan
// waiting for the user (a draft to review, a step's question, a plan that
// stopped before its end) is named in the routing, so the next message
// approves, revises or drops it, answers the question, or ("continue") runs
// what is left.
//
// A newer message on the same conversation suspends a running turn at its
// next safe point (before a tool call, between model iterations, while the
// model streams, between a plan's steps): the turn saves its flow, says so with an
// AGENT_STATE_SUSPENDED event and ends; the newer turn learns what was set
// aside and can resume it when asked.
//
// No gRPC here: the downstream services are interfaces (downstream.h), the
// events go to an EventSink and time comes from an injected clock, so the
// turn is tested on fakes (services/orchestrator/testing/).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "libs/core/call.h"
#include "libs/core/call_cancellation.h"
#include "libs/core/clock.h"
#include "libs/core/identity.h"
#include "libs/core/side_threads.h"
#include "libs/llm/chat_model.h"
#include "libs/llm/retry.h"
#include "libs/llm/usage.h"
#include "omniforge/orchestrator/v1/chat_service.pb.h"
#include "services/orchestrator/api/public_types.h"
#include "services/orchestrator/approvals/approval_audit.h"
#include "services/orchestrator/approvals/approval_gate.h"
#include "services/orchestrator/downstream/append_spool.h"
#include "services/orchestrator/downstream/downstream.h"
#include "services/orchestrator/downstream/window_cache.h"
#include "services/orchestrator/flow/flow_store.h"
#include "services/orchestrator/flow/memory_flow_store.h"
#include "services/orchestrator/flow/routing.h"
#include "services/orchestrator/planner/local_policy.h"
#include "services/orchestrator/plans/plan_engine.h"
#include "services/orchestrator/turn/error_log.h"
#include "services/orchestrator/turn/request.h"
#include "services/orchestrator/turn/tool_catalog.h"
#include "services/orchestrator/usage/usage_attribution.h"

namespace omniforge::orchestrator {

namespace pb = ::omniforge::orchestrator::v1;

struct TurnOptions {
  // Guardrails: a turn ends with an error event naming the cap it reached.
  std::chrono::milliseconds turn_timeout{90000};
  int max_tool_calls = 8;
  // At most this many clarifying questions in a row; then proceed.
  int max_clarifications = 2;
  // Model calls of the planner per turn.
  int max_iterations = 10;
  // The context window's token budget beyond the recent exchanges.
  int context_token_budget = 2000;
  // Context windows kept after a turn for the conversation's next one
  // (window_cache.h); 0: every turn reads its window.
  size_t window_cache_bytes = 32 << 20;
  // Threads for the calls turns make beside their own work (listing the
  // agents, reading the window, an early analysis, saving the flow), over
  // all turns; when all are busy a turn makes such a call itself.
  size_t max_side_threads = core::SideThreads::kDefaultMaxThreads;
  // Upper bound of each downstream call (within the turn's own deadline).
  std::chrono::milliseconds call_timeout{10000};
  // A tool call that failed for a temporary reason (downstream/recovery.h)
  // is tried again, waiting between attempts, within the turn's time.
  llm::RetryPolicy tool_retry{
      .max_attempts = 3, .initial_backoff_micros = 100'000, .max_backoff_micros = 2'000'000};
  // The planner model of a context type whose profile is not the planner's
  // own (planner.profiles); the models must outlive the runner. Used only
  // when the runner has a planner model.
  std::map<::omniforge::intent::v1::ContextType, llm::ChatModel*> planner_by_context;
  // Where each turn's model calls are stored, one row per turn
  // (orchestration.llm_turn_usage): its own and those the intent service
  // made for it; null: they only count in `done`. Must outlive the runner.
  ScopeUsageWriter* usage_writer = nullptr;
  // The approval gate's policy (approval_gate.h): what runs unasked, what
  // waits for the user's approval of exactly what was previewed, what is
  // refused, and how long a preview can be approved.
  ApprovalPolicy approvals;
  // Every decision of the gate is recorded here (approval_audit.h); null:
  // not recorded. Must outlive the runner.
  ApprovalAudit* audit = nullptr;
  // The turn's clock (deadlines, guardrails, expiry of previews); null: the
  // system clock. Must outlive the runner.
  const core::Clock* clock = nullptr;
  // The clock a request's "today" and "tomorrow" are read by (the meeting
  // flow's days and free times); null: the turn's clock. Tests fix it
  // (turn.calendar_now) beside the sandbox's, apart from the deadlines.
  // Must outlive the runner.
  const core::Clock* calendar_clock = nullptr;
};

// Receives a turn's events in order and numbers them (seq) as it sends
// them, so it may join pieces of text into one event. Emit may block
// (backpressure); it is called from the thread that runs the turn.
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void Emit(pb::ChatEvent event) = 0;
};

// How a running turn is reached from outside (CancelTurn, a client gone, a
// newer message on its conversation), and what it hands to the turn that
// suspended it. Thread-safe; shared by the turn and those who reach it.
class TurnControl final {
 public:
  // Also cancels the turn's downstream calls in flight (cancel_signal()).
  void Cancel() {
    cancelled_.store(true);
    signal_.Cancel();
  }
  bool cancelled() const { return cancelled_.load(); }
  // What the turn's downstream calls listen to (each carries it in its
  // core::Call).
  core::CancelSignal& cancel_signal() { return signal_; }
  // Asks the turn to suspend its flow at its next safe point.
  void RequestSuspend() { suspend_.store(true); }
  bool suspend_requested() const { return suspend_.load(); }
  // Set before the turn starts when the tenant's LLM budget is spent and
  // the configuration says local mode (limits/tenant_limits.h): the turn
  // makes no model calls of its own nor asks the intent service or the plan
  // generator for any, and tells the user so.
  void RunLocally() { local_only_.store(true); }
  bool local_only() const { return local_only_.load(); }

  // The turn's flow, once it is known.
  void SetFlow(SuspendedFlow flow);
  // The turn is over: `suspended` is its flow's saved state when it was
  // suspended, nullopt when it ended otherwise. Only the first call (of this
  // or EndedElsewhere) counts.
  void Ended(std::optional<SuspendedFlow> suspended);
  // The turn ran on another replica and is over, as the turn bus tells it:
  // `set_aside_flow_id` names the flow it suspended (empty: none), whose
  // state that replica saved in the flow store. What the suspension hands
  // on is then that id alone (ended_elsewhere()).
  void EndedElsewhere(const std::string& set_aside_flow_id);
  // Whether the turn ended on another replica: the flow it set aside has its
  // id only, and the turn that goes on reads the rest from the flow store.
  bool ended_elsewhere();
  // Waits until the turn is over or `deadline` passes. Returns the flow it suspended; when it is
  // still running (it suspends at its next safe point), its flow as known so far; nullopt when it
  // finished without suspending.
  std::optional<SuspendedFlow> AwaitSuspension(core::TimePoint deadline);
  // The flow the turn set aside, once it ended suspended; else nullopt.
  std::optional<SuspendedFlow> SuspendedState();
  // When the turn was asked for (the control is made as the request
  // arrives): the start of its time to first event and first token.
  std::chrono::steady_clock::time_point asked_at() const { return asked_at_; }

 private:
  const std::chrono::steady_clock::time_point asked_at_ = std::chrono::steady_clock::now();
  std::atomic<bool> cancelled_{false};
  core::CancelSignal signal_;
  std::atomic<bool> suspend_{false};
  std::atomic<bool> local_only_{false};
  absl::Mutex mu_;
  absl::CondVar ended_cv_;
  std::optional<SuspendedFlow> flow_ ABSL_GUARDED_BY(mu_);
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  bool elsewhere_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<SuspendedFlow> suspended_ ABSL_GUARDED_BY(mu_);
};

class TurnRunner final {
 public:
  // The services (and `planner`, `flows`, `errors`, `plans`, `spool`) must
  // outlive the runner. Without a planner model, turns are planned by the
  // local policy. Without a flow store, flow states are kept in memory
  // (MemoryFlowStore) and go with the process. Without an error log,
  // failures only reach the user. Without a
  // plan engine, no plans are made. With a spool, a turn goes on while
  // conversation storage is unreachable (see Run); without one, it fails.
  // Thread-safe: turns run concurrently.
  TurnRunner(Memory& memory, Understanding& understanding, Tools& tools, const TurnOptions& options,
             llm::ChatModel* planner = nullptr, FlowStore* flows = nullptr,
             TurnErrorLog* errors = nullptr, PlanEngine* plans = nullptr,
             AppendSpool* spool = nullptr);

  // Runs one turn for `who`. Returns an error, having emitted nothing and
  // stored nothing, for a request that fails validation, a conversation that
  // is not the caller's (NOT_FOUND) or conversation storage that cannot take
  // the user's message (UNAVAILABLE without a spool, RESOURCE_EXHAUSTED
  // when the spool is full: nothing was acknowledged, safe to retry with the
  // same turn_id). With a spool and storage unreachable the turn runs
  // without history and says so in a STORAGE_UNAVAILABLE error event (not
  // fatal): the messages of a known conversation wait in the spool until
  // storage takes them; a new conversation cannot be started, so such a
  // turn answers without storing anything (its session event has no
  // conversation id). Everything later is an event; the last is
  // `done`. `control` is polled between steps (cancel, suspend) and told
  // when the turn ends. `interrupted`, when set, is the control of the turn
  // this message suspends (its suspension was requested): this turn waits
  // for its state, up to one call timeout, before it plans. `client_deadline`
  // (TimePoint::max(): none) bounds the turn and every
  // downstream call together with the turn's own timeout.
  absl::Status Run(const core::Identity& who, const pb::StreamChatRequest& request,
                   TurnControl& control, EventSink& sink,
                   core::TimePoint client_deadline = core::TimePoint::max(),
                   const std::shared_ptr<TurnControl>& interrupted = nullptr) const;

  // Deletes one of the caller's conversations: first what the orchestrator
  // keeps of it (its flows, its plans and their steps, the window kept for
  // its next turn), then the conversation in storage (its messages and its
  // agent dialogues). NOT_FOUND, with nothing deleted, for a conversation
  // that is not the caller's; UNAVAILABLE when a store cannot be reached (a
  // retry finishes the work). The caller stops a running turn first.
  absl::Status DeleteConversation(const core::Call& call, const std::string& conversation_id) const;

  // A reattach to a finished turn whose events are no longer kept: its
  // stored outcome (session with replayed set, the assistant's text, done)
  // to `sink`, without storing anything. NOT_FOUND (TURN_NOT_FOUND) when the caller has no
  // finished turn `request.turn_id()` in `request.conversation_id()` (a
  // conversation that is not the caller's included); the conversation
  // service's error when it cannot be read.
  absl::Status ReplayStored(const core::Identity& who, const pb::StreamChatRequest& request,
                            EventSink& sink, core::TimePoint deadline) const;

 private:
  friend class TurnPass;  // the turn's stages use the runner's collaborators

  const core::Clock& clock() const { return clock_; }
  const core::Clock& calendar_clock() const {
    return options_.calendar_clock != nullptr ? *options_.calendar_clock : clock_;
  }

  // The executor's tools (tool_catalog.h). Shared, not copied: a turn reads
  // it on every tool call.
  using ToolCatalog = orchestrator::ToolCatalog;
  std::shared_ptr<const ToolCatalog> Catalog(const core::Call& call) const {
    return catalog_.Get(call);
  }
  execpb::ToolRisk RiskOf(const core::Call& call, const std::string& tool) const;

  Memory& memory_;
  Understanding& understanding_;
  Tools& tools_;
  const TurnOptions options_;
  NoApprovalAudit no_audit_;  // the trail when the options name none
  ApprovalAudit& audit_;
  llm::ChatModel* const planner_;
  // The planner models as the turn calls them: metered (usage_meter.h), so
  // `done` carries what the turn's model calls cost. Null without a planner.
  std::unique_ptr<llm::ChatModel> metered_planner_;
  std::map<::omniforge::intent::v1::ContextType, std::unique_ptr<llm::ChatModel>>
      metered_by_context_;
  // The flow store made when the runner was given none.
  const std::unique_ptr<FlowStore> own_flows_;
  FlowStore* const flows_;      // never null
  NoTurnErrorLog no_errors_;    // the error log when the runner was given none
  TurnErrorLog* const errors_;  // never null
  PlanEngine* const plans_;
  AppendSpool* const spool_;
  const core::Clock& clock_;

  // Calls a turn makes beside its own work (listing the agents, reading the
  // window, saving the flow), on threads kept from turn to turn, at most
  // options_.max_side_threads of them.
  mutable core::SideThreads side_calls_;
  mutable WindowCache windows_;
  mutable RoutingMemo routings_{4096};  // the routings of the windows read

  // The agents each user had at their last turn, as the intent service is
  // given them (name, description): the next turn's early analysis starts
  // with them while the list is read again (see Run).
  static constexpr size_t kMaxUsersSeen = 4096;
  static std::string AgentsKey(const core::Identity& who) {
    return who.tenant_id + std::string(1, '\0') + who.user_id;
  }
  // Null when the user's last turn is not known.
  std::shared_ptr<const std::vector<AgentInfo>> AgentsSeen(const core::Identity& who) const;
  void SawAgents(const core::Identity& who, const std::vector<AgentInfo>& agents) const;
  mutable absl::Mutex agents_mu_;
  mutable std::unordered_map<std::string, std::shared_ptr<const std::vector<AgentInfo>>>
      agents_seen_ ABSL_GUARDED_BY(agents_mu_);

  ToolCatalogCache catalog_;
};

}  // namespace omniforge::orchestrator
