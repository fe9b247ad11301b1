// The planner with a model: one streaming session per turn with the
// conversation so far, the user's message, guidance for the client context
// and the executor's tools. Text streams to the user as it arrives. Every
// tool call passes the approval gate (approval_gate.h): a call the policy
// runs unasked (READ tools, by default) runs at once and its result goes
// back into the same session; every call that needs the user's approval is
// drafted, none dropped, and the session ends after that response; a call
// the policy denies is refused to the model. Tool results are data in tool
// messages only (the context box's DATA too), never in the system prompt. Work of several steps
// goes to agent_create_plan (when offered): the plan's result comes back into the session, once per
// turn, and the model sums it up. At most `max_iterations` model calls per turn. The flow's context
// box is part of the system message, so every call sees the task's goal and state in a few lines.
//
// No gRPC and no I/O of its own: the turn supplies a PlannerIo.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "libs/core/clock.h"
#include "libs/llm/chat_model.h"
#include "omniforge/executor/v1/executor_service.pb.h"
#include "omniforge/intent/v1/intent_service.pb.h"
#include "services/orchestrator/approvals/approval_gate.h"
#include "services/orchestrator/flow/flow_state.h"
#include "services/orchestrator/planner/local_policy.h"

namespace omniforge::orchestrator {

// What a tool call produced.
struct ToolRun {
  std::string result_json;
  bool is_error = false;
};

// The turn the planner runs in.
class PlannerIo {
 public:
  virtual ~PlannerIo() = default;
  // The next piece of the answer, as the model writes it.
  virtual void Text(const std::string& delta) = 0;
  // The answer so far is replaced by `kept`: the model's stream broke off
  // after part of its answer was sent, and the answer is asked for again.
  virtual void RestartText(const std::string& kept) = 0;
  // Runs a tool now (its events included); nullopt when a guardrail stopped
  // the turn instead (the error event is already out).
  virtual std::optional<ToolRun> RunTool(const ToolStep& step) = 0;
  // agent_create_plan with the model's arguments (a JSON object's text):
  // the plan is made and run, or stored for review, with its events; the
  // result is the plan's tool result. nullopt as for RunTool.
  virtual std::optional<ToolRun> CreatePlan(const std::string& arguments_json) = 0;
  // True once the turn must stop (cancelled, out of time, suspended by a
  // newer message).
  virtual bool Stopped() = 0;
};

struct PlannerRequest {
  std::string message;
  ::omniforge::intent::v1::ContextType context_type = ::omniforge::intent::v1::CONTEXT_TYPE_GLOBAL;
  std::string entity_id;
  // Earlier turns, oldest first: (true for the user, content).
  std::vector<std::pair<bool, std::string>> history;
  std::vector<AgentInfo> agents;
  // The user's time zone: a new agent's schedule that names none is read
  // in it (so its preview says when it runs as the executor will read it).
  std::string time_zone;  // empty: unknown (the executor then uses the user's)
  // Drafted actions still waiting for approval.
  std::vector<PendingAction> pending;
  // What runs unasked, waits for approval, or is refused. Must outlive the
  // call; null: the default policy.
  const ApprovalPolicy* approvals = nullptr;
  // Who asks: their calls' arguments are weighed for them (content_risk.h).
  ContentRiskUser user;
  // The flow's context box.
  ContextBox box;
  // Clarifying questions asked in a row before this turn, and the cap: at
  // the cap the model is told to proceed instead of asking again.
  int clarifications = 0;
  int max_clarifications = 2;
  // The user asked to resume this flow after a newer message suspended it.
  bool resuming = false;
  std::vector<::omniforge::executor::v1::ToolDescriptor> tools;
  // The model is offered agent_create_plan (plans can be kept).
  bool offer_plans = false;
  int max_iterations = 10;
  // The turn's deadline: the model's calls end by then.
  core::TimePoint deadline = core::TimePoint::max();
  std::function<bool()> cancelled;
  // The turn's model usage (usage_attribution.h): each model call is given
  // it. Null: the client's own sink, and not metered.
  llm::CallUsage* usage = nullptr;
};

struct PlannerResult {
  // False when the model failed before it wrote anything: the turn falls
  // back to the local policy. `error` says why.
  bool answered = false;
  std::string error;
  // The iteration cap was reached.
  bool iteration_limit = false;
  // The turn was cancelled, ran out of time or was suspended while the
  // model wrote.
  bool stopped = false;
  // The answer ends with a question to the user and drafts nothing: a
  // clarifying question.
  bool asked = false;
  std::string text;
  // Every call of the response that needs the user's approval, in order.
  std::vector<PendingAction> propose;
  // Calls the policy refused (tool names).
  std::vector<std::string> denied;
  std::vector<std::string> tools_used;
};

PlannerResult RunModelPlanner(llm::ChatModel& model, const PlannerRequest& request, PlannerIo& io);

// The system prompt of a planner session (exposed for tests). With no
// tools in the request it ends with kNoToolsReminder instead of the tools'
// risks.
std::string PlannerSystemPrompt(const PlannerRequest& request);

// What the model is told when the executor offers no tools this turn (none
// configured, or the executor cannot be reached): that there are none, so
// it neither writes tool calls nor claims to have looked anything up.
inline constexpr char kNoToolsReminder[] =
    "<system-reminder>No tools are available in this conversation right now: the "
    "platform's tool service offers none or cannot be reached. Do not call or write out any "
    "tool call and do not claim to have looked anything up, run or changed anything. Answer "
    "from the conversation alone, and tell the user plainly what you cannot do until the tools "
    "are back.</system-reminder>";

}  // namespace omniforge::orchestrator
