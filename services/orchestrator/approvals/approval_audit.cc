#include "services/orchestrator/approvals/approval_audit.h"

#include "absl/strings/ascii.h"
#include "libs/core/ids.h"
#include "libs/core/text.h"
#include "services/orchestrator/api/public_types.h"

namespace omniforge::orchestrator {
namespace {

namespace execpb = ::omniforge::executor::v1;
namespace pb = ::omniforge::orchestrator::v1;

constexpr char kOutcomePrefix[] = "ACTION_OUTCOME_";
constexpr char kRiskPrefix[] = "TOOL_RISK_";

std::string Suffix(const std::string& name, const std::string& prefix) {
  return absl::AsciiStrToLower(name.starts_with(prefix) ? name.substr(prefix.size()) : name);
}

}  // namespace

absl::Status ValidateActionDecision(const ActionDecisionRecord& record) {
  if (record.tenant_id.empty()) return absl::InvalidArgumentError("tenant_id: required");
  if (record.user_id.empty()) return absl::InvalidArgumentError("user_id: required");
  if (!core::IsUuid(record.conversation_id)) {
    return absl::InvalidArgumentError("conversation_id: must be a UUID");
  }
  if (record.action_id.empty()) return absl::InvalidArgumentError("action_id: required");
  if (record.outcome == pb::ACTION_OUTCOME_UNSPECIFIED ||
      !pb::ActionOutcome_IsValid(record.outcome)) {
    return absl::InvalidArgumentError("outcome: must be one of ActionOutcome's values");
  }
  if (!execpb::ToolRisk_IsValid(record.risk)) {
    return absl::InvalidArgumentError("risk: not a ToolRisk value");
  }
  if (record.decided_by.empty()) return absl::InvalidArgumentError("decided_by: required");
  if (record.via != "words" && record.via != "api" && record.via != "policy") {
    return absl::InvalidArgumentError("via: must be words, api or policy");
  }
  if (record.decided_at_micros < 0) {
    return absl::InvalidArgumentError("decided_at_micros: must not be negative");
  }
  return absl::OkStatus();
}

std::string StoredDecisionSummary(const std::string& summary) {
  return core::Shortened(summary, kMaxDecisionSummaryBytes);
}

absl::Status ValidateDecisionQuery(const std::string& conversation_id, int limit) {
  if (!core::IsUuid(conversation_id)) {
    return absl::InvalidArgumentError("conversation_id: must be a UUID");
  }
  if (limit < 1) return absl::InvalidArgumentError("limit: must be at least 1");
  return absl::OkStatus();
}

std::string ActionOutcomeText(pb::ActionOutcome outcome) {
  return Suffix(pb::ActionOutcome_Name(outcome), kOutcomePrefix);
}

bool ParseActionOutcomeText(const std::string& text, pb::ActionOutcome* outcome) {
  return pb::ActionOutcome_Parse(kOutcomePrefix + absl::AsciiStrToUpper(text), outcome);
}

std::string ToolRiskText(execpb::ToolRisk risk) {
  return Suffix(execpb::ToolRisk_Name(risk), kRiskPrefix);
}

bool ParseToolRiskText(const std::string& text, execpb::ToolRisk* risk) {
  return execpb::ToolRisk_Parse(kRiskPrefix + absl::AsciiStrToUpper(text), risk);
}

pb::ActionDecision ActionDecisionProto(const ActionDecisionRecord& record) {
  pb::ActionDecision decision;
  decision.set_action_id(record.action_id);
  decision.set_digest(record.digest);
  decision.set_tool_name(record.tool);
  decision.set_summary(record.summary);
  decision.set_risk(PublicRisk(record.risk));
  decision.set_outcome(record.outcome);
  decision.set_decided_by(record.decided_by);
  decision.set_via(record.via);
  decision.set_turn_id(record.turn_id);
  decision.set_decided_at_unix_ms(record.decided_at_micros / 1000);
  return decision;
}

}  // namespace omniforge::orchestrator
