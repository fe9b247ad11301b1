#include "services/orchestrator/approvals/approval_gate.h"

#include <algorithm>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "libs/core/digest.h"
#include "libs/core/ids.h"
#include "libs/core/text.h"
#include "libs/words/tokens.h"

namespace omniforge::orchestrator {
namespace {

namespace execpb = ::omniforge::executor::v1;
namespace intentpb = ::omniforge::intent::v1;
namespace pb = ::omniforge::orchestrator::v1;
using nlohmann::json;

// nlohmann's object keeps its keys sorted: dump() is canonical.
std::string Canonical(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// What a pending action targets by name (lower case): its resolved agent, or
// the agent argument as written.
std::set<std::string> TargetNames(const std::vector<PendingAction>& pending) {
  std::set<std::string> names;
  for (const PendingAction& action : pending) {
    if (auto it = action.targets.find("agent"); it != action.targets.end() && it->is_object() &&
                                                it->contains("name") && (*it)["name"].is_string()) {
      names.insert(absl::AsciiStrToLower((*it)["name"].get<std::string>()));
    }
    if (auto it = action.arguments.find("agent"); it != action.arguments.end() && it->is_string()) {
      names.insert(absl::AsciiStrToLower(it->get<std::string>()));
    }
    if (auto it = action.arguments.find("name"); it != action.arguments.end() && it->is_string()) {
      names.insert(absl::AsciiStrToLower(it->get<std::string>()));
    }
  }
  return names;
}

// Whether `value` appears anywhere among the actions' arguments.
bool ArgumentsHold(const std::vector<PendingAction>& pending, const std::string& value) {
  const std::string lower = absl::AsciiStrToLower(value);
  for (const PendingAction& action : pending) {
    const std::string held = absl::AsciiStrToLower(action.arguments.dump());
    if (held.find(lower) != std::string::npos) return true;
    // A list ("a@x.com,b@y.com", as recipients are read) is held when each
    // of its items is, as the items of an array argument (attendees).
    bool every = lower.find(',') != std::string::npos;
    for (absl::string_view item : absl::StrSplit(lower, ',', absl::SkipWhitespace())) {
      item = absl::StripAsciiWhitespace(item);
      if (!item.empty() && held.find(std::string(item)) == std::string::npos) every = false;
    }
    if (every) return true;
  }
  return false;
}

// Deny is stricter than ask, ask than run.
int Strictness(GateVerdict verdict) {
  switch (verdict) {
    case GateVerdict::kRun:
      return 0;
    case GateVerdict::kAsk:
      return 1;
    case GateVerdict::kDeny:
      return 2;
  }
  return 1;
}

const AgentInfo* FindAgent(const std::vector<AgentInfo>& agents, const std::string& ref) {
  const std::string lower = absl::AsciiStrToLower(ref);
  for (const AgentInfo& agent : agents) {
    if ((!agent.id.empty() && agent.id == ref) || absl::AsciiStrToLower(agent.name) == lower) {
      return &agent;
    }
  }
  return nullptr;
}

}  // namespace

std::string GateVerdictName(GateVerdict verdict) {
  switch (verdict) {
    case GateVerdict::kRun:
      return "run";
    case GateVerdict::kAsk:
      return "ask";
    case GateVerdict::kDeny:
      return "deny";
  }
  return "ask";
}

std::optional<GateVerdict> ParseGateVerdict(std::string_view name) {
  if (name == "run") return GateVerdict::kRun;
  if (name == "ask") return GateVerdict::kAsk;
  if (name == "deny") return GateVerdict::kDeny;
  return std::nullopt;
}

GateVerdict ApprovalPolicy::Decide(const std::string& tool, execpb::ToolRisk risk) const {
  if (auto it = tools.find(tool); it != tools.end()) return it->second;
  switch (risk) {
    case execpb::TOOL_RISK_READ:
      return read;
    case execpb::TOOL_RISK_WRITE:
      return write;
    default:
      return high;
  }
}

GateVerdict ApprovalPolicy::DecideCall(const std::string& tool, execpb::ToolRisk risk,
                                       bool raised_by_content) const {
  if (!raised_by_content) return Decide(tool, risk);
  // The level never runs unasked (ReadApprovalPolicy refuses `high: run`).
  const GateVerdict level = high == GateVerdict::kRun ? GateVerdict::kAsk : high;
  auto it = tools.find(tool);
  if (it != tools.end() && Strictness(it->second) > Strictness(level)) return it->second;
  return level;
}

void RaiseByContent(PendingAction& action, const ApprovalPolicy& policy,
                    const ContentRiskUser& user) {
  const ContentRisk assessed =
      AssessContentRisk(policy.content_risk, action.tool, action.arguments, action.risk, user);
  action.risk_reasons.clear();
  for (const FiredRule& fired : assessed.fired) action.risk_reasons.push_back(RiskFactorOf(fired));
  if (assessed.risk > action.risk) action.risk = assessed.risk;
}

std::string AuditedSummary(const PendingAction& action) {
  if (action.risk_reasons.empty()) return action.summary;
  std::string text = action.summary;
  absl::StrAppend(&text, text.empty() ? "" : " ", "High risk: ");
  for (size_t i = 0; i < action.risk_reasons.size(); ++i) {
    absl::StrAppend(&text, i == 0 ? "" : "; ", action.risk_reasons[i]);
  }
  return absl::StrCat(text, ".");
}

absl::StatusOr<ApprovalPolicy> ReadApprovalPolicy(core::ConfigReader& reader) {
  ApprovalPolicy policy;
  std::vector<std::string> errors;
  auto level = [&](const char* key, GateVerdict fallback) {
    const std::string path = absl::StrCat("approvals.", key);
    const std::string name = reader.String(path, GateVerdictName(fallback));
    std::optional<GateVerdict> verdict = ParseGateVerdict(name);
    if (!verdict) {
      errors.push_back(absl::StrCat(path, ": '", name, "' is not run, ask or deny"));
      return fallback;
    }
    return *verdict;
  };
  policy.read = level("read", GateVerdict::kRun);
  policy.write = level("write", GateVerdict::kAsk);
  policy.high = level("high", GateVerdict::kAsk);
  if (policy.high == GateVerdict::kRun) {
    errors.emplace_back(
        "approvals.high: 'run' is not allowed for the whole level; name each HIGH tool that may "
        "run without asking under approvals.tools");
  }
  for (const auto& [tool, name] : reader.StringMap("approvals.tools")) {
    std::optional<GateVerdict> verdict = ParseGateVerdict(name);
    if (!verdict) {
      errors.push_back(
          absl::StrCat("approvals.tools.", tool, ": '", name, "' is not run, ask or deny"));
      continue;
    }
    policy.tools[tool] = *verdict;
  }
  policy.pending_ttl =
      std::chrono::seconds(reader.Int("approvals.pending_ttl_s", 900, 10, int64_t{7} * 24 * 3600));
  if (!errors.empty()) return absl::InvalidArgumentError("config: " + errors.front());
  absl::StatusOr<ContentRiskRules> content_risk = ReadContentRiskRules(reader);
  if (!content_risk.ok()) return content_risk.status();
  policy.content_risk = *std::move(content_risk);
  return policy;
}

std::string ActionDigest(const std::string& tool, const json& arguments) {
  return core::Sha256Hex(Canonical(json{{"tool", tool}, {"arguments", arguments}}));
}

std::string PlanDigest(const std::vector<PlanStep>& steps) {
  return core::Sha256Hex(Canonical(StepsToJson(steps)));
}

void SealPendingAction(PendingAction& action, const std::vector<AgentInfo>& agents,
                       int64_t now_micros, std::chrono::seconds ttl) {
  if (auto it = action.arguments.find("agent"); it != action.arguments.end() && it->is_string()) {
    if (const AgentInfo* agent = FindAgent(agents, it->get<std::string>()); agent != nullptr) {
      action.targets["agent"] = {{"id", agent->id}, {"name", agent->name}};
      if (!agent->id.empty()) *it = agent->id;
    }
  }
  action.digest = ActionDigest(action.tool, action.arguments);
  action.expires_at_micros =
      now_micros + std::chrono::duration_cast<std::chrono::microseconds>(ttl).count();
}

std::optional<std::string> WhyNotApprovable(const PendingAction& action,
                                            const std::vector<AgentInfo>& agents,
                                            int64_t now_micros) {
  if (action.digest.empty() || action.digest != ActionDigest(action.tool, action.arguments)) {
    return "the action is not the one that was previewed";
  }
  if (now_micros >= action.expires_at_micros) {
    return "the preview expired before it was approved";
  }
  if (auto it = action.targets.find("agent"); it != action.targets.end() && it->is_object()) {
    const std::string id = it->value("id", std::string());
    const std::string name = it->value("name", std::string());
    const AgentInfo* now = FindAgent(agents, id.empty() ? name : id);
    if (now == nullptr) return absl::StrCat("the agent '", name, "' no longer exists");
    if (now->name != name) {
      return absl::StrCat("the agent '", name, "' is now called '", now->name, "'");
    }
  }
  return std::nullopt;
}

execpb::ToolRisk RiskIn(const std::vector<execpb::ToolDescriptor>& tools, const std::string& tool) {
  for (const execpb::ToolDescriptor& d : tools) {
    if (d.name() == tool) return d.risk();
  }
  return execpb::TOOL_RISK_UNSPECIFIED;
}

PlanVerdict DecidePlan(const ApprovalPolicy& policy, const std::vector<PlanStep>& steps,
                       const std::vector<execpb::ToolDescriptor>& tools) {
  PlanVerdict out;
  for (const PlanStep& step : steps) {
    std::vector<std::string> names = step.tools;
    for (const PlannedCall& call : step.tool_calls) names.push_back(call.tool);
    for (const std::string& name : names) {
      const execpb::ToolRisk risk = RiskIn(tools, name);
      const GateVerdict verdict = policy.Decide(name, risk);
      if (verdict == GateVerdict::kDeny) return {GateVerdict::kDeny, name, ""};
      if (verdict != GateVerdict::kAsk) continue;
      out.verdict = GateVerdict::kAsk;
      const bool high = risk == execpb::TOOL_RISK_HIGH || risk == execpb::TOOL_RISK_UNSPECIFIED;
      const bool planned = std::any_of(
          step.tool_calls.begin(), step.tool_calls.end(), [&name](const PlannedCall& c) {
            return c.tool == name && c.arguments.is_object() && !c.arguments.empty();
          });
      if (high && !planned && out.unplanned_high.empty()) out.unplanned_high = name;
    }
  }
  return out;
}

std::vector<std::string> MentionedAgents(const std::string& message,
                                         const std::vector<AgentInfo>& agents) {
  std::vector<std::string> names;
  names.reserve(agents.size());
  for (const AgentInfo& agent : agents) names.push_back(agent.name);
  return words::MentionedNames(message, names);
}

PendingReply ReadPendingReply(const std::string& message, const intentpb::IntentAnalysis& analysis,
                              const std::vector<PendingAction>& pending,
                              const std::vector<AgentInfo>& agents) {
  switch (analysis.reply().kind()) {
    case intentpb::REPLY_KIND_APPROVE:
      break;
    case intentpb::REPLY_KIND_REJECT:
      return PendingReply::kReject;
    case intentpb::REPLY_KIND_EDIT:
      return PendingReply::kEdit;
    default:
      return PendingReply::kOther;
  }
  // The gate's own check of an approval: another target than the
  // previewed ones, or a setting they do not have, is never one. (The
  // analysis's agent_name is not used: it carries the flow's agent from
  // earlier turns, not only what this reply names.)
  const std::set<std::string> targets = TargetNames(pending);
  for (const std::string& name : MentionedAgents(message, agents)) {
    if (targets.count(absl::AsciiStrToLower(name)) == 0) return PendingReply::kEdit;
  }
  for (const char* key : {"schedule", "recipients", "data_source"}) {
    if (auto it = analysis.entities().find(key); it != analysis.entities().end() &&
                                                 !it->second.empty() &&
                                                 !ArgumentsHold(pending, it->second)) {
      return PendingReply::kEdit;
    }
  }
  return PendingReply::kApprove;
}

std::vector<std::string> PendingTargets(const PendingAction& action) {
  std::set<std::string> names = TargetNames({action});
  // A resolved target's argument holds its id, which names nothing.
  if (auto it = action.targets.find("agent"); it != action.targets.end() && it->is_object()) {
    names.erase(absl::AsciiStrToLower(it->value("id", std::string())));
  }
  return {names.begin(), names.end()};
}

std::string ApprovedStepKey(const PendingAction& action) { return "action:" + action.action_id; }

namespace {

GateDecision DecisionOf(const PendingAction& action, pb::ActionOutcome outcome,
                        const std::string& via) {
  return {action.action_id, action.digest, action.tool, AuditedSummary(action),
          action.risk,      outcome,       via};
}

std::string WhatWaits(const std::vector<PendingAction>& pending) {
  if (pending.empty()) return "Nothing is waiting for your approval now.";
  std::string text = "Waiting for your approval now:";
  for (const PendingAction& action : pending) {
    text += " " + action.summary + " (action " + action.action_id + ")";
  }
  return text;
}

// A structured decision's reply and the one action it names (`chosen`);
// the others are carried. False when it names none of them: `out` then
// says so and carries them all.
bool ChooseByDecision(const pb::ApprovalDecision& decision,
                      const std::vector<PendingAction>& pending, PendingResolution& out,
                      std::vector<PendingAction>& chosen) {
  for (const PendingAction& action : pending) {
    (action.action_id == decision.action_id() ? chosen : out.carried).push_back(action);
  }
  if (chosen.empty()) {
    out.reply = PendingReply::kOther;
    out.carried = pending;
    out.refusal = "no action " + decision.action_id() +
                  " is waiting for your decision: it was replaced by a newer preview, was "
                  "already decided, or never existed; nothing ran. " +
                  WhatWaits(pending);
    out.reply_text = "Nothing ran. " + WhatWaits(pending);
    return false;
  }
  switch (decision.kind()) {
    case pb::DECISION_KIND_APPROVE:
      out.reply = PendingReply::kApprove;
      break;
    case pb::DECISION_KIND_REJECT:
      out.reply = PendingReply::kReject;
      break;
    default:
      out.reply = PendingReply::kEdit;
      out.edited_arguments =
          nlohmann::json::parse(decision.arguments_json(), nullptr, /*allow_exceptions=*/false);
      if (!out.edited_arguments.is_object()) out.edited_arguments = nlohmann::json::object();
      break;
  }
  return true;
}

// The reply the intent service read in `message` (checked by
// ReadPendingReply), and the actions it is about (`chosen`): those it
// names by id when it approves some of several ("yes, just alpha"); the
// others are carried.
void ChooseByWords(const std::string& message, const intentpb::IntentAnalysis& analysis,
                   const std::vector<PendingAction>& pending, const std::vector<AgentInfo>& agents,
                   PendingResolution& out, std::vector<PendingAction>& chosen) {
  out.reply = ReadPendingReply(message, analysis, pending, agents);
  const auto& ids = analysis.reply().action_ids();
  for (const PendingAction& action : pending) {
    const bool picked = out.reply != PendingReply::kApprove || ids.empty() ||
                        std::find(ids.begin(), ids.end(), action.action_id) != ids.end();
    (picked ? chosen : out.carried).push_back(action);
  }
}

// An approved action that may not run, asked again under a new id: the
// same call when only its time ran out (or it predates digests), with the
// target's new name when it was renamed; never for a target that is gone
// or a changed call.
std::optional<PendingAction> AskAgain(const PendingAction& action, bool expired,
                                      const std::vector<AgentInfo>& agents, int64_t now_micros,
                                      std::chrono::seconds ttl) {
  const bool tampered =
      !action.digest.empty() && action.digest != ActionDigest(action.tool, action.arguments);
  if (tampered) return std::nullopt;
  PendingAction again = action;
  again.action_id = core::NewUuid();
  again.digest.clear();
  again.targets = nlohmann::json::object();
  if (!expired) again.summary.clear();  // worded anew by the turn
  SealPendingAction(again, agents, now_micros, ttl);
  if (again.targets.contains("agent") != action.targets.contains("agent")) return std::nullopt;
  return again;
}

// Each approved action that passes WhyNotApprovable runs; any other runs
// nothing, says why, and may be asked again.
void ApproveChosen(std::vector<PendingAction> chosen, const std::vector<AgentInfo>& agents,
                   int64_t now_micros, std::chrono::seconds ttl, const std::string& via,
                   PendingResolution& out) {
  std::vector<std::string> refused;
  for (PendingAction& action : chosen) {
    std::optional<std::string> why = WhyNotApprovable(action, agents, now_micros);
    if (!why) {
      out.decisions.push_back(DecisionOf(action, pb::ACTION_OUTCOME_APPROVED, via));
      out.approved.push_back(std::move(action));
      continue;
    }
    const bool expired = !action.digest.empty() &&
                         action.digest == ActionDigest(action.tool, action.arguments) &&
                         now_micros >= action.expires_at_micros;
    out.decisions.push_back(
        DecisionOf(action, expired ? pb::ACTION_OUTCOME_EXPIRED : pb::ACTION_OUTCOME_STALE, via));
    refused.push_back(action.summary + " did not run: " + *why);
    if (std::optional<PendingAction> again = AskAgain(action, expired, agents, now_micros, ttl)) {
      out.previewed_again.push_back(*std::move(again));
    }
  }
  if (!refused.empty()) {
    std::string text;
    for (const std::string& line : refused) text += (text.empty() ? "" : " ") + line + ".";
    out.refusal = text;
    out.reply_text =
        text + (out.previewed_again.empty()
                    ? " Nothing else was changed. Tell me what you would like to do now."
                    : " Here it is again for your approval.");
  }
}

void RejectChosen(const std::vector<PendingAction>& chosen, const std::string& via,
                  PendingResolution& out) {
  std::string text = "OK, I won't ";
  for (size_t i = 0; i < chosen.size(); ++i) {
    out.decisions.push_back(DecisionOf(chosen[i], pb::ACTION_OUTCOME_REJECTED, via));
    text += (i == 0 ? "" : "; nor ") + core::Shortened(chosen[i].summary, 200);
  }
  out.reply_text = text + " Nothing was changed. What would you like to do instead?";
}

void EditChosen(const std::vector<PendingAction>& chosen, const std::string& message,
                const std::vector<AgentInfo>& agents, const std::string& via,
                PendingResolution& out) {
  for (const PendingAction& action : chosen) {
    out.decisions.push_back(DecisionOf(action, pb::ACTION_OUTCOME_EDITED, via));
    if (via != "api") continue;
    // The client's new arguments over the previewed ones, previewed anew
    // (sealed and worded by the turn).
    PendingAction changed = action;
    changed.action_id = core::NewUuid();
    changed.arguments.update(out.edited_arguments);
    changed.digest.clear();
    changed.targets = nlohmann::json::object();
    changed.summary.clear();
    out.previewed_again.push_back(std::move(changed));
  }
  const std::set<std::string> targets = TargetNames(chosen);
  for (const std::string& name : MentionedAgents(message, agents)) {
    if (targets.count(absl::AsciiStrToLower(name)) == 0) {
      out.other_agent = name;
      break;
    }
  }
}

}  // namespace

PendingResolution ResolvePending(const std::string& message, const pb::ApprovalDecision& decision,
                                 const intentpb::IntentAnalysis& analysis,
                                 const std::vector<PendingAction>& pending,
                                 const std::vector<AgentInfo>& agents, int64_t now_micros,
                                 std::chrono::seconds ttl) {
  PendingResolution out;
  std::vector<PendingAction> chosen;
  std::string via = "words";
  if (decision.kind() != pb::DECISION_KIND_UNSPECIFIED) {
    via = "api";
    if (!ChooseByDecision(decision, pending, out, chosen)) return out;
  } else {
    ChooseByWords(message, analysis, pending, agents, out, chosen);
  }
  switch (out.reply) {
    case PendingReply::kApprove:
      ApproveChosen(std::move(chosen), agents, now_micros, ttl, via, out);
      break;
    case PendingReply::kReject:
      RejectChosen(chosen, via, out);
      break;
    case PendingReply::kEdit:
      EditChosen(chosen, message, agents, via, out);
      break;
    case PendingReply::kOther:
      out.carried = pending;
      break;
  }
  return out;
}

}  // namespace omniforge::orchestrator
