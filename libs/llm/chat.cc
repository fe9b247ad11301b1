#include "libs/llm/chat.h"

namespace omniforge::llm {

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kSystem:
      return "system";
    case Role::kUser:
      return "user";
    case Role::kAssistant:
      return "assistant";
    case Role::kTool:
      return "tool";
  }
  return "unknown";
}

std::string_view FinishReasonName(FinishReason reason) {
  switch (reason) {
    case FinishReason::kUnspecified:
      return "unspecified";
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kToolCalls:
      return "tool_calls";
    case FinishReason::kContentFilter:
      return "content_filter";
    case FinishReason::kPauseTurn:
      return "pause_turn";
  }
  return "unknown";
}

}  // namespace omniforge::llm
