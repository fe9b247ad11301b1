#include "services/orchestrator/downstream/downstream.h"

namespace omniforge::orchestrator {

absl::StatusOr<convpb::AppendMessagesResponse> Memory::AppendMessages(
    const core::Call& call, const convpb::AppendMessagesRequest& request) {
  convpb::AppendMessagesResponse response;
  absl::Status unreachable;
  for (const convpb::AppendMessageRequest& message : request.messages()) {
    convpb::AppendMessagesResult* result = response.add_results();
    absl::StatusOr<convpb::AppendMessageResponse> stored =
        unreachable.ok() ? AppendMessage(call, message) : unreachable;
    if (stored.ok()) {
      *result->mutable_appended() = *std::move(stored);
      continue;
    }
    result->set_error_code(static_cast<int32_t>(stored.status().code()));
    result->set_error_message(std::string(stored.status().message()));
    if (absl::IsUnavailable(stored.status()) || absl::IsDeadlineExceeded(stored.status())) {
      unreachable = stored.status();
    }
  }
  return response;
}

}  // namespace omniforge::orchestrator
