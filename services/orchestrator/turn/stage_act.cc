// Stage 6, Act: the move through the approval gate's policy (what runs,
// what waits for the user's approval of exactly what is previewed, what is
// refused), the plan the local policy asked for, and the tools that run
// now. Every tool call and plan call passes the turn's guardrails first:
// tool calls, cancel, time (on the turn's clock), and a requested suspend.
#include <algorithm>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "libs/core/ids.h"
#include "libs/core/logging.h"
#include "libs/core/metrics.h"
#include "libs/core/text.h"
#include "services/orchestrator/downstream/recovery.h"
#include "services/orchestrator/turn/gate_moves.h"
#include "services/orchestrator/turn/history.h"
#include "services/orchestrator/turn/turn_pass.h"

namespace omniforge::orchestrator {

using nlohmann::json;

namespace {

core::Counter& ToolRetries() {
  static core::Counter& counter = core::MetricsRegistry::Global().GetCounter(
      "omniforge_orchestrator_tool_retries_total",
      "Tool calls of turns tried again after a temporary failure.", {});
  return counter;
}

}  // namespace

void TurnPass::Act() {
  if (move_.plan && PlansOn() && !suspended_) {
    PlanRequest asked;
    asked.objective = move_.plan->objective;
    asked.mode = move_.plan->draft ? ExecutionMode::kDraftOnly : ExecutionMode::kAutoExecute;
    move_.reply = PlanText(MakePlan(asked), "Making the plan");
  }
  PassGate();
  ChooseText();
  RunMoves();
}

// A newer message on this conversation suspends the flow at a safe point:
// after the analysis, before each tool call, when a plan stopped at its next
// step, while the model writes.
bool TurnPass::TrySuspend() {
  if (!suspended_ && control_.suspend_requested()) suspended_ = true;
  return suspended_;
}

// The time guardrail's end of the turn, said once.
void TurnPass::ReportOutOfTime() {
  if (time_reported_) return;
  time_reported_ = true;
  emit_.Error(pb::CHAT_ERROR_CODE_TIME_LIMIT,
              "this turn ran out of time; what was done so far is kept", /*fatal=*/true);
  ContextBox::Add(box_.blockers, "the turn ran out of time");
}

// The guardrails before a tool call: true (its error event out) when the
// turn must stop instead.
bool TurnPass::StoppedBeforeCall() {
  const int max_tool_calls = runner_.options_.max_tool_calls;
  if (tool_calls_ >= max_tool_calls) {
    emit_.Error(pb::CHAT_ERROR_CODE_TOOL_CALL_LIMIT,
                "this turn reached its limit of " + std::to_string(max_tool_calls) +
                    " tool calls; what was done so far is kept",
                /*fatal=*/true);
    ContextBox::Add(box_.blockers, "the turn reached its tool call limit");
    return true;
  }
  if (control_.cancelled()) {
    emit_.Error(pb::CHAT_ERROR_CODE_CANCELLED, "the turn was cancelled", /*fatal=*/true);
    cancel_reported_ = true;
    return true;
  }
  if (ctx_.Expired()) {
    ReportOutOfTime();
    return true;
  }
  return false;
}

// Runs one tool with its events, under the turn's guardrails; nullopt when
// a guardrail stopped the turn (its error event is out) or the flow was
// suspended. `described`, when set, receives the result in words.
std::optional<ToolRun> TurnPass::RunTool(const ToolStep& step, std::string* described) {
  const std::string outer_stage = std::exchange(stage_, "tool_call");
  const std::string outer_tool = std::exchange(stage_tool_, step.tool);
  absl::Cleanup restore_stage = [&] {
    stage_ = outer_stage;
    stage_tool_ = outer_tool;
  };
  if (TrySuspend()) {
    ContextBox::Add(box_.next, "run " + step.tool + " " + step.arguments.dump());
    return std::nullopt;
  }
  if (StoppedBeforeCall()) return std::nullopt;
  emit_.State(pb::AGENT_STATE_EXECUTING_TOOL, "Running " + step.tool);
  const std::string call_id = core::NewUuid();
  const execpb::ToolRisk risk = runner_.RiskOf(DownstreamCall(), step.tool);
  SendToolCall(step, call_id, risk);
  const execpb::InvokeToolRequest invoke = Invocation(step, risk);
  ++tool_calls_;
  tools_used_.push_back(step.tool);
  const core::TimePoint call_started = ctx_.Now();
  absl::StatusOr<execpb::InvokeToolResponse> result;
  if (step.tool == "list_agents" && step.arguments.empty() && agent_list_) {
    result = *agent_list_;  // read a moment ago in this turn
  } else {
    result = InvokeWithRetry(invoke);
  }
  pb::ToolResultEvent* out = emit_.Next().mutable_tool_result();
  out->set_call_id(call_id);
  out->set_tool_name(step.tool);
  out->set_duration_ms(
      std::chrono::duration<double, std::milli>(ctx_.Now() - call_started).count());
  ToolRun ran;
  DescribeToolResult(step, result, *out, ran, described);
  tool_runs_.emplace_back(step.tool, ran.is_error);
  ContextBox::Add(box_.progress, (ran.is_error ? step.tool + " failed" : "ran " + step.tool));
  ContextBox::Add(box_.data, step.tool + ": " + core::Shortened(ran.result_json, 240));
  if (ran.is_error) {
    ContextBox::Add(box_.blockers, step.tool + " failed");
    NoteFailedCall(step, result);
  } else if (failed_ && failed_->plan_id.empty() && failed_->failed.tool == step.tool) {
    failed_.reset();  // the model planner made it work after all
  }
  return ran;
}

// A call that failed for a temporary reason (downstream/recovery.h) is
// tried again after a jittered wait, while the turn has time for the wait
// and a whole call. Safe: reads change nothing, and every write carries its
// idempotency key, so a write that ran before its answer was lost is not
// run twice. Waiting ends at once when the turn is cancelled.
absl::StatusOr<execpb::InvokeToolResponse> TurnPass::InvokeWithRetry(
    const execpb::InvokeToolRequest& invoke) {
  const llm::RetryPolicy& policy = runner_.options_.tool_retry;
  for (int attempt = 1;; ++attempt) {
    absl::StatusOr<execpb::InvokeToolResponse> result =
        runner_.tools_.InvokeTool(DownstreamCall(), invoke);
    Failure failure = Failure::kPermanent;
    if (!result.ok()) {
      failure = ClassifyStatus(result.status().code());
    } else if (result->is_error()) {
      failure = ClassifyToolError(ParseObject(result->result_json()));
    } else {
      return result;
    }
    const std::chrono::microseconds wait(
        llm::RetryWaitMicros(policy, attempt, llm::DefaultRandom().Uniform(), std::nullopt));
    const auto time_left =
        std::chrono::duration_cast<std::chrono::microseconds>(ctx_.deadline() - ctx_.Now());
    const auto room = std::chrono::duration_cast<std::chrono::microseconds>(
        std::min(runner_.options_.call_timeout, std::chrono::milliseconds(1000)));
    if (control_.cancelled() || !ShouldRetry(policy, failure, attempt, wait, time_left, room)) {
      return result;
    }
    const std::string why = result.ok() ? core::Shortened(result->result_json(), 160)
                                        : std::string(result.status().message());
    core::LogWarn("tool call failed for a temporary reason; trying again",
                  {{"component", "orchestrator"},
                   {"tool", invoke.tool_name()},
                   {"attempt", absl::StrCat(attempt)},
                   {"wait_ms", absl::StrCat(wait.count() / 1000)},
                   {"error", why}});
    ToolRetries().Inc();
    emit_.State(pb::AGENT_STATE_EXECUTING_TOOL,
                absl::StrCat("Trying ", invoke.tool_name(), " again (attempt ", attempt + 1, " of ",
                             policy.max_attempts, "): ", core::Shortened(why, 120)));
    if (!llm::DefaultClock().SleepFor(wait.count(), [this] { return control_.cancelled(); })) {
      return result;
    }
  }
}

void TurnPass::SendToolCall(const ToolStep& step, const std::string& call_id,
                            execpb::ToolRisk risk) {
  pb::ToolCallEvent* call = emit_.Next().mutable_tool_call();
  call->set_call_id(call_id);
  call->set_tool_name(step.tool);
  call->set_arguments_json(step.arguments.dump());
  call->set_risk(PublicRisk(risk));
  emit_.Send();
}

// A retried turn does not run a tool twice, nor an approved action a second
// approval. Reads change nothing, so they go without a key and its
// bookkeeping (two writes).
execpb::InvokeToolRequest TurnPass::Invocation(const ToolStep& step, execpb::ToolRisk risk) const {
  execpb::InvokeToolRequest invoke;
  invoke.set_tool_name(step.tool);
  invoke.set_arguments_json(step.arguments.dump());
  if (!step.idempotency_key.empty()) {
    invoke.set_idempotency_key(step.idempotency_key);
  } else if (risk != execpb::TOOL_RISK_READ) {
    invoke.set_idempotency_key("turn:" + conversation_id_ + ":" + turn_id_ + ":" +
                               std::to_string(tool_calls_));
  }
  return invoke;
}

// Completes and sends the tool's result event `out`; `ran` and `described`
// receive the result as the planner and the user read it.
void TurnPass::DescribeToolResult(const ToolStep& step,
                                  const absl::StatusOr<execpb::InvokeToolResponse>& result,
                                  pb::ToolResultEvent& event, ToolRun& ran,
                                  std::string* described) {
  pb::ToolResultEvent* out = &event;
  if (result.ok()) {
    ran = {result->result_json(), result->is_error()};
    out->set_result_json(ran.result_json);
    out->set_is_error(ran.is_error);
    emit_.Send();
    if (described != nullptr) {
      ToolStep shown = step;
      if (!step.shown_arguments.is_null()) shown.arguments = step.shown_arguments;
      *described = DescribeResult(shown, ParseObject(ran.result_json), ran.is_error, &listed_);
    }
    return;
  }
  const json error = ErrorResult(result.status());
  ran = {error.dump(), true};
  out->set_result_json(ran.result_json);
  out->set_is_error(true);
  emit_.Send();
  if (control_.cancelled()) {
    // Cut short by the cancel: the turn says CANCELLED, once.
  } else if (ctx_.Expired()) {
    ReportOutOfTime();  // cut at the turn's deadline, not the tool's failure
  } else {
    emit_.Error(pb::CHAT_ERROR_CODE_TOOL_FAILED, step.tool + " failed", /*fatal=*/false,
                std::string(result.status().message()));
  }
  if (described != nullptr) *described = DescribeResult(step, error, true, nullptr);
}

}  // namespace omniforge::orchestrator
