#include "services/orchestrator/turn/request.h"

#include <nlohmann/json.hpp>

#include "libs/core/ids.h"
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
  if (request.context_type() == intentpb::CONTEXT_TYPE_UNSPECIFIED ||
      request.context_type() == intentpb::CONTEXT_TYPE_GLOBAL) {
    return "";
  }
  std::string text = "context " + intentpb::ContextType_Name(request.context_type());
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

absl::Status ValidateStreamChatRequest(const pb::StreamChatRequest& request) {
  const pb::ApprovalDecision& decision = request.decision();
  if (!pb::DecisionKind_IsValid(decision.kind())) {
    return absl::InvalidArgumentError("decision.kind: unknown value " +
                                      std::to_string(decision.kind()));
  }
  const bool decides = decision.kind() != pb::DECISION_KIND_UNSPECIFIED;
  if (decides || !decision.action_id().empty() || !decision.arguments_json().empty()) {
    if (!decides) return absl::InvalidArgumentError("decision.kind: must be set");
    if (!core::IsSafeToken(decision.action_id())) {
      return absl::InvalidArgumentError(
          "decision.action_id: the preview's action_id (1..128 characters of "
          "[A-Za-z0-9._:@-])");
    }
    if (request.conversation_id().empty()) {
      return absl::InvalidArgumentError(
          "conversation_id: a decision answers a preview of an existing conversation");
    }
    if (!decision.arguments_json().empty()) {
      if (decision.kind() != pb::DECISION_KIND_EDIT) {
        return absl::InvalidArgumentError("decision.arguments_json: only with DECISION_KIND_EDIT");
      }
      if (decision.arguments_json().size() > kMaxMessageBytes) {
        return absl::InvalidArgumentError("decision.arguments_json: at most 64 KiB");
      }
      const json args = json::parse(decision.arguments_json(), nullptr, false);
      if (!args.is_object()) {
        return absl::InvalidArgumentError("decision.arguments_json: must be a JSON object");
      }
    }
  }
  if (request.message().empty() && !decides) {
    return absl::InvalidArgumentError("message: must not be empty");
  }
  if (request.message().size() > kMaxMessageBytes) {
    return absl::InvalidArgumentError("message: at most 64 KiB");
  }
  if (!core::IsValidUtf8(request.message())) {
    return absl::InvalidArgumentError("message: must be valid UTF-8");
  }
  if (!intentpb::ContextType_IsValid(request.context_type())) {
    return absl::InvalidArgumentError("context_type: unknown value " +
                                      std::to_string(request.context_type()));
  }
  if (!request.conversation_id().empty() && !core::IsUuid(request.conversation_id())) {
    return absl::InvalidArgumentError("conversation_id: must be a UUID");
  }
  if (!request.turn_id().empty() && !core::IsSafeToken(request.turn_id())) {
    return absl::InvalidArgumentError("turn_id: 1..128 characters of [A-Za-z0-9._:@-]");
  }
  if (!request.entity_id().empty() && !core::IsSafeToken(request.entity_id())) {
    return absl::InvalidArgumentError("entity_id: 1..128 characters of [A-Za-z0-9._:@-]");
  }
  return absl::OkStatus();
}

absl::Status ValidateReattachRequest(const pb::StreamChatRequest& request) {
  if (!core::IsUuid(request.conversation_id())) {
    return absl::InvalidArgumentError("conversation_id: a reattach names the turn's conversation");
  }
  if (!core::IsSafeToken(request.turn_id())) {
    return absl::InvalidArgumentError(
        "turn_id: a reattach names the turn (1..128 characters of [A-Za-z0-9._:@-])");
  }
  if (request.resume_after_seq() < 0) {
    return absl::InvalidArgumentError("resume_after_seq: must be 0 or more");
  }
  return absl::OkStatus();
}

}  // namespace omniforge::orchestrator
