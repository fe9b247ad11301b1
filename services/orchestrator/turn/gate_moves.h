// The approval gate's decisions as the turn's moves: what the gate decided
// for the actions the last turn left pending (GateMove), and every action a
// planner proposes passed through the gate's policy (PassProposals).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "omniforge/executor/v1/executor_service.pb.h"
#include "services/orchestrator/approvals/approval_gate.h"
#include "services/orchestrator/flow/move.h"
#include "services/orchestrator/planner/local_policy.h"

namespace omniforge::orchestrator {

// A call's arguments as the user knows them: a target resolved to its id is
// named again.
nlohmann::json NamedArguments(const PendingAction& action);

// The move the approval gate decided, if it decided one: approved actions
// run with their own keys, a rejection or refusal says so, a structured edit
// previews the changed action; a spoken edit goes to the local policy's
// revision (`local`) or to the model. nullopt: the planner decides.
std::optional<Move> GateMove(const PendingResolution& gate, const FlowState& last, bool local,
                             const PolicyInput& input);

// The proposals of a turn through the gate's policy, each at the risk its
// tool has in the catalog or its arguments give it for `user`
// (RaiseByContent), whichever is higher: those it runs go to `move.run`
// (each with its own key), those it refuses are recorded in `decisions`
// and returned as words in `denied`; the rest are sealed (targets, digest,
// expiry) and returned to preview.
std::vector<PendingAction> PassProposals(
    Move& move, const std::vector<::omniforge::executor::v1::ToolDescriptor>& tools,
    const std::vector<AgentInfo>& agents, const ApprovalPolicy& policy, const ContentRiskUser& user,
    int64_t now_micros, std::vector<GateDecision>& decisions, std::vector<std::string>& denied);

}  // namespace omniforge::orchestrator
