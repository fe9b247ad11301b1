// Storage of conversations and messages, scoped by caller identity.
//
// Every method acts only on the caller's own rows: a conversation of another
// tenant or user is NOT_FOUND, exactly like a missing one. Inputs are already
// validated by ConversationLogic. Implementations are thread-safe.
#pragma once

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "libs/core/identity.h"
#include "services/conversation/src/model.h"

namespace omniforge::conversation {

using AppendCallback = std::function<void(absl::StatusOr<AppendResult>)>;

// The one answer for a conversation that is missing or not the caller's.
inline absl::Status ConversationNotFound(const std::string& id) {
  return absl::NotFoundError("conversation " + id + " not found");
}

// Whether a dialogue in `current` may take `next`: an active dialogue may end
// once; asking for the status it already has is allowed (a retry). Otherwise
// FAILED_PRECONDITION, also for a chat (`current` kNone).
absl::Status CheckDialogueStatusChange(const std::string& id, DialogueStatus current,
                                       DialogueStatus next);

class ConversationRepository {
 public:
  virtual ~ConversationRepository() = default;

  // NOT_FOUND when parent_id names no conversation of the caller.
  virtual absl::StatusOr<Conversation> CreateConversation(const core::Identity& who,
                                                          const NewConversation& conversation) = 0;
  virtual absl::StatusOr<Conversation> GetConversation(const core::Identity& who,
                                                       const std::string& id) = 0;
  // Most recently active first; chats, or the dialogues of `parent_id`.
  virtual absl::StatusOr<ConversationPage> ListConversations(
      const core::Identity& who, const std::string& parent_id,
      const std::optional<ConversationCursor>& after, int page_size) = 0;
  // Assigns the next seq in the conversation. A message whose idempotency
  // key was seen in that conversation yields the stored one, deduplicated.
  // `done` runs exactly once, possibly on another thread, only after the
  // message is durable.
  virtual void AppendMessage(const core::Identity& who, NewMessage message,
                             AppendCallback done) = 0;
  // The newest `limit` messages with seq < before_seq (0: no bound), and the
  // conversation's kind.
  virtual absl::StatusOr<MessagePage> ListMessages(const core::Identity& who,
                                                   const std::string& conversation_id,
                                                   int64_t before_seq, int limit) = 0;
  // Deletes the conversation, its messages and its dialogues.
  virtual absl::Status DeleteConversation(const core::Identity& who, const std::string& id) = 0;
  // Sets an agent dialogue's status as CheckDialogueStatusChange allows and
  // returns the dialogue; NOT_FOUND like the other methods.
  virtual absl::StatusOr<Conversation> SetDialogueStatus(const core::Identity& who,
                                                         const std::string& id,
                                                         DialogueStatus status) = 0;
};

// Synchronous convenience over AppendMessage.
absl::StatusOr<AppendResult> AppendMessageAndWait(ConversationRepository& repository,
                                                  const core::Identity& who, NewMessage message);

}  // namespace omniforge::conversation
