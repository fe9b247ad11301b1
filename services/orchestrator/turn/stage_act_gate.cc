// Stage 6, Act, at the gate: every action the move proposes passes the
// gate's policy. It runs (the policy lets it), waits for the user's
// approval of exactly what is previewed, or is refused. What waited and
// nothing replaced keeps waiting. Then what may run, runs.
#include <algorithm>

#include "libs/core/ids.h"
#include "services/orchestrator/turn/gate_moves.h"
#include "services/orchestrator/turn/turn_pass.h"

namespace omniforge::orchestrator {

void TurnPass::PassGate() {
  const std::shared_ptr<const TurnRunner::ToolCatalog> catalog = runner_.Catalog(DownstreamCall());
  GateRuns(catalog->tools);
  std::vector<std::string> denied;
  pending_after_ =
      PassProposals(move_, catalog->tools, agents_, runner_.options_.approvals,
                    ContentRiskUserOf(ctx_.who().user_id), ctx_.NowMicros(), decisions_, denied);
  for (const std::string& what : denied) {
    const std::string said = "The approval policy does not allow this, so it was not run: " + what;
    emit_.Error(pb::CHAT_ERROR_CODE_ACTION_DENIED, said, /*fatal=*/false);
    move_.reply += (move_.reply.empty() ? "" : "\n") + said;
  }
  KeepCarried();
  // Previews made now (the ones carried were shown before; an action of an
  // older release, sealed only now, is shown).
  for (const PendingAction& action : pending_after_) {
    const bool shown_before =
        gate_ && std::any_of(gate_->carried.begin(), gate_->carried.end(),
                             [&action](const PendingAction& a) {
                               return a.action_id == action.action_id && !a.digest.empty();
                             });
    if (!shown_before) previews_.push_back(action);
  }
}

// What the policy would run now, unless the gate approved it: anything the
// policy does not run unasked is proposed instead.
void TurnPass::GateRuns(const std::vector<execpb::ToolDescriptor>& tools) {
  std::vector<ToolStep> runs;
  const ApprovalPolicy& policy = runner_.options_.approvals;
  const ContentRiskUser user = ContentRiskUserOf(ctx_.who().user_id);
  for (ToolStep& step : move_.run) {
    const execpb::ToolRisk risk = RiskIn(tools, step.tool);
    const ContentRisk assessed =
        AssessContentRisk(policy.content_risk, step.tool, step.arguments, risk, user);
    if (!step.idempotency_key.empty() ||
        policy.DecideCall(step.tool, assessed.risk, !assessed.fired.empty()) == GateVerdict::kRun) {
      runs.push_back(std::move(step));
      continue;
    }
    // Sealed, raised by its arguments and worded by PassProposals.
    move_.propose.push_back({core::NewUuid(), step.tool, step.arguments,
                             risk == execpb::TOOL_RISK_UNSPECIFIED ? execpb::TOOL_RISK_HIGH : risk,
                             ""});
  }
  move_.run = std::move(runs);
}

// The actions the last turn left pending that this turn neither decided
// nor replaced keep waiting; those a newer preview replaced are stale.
void TurnPass::KeepCarried() {
  if (!gate_) return;
  if (pending_after_.empty() && !suspended_) {
    pending_after_ = gate_->carried;
    return;
  }
  for (const PendingAction& old : gate_->carried) {
    const bool kept =
        std::any_of(pending_after_.begin(), pending_after_.end(),
                    [&old](const PendingAction& a) { return a.action_id == old.action_id; });
    if (!kept) {
      decisions_.push_back({old.action_id, old.digest, old.tool, AuditedSummary(old), old.risk,
                            pb::ACTION_OUTCOME_STALE, "words"});
    }
  }
}

// What the policy runs now (an approved action, or the local planner's
// reads), each result in words after the reply so far. A call that fails
// for good stops the rest: the user is asked about it (stage_recover.cc),
// and the calls not made wait for the answer.
void TurnPass::RunMoves() {
  for (size_t i = 0; i < move_.run.size(); ++i) {
    const ToolStep& step = move_.run[i];
    std::string described;
    const std::optional<ToolRun> ran = RunTool(step, &described);
    if (!ran) {
      if (!suspended_) break;
      continue;  // each step left is noted as NEXT of the suspended flow
    }
    text_ += (text_.empty() ? "" : "\n") + described;
    if (!ran->is_error || !failed_ || failed_->failed.tool != step.tool) continue;
    if (!AsksAboutFailure()) continue;  // another question waits: the calls go on
    for (size_t j = i + 1; j < move_.run.size(); ++j) {
      const ToolStep& left = move_.run[j];
      failed_->rest.push_back({left.tool, left.arguments, left.idempotency_key});
    }
    if (failed_->rest.empty()) std::erase(failed_->options, std::string(kOptionSkip));
    break;
  }
}

}  // namespace omniforge::orchestrator
