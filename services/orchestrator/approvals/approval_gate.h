// The approval gate: the one place that says whether an action that can
// change the user's workspace runs now, waits for the user's approval of
// exactly what was previewed, or is refused, whoever proposed it (the model
// planner, the local policy, a plan and its steps). And the rule by which a
// reply to a preview approves it: a reply that names another target, other
// arguments or an added condition is never an approval of the pending
// action, whatever understood the words.
//
// The policy is data (the `approvals:` section of the orchestrator's
// config):
//
//   approvals:
//     read: run          # run | ask | deny, for READ tools
//     write: ask         # for WRITE tools
//     high: ask          # for HIGH tools: ask or deny (never run as a level)
//     tools:             # per tool, over the levels; the only way to let a
//       create_skill: run  #  HIGH tool run without asking
//       delete_agent: deny
//     pending_ttl_s: 900 # how long a preview can be approved
//     content_risk: ...  # rules over a call's arguments that make it HIGH
//                        # (content_risk.h)
//
// Pure functions and value types: no I/O, thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/core/config.h"
#include "omniforge/executor/v1/executor_service.pb.h"
#include "omniforge/intent/v1/intent_service.pb.h"
#include "omniforge/orchestrator/v1/chat_service.pb.h"
#include "services/orchestrator/approvals/content_risk.h"
#include "services/orchestrator/flow/flow_state.h"
#include "services/orchestrator/flow/move.h"
#include "services/orchestrator/plans/plan_model.h"

namespace omniforge::orchestrator {

enum class GateVerdict { kRun, kAsk, kDeny };

std::string GateVerdictName(GateVerdict verdict);  // "run", "ask", "deny"
std::optional<GateVerdict> ParseGateVerdict(std::string_view name);

struct ApprovalPolicy {
  GateVerdict read = GateVerdict::kRun;
  GateVerdict write = GateVerdict::kAsk;
  GateVerdict high = GateVerdict::kAsk;
  // Per tool, over the levels.
  std::map<std::string, GateVerdict> tools;
  std::chrono::seconds pending_ttl{900};
  // The rules by which a call's arguments make it HIGH.
  ContentRiskRules content_risk;

