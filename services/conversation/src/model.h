// The conversation domain: plain structs shared by the logic, the
// repositories and the gRPC layer (which converts them to protos).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace omniforge::conversation {

// Values match the proto enum omniforge.conversation.v1.Role.
enum class Role : int {
  kUser = 1,
  kAssistant = 2,
  kSystem = 3,
  kTool = 4,
  kPlanner = 5,
  kExecutor = 6
};

// Values match omniforge.conversation.v1.ConversationKind.
enum class ConversationKind : int { kChat = 1, kAgentDialogue = 2 };

// Values match omniforge.conversation.v1.DialogueStatus; kNone for chats.
enum class DialogueStatus : int {
  kNone = 0,
  kActive = 1,
  kCompleted = 2,
  kFailed = 3,
  kCancelled = 4
};

inline bool IsKnownRole(int value) {
  return value >= static_cast<int>(Role::kUser) && value <= static_cast<int>(Role::kExecutor);
}
// Messages from the side that starts a turn (the user in a chat, the
// planner in an agent dialogue) move the conversation's activity time; the
// replies that follow them within seconds do not, so a turn writes the
// conversation row once. conversation.append_message* in SQL say the same.
inline bool StartsTurn(Role role) { return role == Role::kUser || role == Role::kPlanner; }
inline bool IsKnownKind(int value) {
  return value >= static_cast<int>(ConversationKind::kChat) &&
         value <= static_cast<int>(ConversationKind::kAgentDialogue);
}
inline bool IsKnownDialogueStatus(int value) {
  return value >= static_cast<int>(DialogueStatus::kActive) &&
         value <= static_cast<int>(DialogueStatus::kCancelled);
}

// Times are microseconds since the Unix epoch, UTC.
using Micros = int64_t;

struct Conversation {
  std::string id;
  std::string tenant_id;
  std::string user_id;
  std::string title;
  ConversationKind kind = ConversationKind::kChat;
  std::string parent_id;             // empty for chats
  std::string metadata_json = "{}";  // a JSON object
  int64_t message_count = 0;
  DialogueStatus status = DialogueStatus::kNone;  // kActive.. for agent dialogues
  Micros created_at = 0;
  Micros updated_at = 0;  // the newest message that started a turn, or creation
  // Its place in the list (newest first): the stored activity time, which a
  // storage may move only when the order changes (at most `updated_at`).
  Micros listed_at = 0;
};

struct Message {
  std::string id;
  std::string conversation_id;
  int64_t seq = 0;
  Role role = Role::kUser;
  std::string content;
  std::string metadata_json = "{}";
  int32_t token_count = 0;
  Micros created_at = 0;
};

struct NewConversation {
  std::string title;
  ConversationKind kind = ConversationKind::kChat;
  std::string parent_id;
  std::string metadata_json = "{}";
};

// A message ready to store: validated, annotated and counted by the logic.
struct NewMessage {
  std::string conversation_id;
  Role role = Role::kUser;
  std::string content;
  std::string metadata_json = "{}";
  int32_t token_count = 0;
  std::string idempotency_key;  // empty: none
};

struct AppendResult {
  Message message;
  bool deduplicated = false;
};

// Keyset position for ListConversations: strictly older than this.
struct ConversationCursor {
  Micros listed_at = 0;
  std::string id;
};

struct ConversationPage {
  std::vector<Conversation> conversations;
  std::optional<ConversationCursor> next;
};

struct MessagePage {
  std::vector<Message> messages;  // ascending seq
  bool has_more = false;
  ConversationKind kind = ConversationKind::kChat;  // of the conversation
};

}  // namespace omniforge::conversation
