// The state of a flow (a task that spans turns of a conversation): what a
// later turn needs to go on with it (what waits for the user's approval,
// the questions asked, the plan that waits, the flow set aside, the
// context box). One FlowState per flow, kept by the FlowStore
// (flow_store.h); each save increments its revision. The reply's metadata
// carries only a projection of it (routing.h).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "omniforge/executor/v1/executor_service.pb.h"
#include "omniforge/intent/v1/intent_service.pb.h"
#include "services/orchestrator/flow/context_box.h"
#include "services/orchestrator/flow/recovery.h"

namespace omniforge::orchestrator {

// Where a flow stands after a turn.
enum class FlowStatus {
  kDone,       // the turn answered; nothing waits
  kWaiting,    // waits for the user: an approval, an answer or a plan's review
  kSuspended,  // a newer message set it aside; it can be resumed
};

// As stored: "done", "waiting", "suspended".
const char* FlowStatusName(FlowStatus status);
// Anything else reads as kDone.
FlowStatus ParseFlowStatus(const std::string& name);

// A risky tool call that waits for the user's approval (approval_gate.h):
// exactly this call runs when the user approves it, and only before it
// expires.
struct PendingAction {
  std::string action_id;
  std::string tool;
  // With its targets resolved to ids at preview time (an agent's name is
  // replaced by its id; `targets` keeps what the name was).
  nlohmann::json arguments = nlohmann::json::object();
  ::omniforge::executor::v1::ToolRisk risk = ::omniforge::executor::v1::TOOL_RISK_WRITE;
  std::string summary;  // what would happen, in words
  // ActionDigest(tool, arguments): what the preview showed and an approval
  // runs. Empty for an action stored by an older version: it is previewed
  // again rather than run.
  std::string digest;
  // When the preview stops being approvable (microseconds since the epoch).
  int64_t expires_at_micros = 0;
  // The targets as resolved at preview time, by argument: {"agent": {"id":
  // ..., "name": ...}}. An approval checks they still are what they were.
  nlohmann::json targets = nlohmann::json::object();
  // Why its arguments made it HIGH, one risk factor per rule that fired
  // (approvals/content_risk.h); empty when none did.
  std::vector<std::string> risk_reasons;
};

// A plan of the flow that waits for the user: for their review
// (pending_review), for an answer to a step's question (waiting_on_user), or
// to be resumed after the turn running it stopped (running).
struct PlanRef {
  std::string plan_id;
  std::string status;  // the plan's status name (plan_model.h)
  std::string objective;
  // For a plan previewed for review: PlanDigest of the steps shown and when
  // the preview expires (approval_gate.h); empty and 0 otherwise.
  std::string digest;
  int64_t expires_at_micros = 0;
};

// A flow that a newer message suspended while it ran, as later turns refer
// to it until the user resumes it ("continue what you were doing") or
// another flow is suspended in its place. Its own state (its context box)
// is in the flow store under its id.
struct SuspendedFlow {
  std::string flow_id;
  std::string goal;
  ::omniforge::intent::v1::ActionType action_type =
      ::omniforge::intent::v1::ACTION_TYPE_UNSPECIFIED;
  std::map<std::string, std::string> entities;
  // Its context box as metadata written by an older version carried it;
  // read only when the flow store has no state for the flow.
  std::optional<ContextBox> box;
  // The plan it was running, resumed with it.
  std::optional<PlanRef> plan;
};

struct FlowState {
  std::string flow_id;
  std::string conversation_id;
  std::string turn_id;  // the turn that wrote it last
  // Incremented by each save (FlowStore::Save); 0: never saved.
  int64_t revision = 0;
  FlowStatus status = FlowStatus::kDone;
  // What the flow is about: the user's message that started it.
  std::string goal;
  ::omniforge::intent::v1::ActionType action_type =
      ::omniforge::intent::v1::ACTION_TYPE_UNSPECIFIED;
  std::map<std::string, std::string> entities;
  std::vector<std::string> listed_agents;  // in the order shown to the user
  // The actions the last turn previewed, each waiting for the user's approval.
  std::vector<PendingAction> pending;
  int clarifications = 0;  // clarifying questions in a row, the last turn's included
  // What the last turn's clarifying question asked for (see ClarifyAbout in
  // local_policy.h); empty when it asked none.
  std::string asked;
  // The plan the last turn left waiting, if any.
  std::optional<PlanRef> plan;
  // The flow suspended by the last turn's message or an earlier one, not
  // yet resumed.
  std::optional<SuspendedFlow> suspended_flow;
  // The failure the last turn asked the user about (asked: "recovery"),
  // until the answer acts on it (recovery.h).
  std::optional<Recovery> recovery;
  std::vector<std::string> tools_used;
  ContextBox box;
};

// The state as stored, with a `format` field; the field names are those the
// routing metadata of older versions used, so that such metadata reads as a
// FlowState too.
nlohmann::json FlowStateToJson(const FlowState& state);
// Lenient: missing or mistyped fields read as their defaults, so a state (or
// routing metadata) written by an older version still reads. The status,
// when the JSON has none, is what the older routing implied (suspended,
// waiting for an approval, an answer or a plan, else done).
FlowState FlowStateFromJson(const nlohmann::json& json);

// What a flow set aside is to the turns after it, from its own state (its
// context box stays in the store). The same whichever replica reads it.
SuspendedFlow SuspendedFlowOf(const FlowState& state);

// A suspended flow alone, as the projection carries it.
nlohmann::json SuspendedFlowToJson(const SuspendedFlow& flow);
// nullopt for anything without a flow id.
std::optional<SuspendedFlow> SuspendedFlowFromJson(const nlohmann::json& json);

namespace flow_json {
// The lenient readers the flow's JSON shapes share: a missing or mistyped
// field reads as empty (or UNSPECIFIED, 0).
std::string StringAt(const nlohmann::json& json, const char* key);
::omniforge::intent::v1::ActionType ActionAt(const nlohmann::json& json, const char* key);
std::map<std::string, std::string> EntitiesAt(const nlohmann::json& json, const char* key);
std::vector<std::string> StringsAt(const nlohmann::json& json, const char* key);
}  // namespace flow_json

}  // namespace omniforge::orchestrator