  // What happens to a call of `tool` with `risk`. A tool the catalog does not
  // know (UNSPECIFIED) counts as HIGH.
  GateVerdict Decide(const std::string& tool, ::omniforge::executor::v1::ToolRisk risk) const;
  // The same for one call: when its arguments raised it (`raised_by_content`),
  // the `high` level's verdict, or the tool's own entry when that is
  // stricter. A per-tool `run` never lets such a call run unasked.
  GateVerdict DecideCall(const std::string& tool, ::omniforge::executor::v1::ToolRisk risk,
                         bool raised_by_content) const;
};

// Reads `approvals.*` (with `approvals.content_risk.*`, ReadContentRiskRules).
// INVALID_ARGUMENT naming the key for a verdict that is not run, ask or deny,
// for `high: run` (a HIGH tool runs unasked only when the operator names it
// under `tools`), and for a malformed content rule.
absl::StatusOr<ApprovalPolicy> ReadApprovalPolicy(core::ConfigReader& reader);

// Raises `action` by its arguments (AssessContentRisk with the policy's
// rules for `user`): its risk becomes HIGH when a rule fires, never lower,
// and `risk_reasons` says which fired (RiskFactorOf); empty when none did.
void RaiseByContent(PendingAction& action, const ApprovalPolicy& policy,
                    const ContentRiskUser& user);

// `action`'s summary as the audit trail keeps it: with the rules that made
// it HIGH, when any did ("... High risk: sends to 14 recipients (more than
// 10) (rule: recipients).").
std::string AuditedSummary(const PendingAction& action);

// The hex SHA-256 of the exact call: tool and arguments (targets resolved),
// with the arguments' keys in a fixed order.
std::string ActionDigest(const std::string& tool, const nlohmann::json& arguments);

// The hex SHA-256 of a plan's steps as they would run (StepsToJson).
std::string PlanDigest(const std::vector<PlanStep>& steps);

// Gives `action` its targets (an "agent" argument naming one of `agents` by
// name is replaced by that agent's id, and the name kept in `targets`), its
// digest and its expiry `ttl` after `now_micros`. An agent the list does not
// have is left as named: the tool itself reports it missing.
void SealPendingAction(PendingAction& action, const std::vector<AgentInfo>& agents,
                       int64_t now_micros, std::chrono::seconds ttl);

// Why `action` cannot run as approved now, in words for the user; nullopt
// when it can: its digest matches its arguments, it has not expired, and
// every target it resolved still exists in `agents` under the name the
// preview showed.
std::optional<std::string> WhyNotApprovable(const PendingAction& action,
                                            const std::vector<AgentInfo>& agents,
                                            int64_t now_micros);

// What a user's reply does to what is pending.
enum class PendingReply {
  kApprove,  // run exactly what was previewed
  kReject,   // drop it; nothing changes
  kEdit,     // change it: preview the changed action again (or a new request)
  kOther,    // a question or something else: answered; the action stays pending
};

// The intent service's reading of `message` as a reply to `pending`
// actions (analysis.reply: approve, reject, edit; anything else leaves them
// pending), checked by the gate's own rule: an approval of a reply that
// names another agent of `agents` than the actions' targets, or gives a
// setting they do not have (a schedule, recipients, a data source in the
// analysis), is an edit, whatever read the words.
PendingReply ReadPendingReply(const std::string& message,
                              const ::omniforge::intent::v1::IntentAnalysis& analysis,
                              const std::vector<PendingAction>& pending,
                              const std::vector<AgentInfo>& agents);

// The names `action` acts on, lower-cased: its resolved agent's, else the
// agent or name argument as written (what the intent service is told).
std::vector<std::string> PendingTargets(const PendingAction& action);

// What the policy says of running a plan's `steps` with the catalog `tools`
// (their risks): kRun when every tool a step may call (its tools and its
// planned calls) runs unasked, kDeny naming the first tool refused, else
// kAsk (the user approves the plan as previewed before it runs).
struct PlanVerdict {
  GateVerdict verdict = GateVerdict::kRun;
  std::string denied_tool;
  // A HIGH tool (that the policy does not run unasked) a step may call
  // without a planned call with arguments: the user could not approve
  // exactly what runs, so such a plan is not made.
  std::string unplanned_high;
};
PlanVerdict DecidePlan(const ApprovalPolicy& policy, const std::vector<PlanStep>& steps,
                       const std::vector<::omniforge::executor::v1::ToolDescriptor>& tools);

// The risk of `tool` in the catalog `tools`; UNSPECIFIED when it is not there.
::omniforge::executor::v1::ToolRisk RiskIn(
    const std::vector<::omniforge::executor::v1::ToolDescriptor>& tools, const std::string& tool);

// The agent names of `agents` that `message` mentions
// (words::MentionedNames: whole words in any script, case-insensitive,
// longest first, a name inside a longer one given not its own mention).
// The gate reads no yes, no or change words: the intent service does
// (services/intent/src/reply.h).
std::vector<std::string> MentionedAgents(const std::string& message,
                                         const std::vector<AgentInfo>& agents);

// One decision of the gate, for the audit trail.
struct GateDecision {
  std::string action_id;
  std::string digest;
  std::string tool;
  std::string summary;
  ::omniforge::executor::v1::ToolRisk risk = ::omniforge::executor::v1::TOOL_RISK_UNSPECIFIED;
  ::omniforge::orchestrator::v1::ActionOutcome outcome =
      ::omniforge::orchestrator::v1::ACTION_OUTCOME_UNSPECIFIED;
  std::string via;  // "words", "api" or "policy"
};

// What the gate makes of a message for the actions the last turn left
// pending. (The check below reads nlohmann::json's destructor, which
// allocates while it tears down nested values, as one that may throw.)
// NOLINTNEXTLINE(bugprone-exception-escape): its implicit members do not throw
struct PendingResolution {
  PendingReply reply = PendingReply::kOther;
  // Approved and checked (WhyNotApprovable): run exactly these, each with
  // its own idempotency key (ApprovedStepKey), now.
  std::vector<PendingAction> approved;
  // Asked again: their preview expired (a fresh preview with a new id).
  std::vector<PendingAction> previewed_again;
  // Still pending after this turn (a reply that decided nothing, or the
  // actions a structured decision did not name), unless new ones replace
  // them.
  std::vector<PendingAction> carried;
  // The words for the user when the gate decided (a rejection, a refusal).
  std::string reply_text;
  // Set when an approval ran nothing (an unknown, replaced or stale action):
  // the APPROVAL_REFUSED error event's message.
  std::string refusal;
  // For kEdit: another agent the reply named (the action's new target).
  std::string other_agent;
  // For a structured EDIT: the arguments to merge over the pending ones.
  nlohmann::json edited_arguments;
  std::vector<GateDecision> decisions;
};

// Resolves the last turn's `pending` actions with the user's structured
// `decision` (when its kind is set) or the intent service's reading of
// `message` (`analysis`), checked by ReadPendingReply. Approving checks each action
// (WhyNotApprovable with the current `agents` at `now_micros`); an expired one is previewed again
// with a fresh id and expiry `ttl`; a stale one runs nothing and says why.
PendingResolution ResolvePending(const std::string& message,
                                 const ::omniforge::orchestrator::v1::ApprovalDecision& decision,
                                 const ::omniforge::intent::v1::IntentAnalysis& analysis,
                                 const std::vector<PendingAction>& pending,
                                 const std::vector<AgentInfo>& agents, int64_t now_micros,
                                 std::chrono::seconds ttl);

// The idempotency key of an approved action's call: the action's own, so a
// second approval of it (a retry, a double click) never runs it twice.
std::string ApprovedStepKey(const PendingAction& action);

}  // namespace omniforge::orchestrator
