#include "services/orchestrator/turn/request.h"

#include <nlohmann/json.hpp>

#include "libs/core/error_catalog.h"
#include "libs/core/error_reason.h"
#include "libs/core/ids.h"
#include "libs/core/json_depth.h"
#include "libs/core/text.h"
#include "omniforge/intent/v1/intent_service.pb.h"

namespace omniforge::orchestrator {

namespace pb = ::omniforge::orchestrator::v1;
namespace intentpb = ::omniforge::intent::v1;

namespace {

using nlohmann::json;

constexpr size_t kMaxMessageBytes = size_t{64} * 1024;

}  // namespace

std::string ContextConstraint(const pb::StreamChatRequest& request) {
  if (request.context_type() == pb::CONTEXT_TYPE_UNSPECIFIED ||
      request.context_type() == pb::CONTEXT_TYPE_GLOBAL) {
    return "";
  }
  std::string text = "context " + pb::ContextType_Name(request.context_type());
  if (!request.entity_id().empty()) text += ", on screen: " + request.entity_id();
  return text;
}

std::string DecisionWords(const pb::ApprovalDecision& decision) {
  switch (decision.kind()) {
    case pb::DECISION_KIND_APPROVE:
      return "Approve " + decision.action_id();
    case pb::DECISION_KIND_REJECT:
      return "Reject " + decision.action_id();
    default:
      return "Change " + decision.action_id() + ": " +
             core::Shortened(decision.arguments_json(), 2000);
  }
}

namespace {

// The decision's checks, when the request carries one (any of its fields set).
absl::Status ValidateDecision(const pb::StreamChatRequest& request) {
  const pb::ApprovalDecision& decision = request.decision();
  const bool decides = decision.kind() != pb::DECISION_KIND_UNSPECIFIED;
  if (!decides)
    return core::InvalidField("decision.kind", core::kReasonFieldRequired, "must be set");
  if (!core::IsSafeToken(decision.action_id())) {
    return core::InvalidField("decision.action_id", core::kReasonFieldInvalid,
                              "the preview's action_id (1..128 characters of [A-Za-z0-9._:@-])");
  }
  if (request.conversation_id().empty()) {
    return core::InvalidField("conversation_id", core::kReasonFieldRequired,
                              "a decision answers a preview of an existing conversation");
  }
  if (decision.arguments_json().empty()) return absl::OkStatus();
  if (decision.kind() != pb::DECISION_KIND_EDIT) {
    return core::InvalidField("decision.arguments_json", core::kReasonFieldInvalid,
                              "only with DECISION_KIND_EDIT");
  }
  if (decision.arguments_json().size() > kMaxMessageBytes) {
    return core::InvalidField("decision.arguments_json", core::kReasonFieldTooLarge,
                              "at most 64 KiB");
  }
  if (!core::JsonDepthWithin(decision.arguments_json())) {
    return core::InvalidField("decision.arguments_json", core::kReasonFieldInvalid,
                              "JSON nested more than 64 levels deep (the limit)");
  }
  const json args = json::parse(decision.arguments_json(), nullptr, false);
  if (!args.is_object()) {
    return core::InvalidField("decision.arguments_json", core::kReasonFieldInvalid,
                              "must be a JSON object");
  }
  return absl::OkStatus();
}

absl::Status TokenField(const char* field, const std::string& value) {
  if (value.empty() || core::IsSafeToken(value)) return absl::OkStatus();
  return core::InvalidField(field, core::kReasonFieldInvalid,
                            "1..128 characters of [A-Za-z0-9._:@-]");
}

}  // namespace

absl::Status ValidateStreamChatRequest(const pb::StreamChatRequest& request) {
  const pb::ApprovalDecision& decision = request.decision();
  if (!pb::DecisionKind_IsValid(decision.kind())) {
    return core::InvalidField("decision.kind", core::kReasonFieldInvalid,
                              "unknown value " + std::to_string(decision.kind()));
  }
  const bool decides = decision.kind() != pb::DECISION_KIND_UNSPECIFIED;
  if (decides || !decision.action_id().empty() || !decision.arguments_json().empty()) {
    if (absl::Status valid = ValidateDecision(request); !valid.ok()) return valid;
  }
  if (request.message().empty() && !decides) {
    return core::InvalidField("message", core::kReasonFieldRequired, "must not be empty");
  }
  if (request.message().size() > kMaxMessageBytes) {
    return core::WithReason(
        core::InvalidField("message", core::kReasonFieldTooLarge, "at most 64 KiB"),
        core::kReasonFieldTooLarge, {{"limit_bytes", std::to_string(kMaxMessageBytes)}});
  }
  if (!core::IsValidUtf8(request.message())) {
    return core::InvalidField("message", core::kReasonInvalidUtf8, "must be valid UTF-8");
  }
  if (!pb::ContextType_IsValid(request.context_type())) {
    return core::InvalidField("context_type", core::kReasonFieldInvalid,
                              "unknown value " + std::to_string(request.context_type()));
  }
  if (!request.conversation_id().empty() && !core::IsUuid(request.conversation_id())) {
    return core::InvalidField("conversation_id", core::kReasonFieldInvalid, "must be a UUID");
  }
  if (absl::Status valid = TokenField("turn_id", request.turn_id()); !valid.ok()) return valid;
  return TokenField("entity_id", request.entity_id());
}

absl::Status ValidateCancelTurnRequest(const pb::CancelTurnRequest& request) {
  if (request.conversation_id().empty()) {
    return core::InvalidField("conversation_id", core::kReasonFieldRequired, "required");
  }
  if (!core::IsUuid(request.conversation_id())) {
    return core::InvalidField("conversation_id", core::kReasonFieldInvalid, "must be a UUID");
  }
  return TokenField("turn_id", request.turn_id());
}

absl::Status ValidateReattachRequest(const pb::StreamChatRequest& request) {
  if (request.conversation_id().empty()) {
    return core::InvalidField("conversation_id", core::kReasonFieldRequired,
                              "a reattach names the turn's conversation");
  }
  if (!core::IsUuid(request.conversation_id())) {
    return core::InvalidField("conversation_id", core::kReasonFieldInvalid, "must be a UUID");
  }
  if (request.turn_id().empty()) {
    return core::InvalidField("turn_id", core::kReasonFieldRequired, "a reattach names the turn");
  }
  if (absl::Status valid = TokenField("turn_id", request.turn_id()); !valid.ok()) return valid;
  if (request.resume_after_seq() < 0) {
    return core::InvalidField("resume_after_seq", core::kReasonFieldInvalid, "must be 0 or more");
  }
  return absl::OkStatus();
}

}  // namespace omniforge::orchestrator
