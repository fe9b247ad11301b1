#include "services/orchestrator/turn/turn_runner.h"

#include "libs/core/ambient.h"
#include "libs/core/ids.h"
#include "libs/core/metrics.h"
#include "libs/trace/span.h"
#include "services/orchestrator/turn/emitter.h"
#include "services/orchestrator/turn/history.h"
#include "services/orchestrator/turn/turn_pass.h"
#include "services/orchestrator/usage/usage_meter.h"

namespace omniforge::orchestrator {

TurnRunner::TurnRunner(Memory& memory, Understanding& understanding, Tools& tools,
                       const TurnOptions& options, llm::ChatModel* planner, FlowStore* flows,
                       TurnErrorLog* errors, PlanEngine* plans, AppendSpool* spool)
    : memory_(memory),
      understanding_(understanding),
      tools_(tools),
      options_(options),
      audit_(options_.audit != nullptr ? *options_.audit : no_audit_),
      planner_(planner),
      own_flows_(flows == nullptr ? std::make_unique<MemoryFlowStore>() : nullptr),
      flows_(flows != nullptr ? flows : own_flows_.get()),
      errors_(errors != nullptr ? errors : &no_errors_),
      plans_(plans),
      spool_(spool),
      clock_(options_.clock != nullptr ? *options_.clock : core::SystemClock()),
      side_calls_(options.max_side_threads),
      windows_(
          {.max_bytes = options.window_cache_bytes, .token_budget = options.context_token_budget}),
      catalog_(tools, clock_) {
  if (planner_ == nullptr) return;
  metered_planner_ = std::make_unique<MeteredChatModel>(*planner_);
  for (const auto& [type, model] : options_.planner_by_context) {
    metered_by_context_[type] = std::make_unique<MeteredChatModel>(*model);
  }
}

execpb::ToolRisk TurnRunner::RiskOf(const core::Call& call, const std::string& tool) const {
  const std::shared_ptr<const ToolCatalog> catalog = Catalog(call);
  auto it = catalog->risk_by_name.find(tool);
  return it == catalog->risk_by_name.end() ? execpb::TOOL_RISK_UNSPECIFIED : it->second;
}

std::shared_ptr<const std::vector<AgentInfo>> TurnRunner::AgentsSeen(
    const core::Identity& who) const {
  absl::MutexLock lock(&agents_mu_);
  auto it = agents_seen_.find(AgentsKey(who));
  return it == agents_seen_.end() ? nullptr : it->second;
}

void TurnRunner::SawAgents(const core::Identity& who, const std::vector<AgentInfo>& agents) const {
  const std::string key = AgentsKey(who);
  {
    absl::MutexLock lock(&agents_mu_);
    auto it = agents_seen_.find(key);
    // Most turns see what the last one saw: nothing to copy.
    if (it != agents_seen_.end() && SameForAnalysis(*it->second, agents)) return;
  }
  auto seen = std::make_shared<const std::vector<AgentInfo>>(agents);
  absl::MutexLock lock(&agents_mu_);
  // A bound on memory; the next turn of each user fills it again.
  if (agents_seen_.size() >= kMaxUsersSeen) agents_seen_.clear();
  agents_seen_[key] = std::move(seen);
}

absl::Status TurnRunner::DeleteConversation(const core::Call& call,
                                            const std::string& requested_id) const {
  // In its one form: what the orchestrator keeps of it (the cached window,
  // the flows, the plans) is keyed by it.
  const std::string conversation_id = core::CanonicalId(requested_id);
  convpb::GetConversationRequest owned;
  owned.set_conversation_id(conversation_id);
  if (auto found = memory_.GetConversation(call, owned); !found.ok()) return found.status();
  windows_.Forget(call.who, conversation_id);
  if (auto flows = flows_->Forget(call, conversation_id); !flows.ok()) return flows.status();
  if (plans_ != nullptr) {
    if (auto plans = plans_->Forget(call.who, conversation_id); !plans.ok()) {
      return plans.status();
    }
  }
  convpb::DeleteConversationRequest gone;
  gone.set_conversation_id(conversation_id);
  return memory_.DeleteConversation(call, gone).status();
}

namespace {

// Times what the client waits for: the turn's first event and its first
// text (the first token of the answer), from the request's arrival.
class TimedSink final : public EventSink {
 public:
  TimedSink(EventSink& sink, std::chrono::steady_clock::time_point asked_at)
      : sink_(sink), asked_at_(asked_at) {}

