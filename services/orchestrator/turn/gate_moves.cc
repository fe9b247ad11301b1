#include "services/orchestrator/turn/gate_moves.h"

#include "services/orchestrator/approvals/preview.h"
#include "services/orchestrator/planner/local_policy.h"

namespace omniforge::orchestrator {

namespace pb = ::omniforge::orchestrator::v1;
namespace execpb = ::omniforge::executor::v1;

using nlohmann::json;

json NamedArguments(const PendingAction& action) {
  json args = action.arguments;
  for (auto& [key, target] : action.targets.items()) {
    if (target.is_object() && target.contains("name") && args.contains(key)) {
      args[key] = target["name"];
    }
  }
  return args;
}

std::optional<Move> GateMove(const PendingResolution& gate, const FlowState& last, bool local,
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

std::vector<PendingAction> PassProposals(Move& move,
                                         const std::vector<execpb::ToolDescriptor>& tools,
                                         const std::vector<AgentInfo>& agents,
                                         const ApprovalPolicy& policy, const ContentRiskUser& user,
                                         int64_t now_micros, std::vector<GateDecision>& decisions,
                                         std::vector<std::string>& denied) {
  std::vector<PendingAction> asking;
  for (PendingAction& action : move.propose) {
    // Never less than the catalog says, nor than its arguments make it.
    if (const execpb::ToolRisk known = RiskIn(tools, action.tool); known > action.risk) {
      action.risk = known;
    }
    RaiseByContent(action, policy, user);
    if (action.digest.empty()) SealPendingAction(action, agents, now_micros, policy.pending_ttl);
    if (action.summary.empty()) {
      std::string description;
      for (const execpb::ToolDescriptor& d : tools) {
        if (d.name() == action.tool) description = d.description();
      }
      action.summary = ActionSummary(action.tool, NamedArguments(action), description);
    }
    switch (policy.DecideCall(action.tool, action.risk, !action.risk_reasons.empty())) {
      case GateVerdict::kRun:
        decisions.push_back({action.action_id, action.digest, action.tool, AuditedSummary(action),
                             action.risk, pb::ACTION_OUTCOME_AUTO_APPROVED, "policy"});
        move.run.push_back(
            {action.tool, action.arguments, ApprovedStepKey(action), NamedArguments(action)});
        break;
      case GateVerdict::kDeny:
        decisions.push_back({action.action_id, action.digest, action.tool, AuditedSummary(action),
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

}  // namespace omniforge::orchestrator
