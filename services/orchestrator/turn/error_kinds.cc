#include "services/orchestrator/turn/error_kinds.h"

namespace omniforge::orchestrator {

namespace pb = ::omniforge::orchestrator::v1;

namespace {

constexpr ErrorEventReason kEventReasons[] = {
    {pb::CHAT_ERROR_CODE_TOOL_CALL_LIMIT, "TOOL_CALL_LIMIT", false},
    {pb::CHAT_ERROR_CODE_TIME_LIMIT, "TIME_LIMIT", false},
    {pb::CHAT_ERROR_CODE_ITERATION_LIMIT, "ITERATION_LIMIT", false},
    {pb::CHAT_ERROR_CODE_MODEL_FAILED, "MODEL_FAILED", true},
    {pb::CHAT_ERROR_CODE_TOOL_FAILED, "TOOL_FAILED", true},
    {pb::CHAT_ERROR_CODE_STORAGE_UNAVAILABLE, "STORAGE_UNAVAILABLE", true},
    {pb::CHAT_ERROR_CODE_CANCELLED, "CANCELLED", false},
    {pb::CHAT_ERROR_CODE_PLAN_FAILED, "PLAN_FAILED", true},
    // Sent when a service the turn needs is out of reach.
    {pb::CHAT_ERROR_CODE_INTERNAL, "SERVICE_UNAVAILABLE", true},
    {pb::CHAT_ERROR_CODE_APPROVAL_REFUSED, "APPROVAL_REFUSED", false},
    {pb::CHAT_ERROR_CODE_ACTION_DENIED, "ACTION_DENIED", false},
    {pb::CHAT_ERROR_CODE_BUDGET_EXCEEDED, "BUDGET_EXHAUSTED", false},
    {pb::CHAT_ERROR_CODE_SECRET_MASKED, "SECRET_MASKED", false},
};

}  // namespace

std::span<const ErrorEventReason> ErrorEventReasons() { return kEventReasons; }

const ErrorEventReason& ErrorEventReasonOf(pb::ChatErrorCode code) {
  const ErrorEventReason* internal = nullptr;
  for (const ErrorEventReason& entry : kEventReasons) {
    if (entry.code == code) return entry;
    if (entry.code == pb::CHAT_ERROR_CODE_INTERNAL) internal = &entry;
  }
  return *internal;
}

std::string ErrorKind(pb::ChatErrorCode code) {
  switch (code) {
    case pb::CHAT_ERROR_CODE_TOOL_CALL_LIMIT:
      return "tool_call_limit";
    case pb::CHAT_ERROR_CODE_TIME_LIMIT:
      return "time_limit";
    case pb::CHAT_ERROR_CODE_ITERATION_LIMIT:
      return "iteration_limit";
    case pb::CHAT_ERROR_CODE_MODEL_FAILED:
      return "model_failed";
    case pb::CHAT_ERROR_CODE_TOOL_FAILED:
      return "tool_failed";
    case pb::CHAT_ERROR_CODE_PLAN_FAILED:
      return "plan_failed";
    case pb::CHAT_ERROR_CODE_STORAGE_UNAVAILABLE:
    case pb::CHAT_ERROR_CODE_INTERNAL:  // only for a service out of reach
      return "downstream_unavailable";
    default:
      return "";
  }
}

std::string ErrorComponent(const std::string& kind, const std::string& stage) {
  if (kind == "tool_call_limit" || kind == "time_limit" || kind == "iteration_limit") {
    return "turn";
  }
  if (stage == "store_user_message" || stage == "read_window" || stage == "store_reply") {
    return "conversation";
  }
  if (stage == "tool_call" || stage == "list_agents") return "executor";
  if (stage == "analyze_intent") return "intent";
  if (stage == "planner_stream") return "llm";
  if (stage == "plan") return "plans";
  if (stage == "read_flow" || stage == "store_flow" || stage == "store_decision") {
    return "orchestration";
  }
  return "orchestrator";
}

}  // namespace omniforge::orchestrator
