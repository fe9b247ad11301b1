// How a turn's events reach the client: the Emitter builds each event and
// hands it to the turn's EventSink (error events also to the error log);
// a plan's events join the same stream (PlanEvents); and the turn's control
// hears that the turn ended on every path (EndsControl).
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <utility>

#include "services/orchestrator/plans/plan_engine.h"
#include "services/orchestrator/turn/error_kinds.h"
#include "services/orchestrator/turn/turn_runner.h"

namespace omniforge::orchestrator {

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

  // Every agent_state event names the client's context the turn works in.
  void SetContextType(pb::ContextType context_type) { context_type_ = context_type; }
  pb::ContextType context_type() const { return context_type_; }
  void State(pb::AgentState state, const std::string& details) {
    pb::AgentStateEvent* e = Next().mutable_agent_state();
    e->set_state(state);
    e->set_details(details);
    e->set_context_type(context_type_);
    Send();
  }
  void Error(pb::ChatErrorCode code, const std::string& message, bool fatal,
             const std::string& cause = "") {
    pb::ErrorEvent* e = Next().mutable_error();
    e->set_code(code);
    e->set_message(message);
    e->set_fatal(fatal);
    const ErrorEventReason& reason = ErrorEventReasonOf(code);
    e->set_reason(std::string(reason.reason));
    e->set_retryable(reason.retryable);
    Send();
    on_error_(code, cause.empty() ? message : message + ": " + cause);
  }

 private:
  EventSink& sink_;
  ErrorHook on_error_;
  pb::ContextType context_type_ = pb::CONTEXT_TYPE_GLOBAL;
  pb::ChatEvent event_;
};

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

}  // namespace omniforge::orchestrator
