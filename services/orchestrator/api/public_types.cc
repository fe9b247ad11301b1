#include "services/orchestrator/api/public_types.h"

#include <string>

namespace omniforge::orchestrator {
namespace {

namespace pb = ::omniforge::orchestrator::v1;
namespace convpb = ::omniforge::conversation::v1;
namespace execpb = ::omniforge::executor::v1;
namespace intentpb = ::omniforge::intent::v1;

// The enums that cross by value keep the services' numbers (chat_types_test
// compares every value).

pb::Role PublicRole(convpb::Role role) {
  switch (role) {
    case convpb::ROLE_USER:
      return pb::ROLE_USER;
    case convpb::ROLE_ASSISTANT:
      return pb::ROLE_ASSISTANT;
    case convpb::ROLE_SYSTEM:
      return pb::ROLE_SYSTEM;
    case convpb::ROLE_TOOL:
      return pb::ROLE_TOOL;
    default:  // the roles of agent dialogues, which a chat does not hold
      return pb::ROLE_UNSPECIFIED;
  }
}

}  // namespace

pb::IntentAnalysis PublicAnalysis(const intentpb::IntentAnalysis& analysis) {
  // Same field numbers and wire types: the bytes of one are the other.
  pb::IntentAnalysis shown;
  shown.ParseFromString(analysis.SerializeAsString());
  shown.DiscardUnknownFields();
  return shown;
}

pb::ToolRisk PublicRisk(execpb::ToolRisk risk) {
  return pb::ToolRisk_IsValid(risk) ? static_cast<pb::ToolRisk>(risk) : pb::TOOL_RISK_UNSPECIFIED;
}

pb::TaskStatus PublicTaskStatus(execpb::TaskStatus status) {
  return pb::TaskStatus_IsValid(status) ? static_cast<pb::TaskStatus>(status)
                                        : pb::TASK_STATUS_UNSPECIFIED;
}

pb::ExecutorErrorCode PublicExecutorError(execpb::ErrorCode code) {
  return pb::ExecutorErrorCode_IsValid(code) ? static_cast<pb::ExecutorErrorCode>(code)
                                             : pb::EXECUTOR_ERROR_CODE_INTERNAL;
}

pb::ActionType PublicActionType(intentpb::ActionType action) {
  return pb::ActionType_IsValid(action) ? static_cast<pb::ActionType>(action)
                                        : pb::ACTION_TYPE_UNSPECIFIED;
}

pb::ContextType PublicContextType(intentpb::ContextType context) {
  return pb::ContextType_IsValid(context) ? static_cast<pb::ContextType>(context)
                                          : pb::CONTEXT_TYPE_UNSPECIFIED;
}

intentpb::ContextType InternalContextType(pb::ContextType context) {
  return intentpb::ContextType_IsValid(context) ? static_cast<intentpb::ContextType>(context)
                                                : intentpb::CONTEXT_TYPE_UNSPECIFIED;
}

pb::Conversation PublicConversation(const convpb::Conversation& conversation) {
  pb::Conversation shown;
  shown.set_id(conversation.id());
  shown.set_title(conversation.title());
  *shown.mutable_create_time() = conversation.create_time();
  *shown.mutable_update_time() = conversation.update_time();
  shown.set_message_count(conversation.message_count());
  return shown;
}

pb::Message PublicMessage(const convpb::Message& message) {
  pb::Message shown;
  shown.set_id(message.id());
  shown.set_conversation_id(message.conversation_id());
  shown.set_seq(message.seq());
  shown.set_role(PublicRole(message.role()));
  shown.set_content(message.content());
  *shown.mutable_create_time() = message.create_time();
  const auto& fields = message.metadata().fields();
  if (auto turn = fields.find("turn_id"); turn != fields.end() && turn->second.has_string_value()) {
    shown.set_turn_id(turn->second.string_value());
  }
  if (auto masked = fields.find("secrets_detected"); masked != fields.end()) {
    shown.set_secrets_masked(masked->second.has_list_value() &&
                             masked->second.list_value().values_size() > 0);
  }
  return shown;
}

}  // namespace omniforge::orchestrator
