#include "services/conversation/src/repository.h"

#include <future>

namespace omniforge::conversation {

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
