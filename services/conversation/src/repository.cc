#include "services/conversation/src/repository.h"

#include <future>

namespace omniforge::conversation {
namespace {

const char* StatusName(DialogueStatus status) {
  switch (status) {
    case DialogueStatus::kNone:
      return "none";
    case DialogueStatus::kActive:
      return "active";
    case DialogueStatus::kCompleted:
      return "completed";
    case DialogueStatus::kFailed:
      return "failed";
    case DialogueStatus::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

}  // namespace

absl::Status CheckDialogueStatusChange(const std::string& id, DialogueStatus current,
                                       DialogueStatus next) {
  if (current == DialogueStatus::kNone) {
    return absl::FailedPreconditionError("conversation " + id +
                                         " is a chat; only agent dialogues have a status");
  }
  if (current == next || current == DialogueStatus::kActive) return absl::OkStatus();
  return absl::FailedPreconditionError("agent dialogue " + id + " already ended as " +
                                       StatusName(current) + "; it cannot become " +
                                       StatusName(next));
}

absl::StatusOr<AppendResult> AppendMessageAndWait(ConversationRepository& repository,
                                                  const core::Identity& who, NewMessage message) {
  std::promise<absl::StatusOr<AppendResult>> promise;
  auto future = promise.get_future();
  repository.AppendMessage(who, std::move(message), [&promise](absl::StatusOr<AppendResult> r) {
    promise.set_value(std::move(r));
  });
  return future.get();
}

}  // namespace omniforge::conversation