  void Emit(pb::ChatEvent event) override {
    if (!first_event_) {
      first_event_ = true;
      Histogram("omniforge_orchestrator_time_to_first_event_seconds",
                "Time from a StreamChat request to its first event.")
          .Observe(Elapsed());
    }
    if (!first_token_ && event.has_text() && !event.text().delta().empty()) {
      first_token_ = true;
      Histogram("omniforge_orchestrator_time_to_first_token_seconds",
                "Time from a StreamChat request to the first text of its answer.")
          .Observe(Elapsed());
    }
    sink_.Emit(std::move(event));
  }

 private:
  static core::Histogram& Histogram(const char* name, const char* help) {
    return core::MetricsRegistry::Global().GetHistogram(name, help);
  }
  double Elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - asked_at_).count();
  }

  EventSink& sink_;
  std::chrono::steady_clock::time_point asked_at_;
  bool first_event_ = false;
  bool first_token_ = false;
};

// Runs one stage of the turn in a span of its own.
template <typename Stage>
auto InSpan(const char* name, Stage&& stage) {
  const trace::ScopedSpan span(name);
  return stage();
}

}  // namespace

// The turn, stage by stage (turn_pass.h says what each stage does), in the
// turn's span (a child of the caller's traceparent) with a span per stage.
absl::Status TurnRunner::Run(const core::Identity& who, const pb::StreamChatRequest& request,
                             TurnControl& control, EventSink& sink, core::TimePoint client_deadline,
                             const std::shared_ptr<TurnControl>& interrupted) const {
  const EndsControl ends_control(control);
  trace::ScopedSpan turn_span("StreamChat", trace::SpanKind::kServer);
  turn_span.span().SetAttribute("tenant", who.tenant_id);
  if (absl::Status valid = ValidateStreamChatRequest(request); !valid.ok()) {
    turn_span.span().SetError(valid.ToString());
    return valid;
  }
  TimedSink timed(sink, control.asked_at());
  TurnPass turn(*this, who, request, control, timed, client_deadline, interrupted);
  if (absl::Status stored = InSpan("stage.store_message", [&] { return turn.StoreMessage(); });
      !stored.ok()) {
    turn_span.span().SetError(stored.ToString());
    return stored;
  }
  // From here on every log line names the turn and its conversation.
  const core::ScopedLogContext log({turn.turn_id(), turn.conversation_id(), who.tenant_id});
  turn_span.span().SetAttribute("conversation_id", turn.conversation_id());
  turn_span.span().SetAttribute("turn_id", turn.turn_id());
  if (turn.kind() == TurnKind::kRetry && InSpan("stage.replay", [&] { return turn.Replay(); })) {
    return absl::OkStatus();
  }
  InSpan("stage.load_history", [&] { turn.LoadFlow(); });
  InSpan("stage.analyze_intent", [&] { turn.Understand(); });
  InSpan("stage.plan", [&] { turn.Decide(); });
  InSpan("stage.act", [&] { turn.Act(); });
  InSpan("stage.compose", [&] { turn.Compose(); });
  InSpan("stage.store", [&] { turn.Save(); });
  return absl::OkStatus();
}

absl::Status TurnRunner::ReplayStored(const core::Identity& who,
                                      const pb::StreamChatRequest& request, EventSink& sink,
                                      core::TimePoint deadline) const {
  TurnControl control;
  TurnPass turn(*this, who, request, control, sink, deadline, nullptr);
  return turn.ReplayStored();
}

}  // namespace omniforge::orchestrator
