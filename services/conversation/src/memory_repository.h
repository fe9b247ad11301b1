// ConversationRepository held in memory: the same contract as the PostgreSQL
// one, for unit tests of code that uses a repository. Thread-safe.
#pragma once

#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "services/conversation/src/repository.h"

namespace omniforge::conversation {

class MemoryConversationRepository final : public ConversationRepository {
 public:
  absl::StatusOr<Conversation> CreateConversation(const core::Identity& who,
                                                  const NewConversation& conversation) override;
  absl::StatusOr<Conversation> GetConversation(const core::Identity& who,
                                               const std::string& id) override;
  absl::StatusOr<ConversationPage> ListConversations(const core::Identity& who,
                                                     const std::string& parent_id,
                                                     const std::optional<ConversationCursor>& after,
                                                     int page_size) override;
  void AppendMessage(const core::Identity& who, NewMessage message, AppendCallback done) override;
  absl::StatusOr<MessagePage> ListMessages(const core::Identity& who,
                                           const std::string& conversation_id, int64_t before_seq,
                                           int limit) override;
  absl::Status DeleteConversation(const core::Identity& who, const std::string& id) override;
  absl::StatusOr<Conversation> SetDialogueStatus(const core::Identity& who, const std::string& id,
                                                 DialogueStatus status) override;

 private:
  struct Stored {
    Conversation conversation;
    std::vector<Message> messages;
    std::map<std::string, size_t> by_key;  // idempotency key -> index
  };
  // Null when missing or not the caller's.
  Stored* Find(const core::Identity& who, const std::string& id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  std::map<std::pair<std::string, std::string>, Stored> stored_
      ABSL_GUARDED_BY(mu_);  // (tenant, id)
  // Strictly increasing timestamps keep ordering testable.
  Micros clock_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace omniforge::conversation
