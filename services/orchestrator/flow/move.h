// What a turn decides to do (a Move: tools to run, actions to preview, a plan
// to make, the reply) and the values it is made of: the user's agents as
// list_agents reports them and one tool call. Both planners (the local
// policy, the model planner) produce these; the approval gate and the turn
// consume them.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "omniforge/intent/v1/intent_service.pb.h"
#include "services/orchestrator/flow/flow_state.h"

namespace omniforge::orchestrator {

// One of the user's agents, as list_agents reports it.
struct AgentInfo {
  std::string name;
  std::string description;
  std::string status;
  std::string schedule;
  std::string id;  // empty when the list did not say
};

// The agents in a list_agents result ({"agents": [...]}); empty when the
// result is not one.
std::vector<AgentInfo> AgentsFromListResult(const nlohmann::json& result);

struct ToolStep {
  std::string tool;
  nlohmann::json arguments = nlohmann::json::object();
  // The call's idempotency key when it is not the turn's own (an approved
  // action's: ApprovedStepKey).
  std::string idempotency_key;
  // The arguments as the user knows them (targets by name, not id), for the
  // words about the result; null: `arguments`.
  nlohmann::json shown_arguments;
};

// Multi-step work the local policy hands to the plan engine (a template
// per context, filled from the intent's entities).
struct LocalPlan {
  std::string objective;
  // The plan is shown for the user's review before it runs (it writes);
  // otherwise it runs at once (it only reads).
  bool draft = false;
};

// What the turn does.
struct Move {
  // Run now, in order: READ tools, or the action the user just approved.
  std::vector<ToolStep> run;
  // A risky action to preview; the flow then waits for the user.
  // Actions to preview; the flow then waits for the user.
  std::vector<PendingAction> propose;
  // Work of several steps: a plan is made (and run or shown for review).
  std::optional<LocalPlan> plan;
  // The reply before tool results (a question, a preview, a template).
  std::string reply;
  // This turn asks a clarifying question, about what (kAsked*).
  bool clarifying = false;
  std::string asked;
  // What the reply is about, for its routing (routing.h).
  ::omniforge::intent::v1::ActionType action_type =
      ::omniforge::intent::v1::ACTION_TYPE_UNSPECIFIED;
  std::map<std::string, std::string> entities;
  std::vector<std::string> listed_agents;
};

}  // namespace omniforge::orchestrator
