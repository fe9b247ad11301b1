#include "services/conversation/src/memory_repository.h"

#include <algorithm>
#include <chrono>

#include "libs/core/ids.h"

namespace omniforge::conversation {

MemoryConversationRepository::Stored* MemoryConversationRepository::Find(const core::Identity& who,
                                                                         const std::string& id) {
  auto it = stored_.find({who.tenant_id, id});
  if (it == stored_.end() || it->second.conversation.user_id != who.user_id) return nullptr;
  return &it->second;
}

absl::StatusOr<Conversation> MemoryConversationRepository::CreateConversation(
    const core::Identity& who, const NewConversation& input) {
  absl::MutexLock lock(&mu_);
  if (!input.parent_id.empty() && Find(who, input.parent_id) == nullptr) {
    return ConversationNotFound(input.parent_id);
  }
  Conversation c;
  c.id = core::NewUuid();
  c.tenant_id = who.tenant_id;
  c.user_id = who.user_id;
  c.title = input.title;
  c.kind = input.kind;
  c.parent_id = input.parent_id;
  c.metadata_json = input.metadata_json;
  if (c.kind == ConversationKind::kAgentDialogue) c.status = DialogueStatus::kActive;
  c.created_at = c.updated_at = c.listed_at = ++clock_;
  stored_[{who.tenant_id, c.id}].conversation = c;
  return c;
}

absl::StatusOr<Conversation> MemoryConversationRepository::GetConversation(
    const core::Identity& who, const std::string& id) {
  absl::MutexLock lock(&mu_);
  Stored* s = Find(who, id);
  if (s == nullptr) return ConversationNotFound(id);
  return s->conversation;
}

absl::StatusOr<ConversationPage> MemoryConversationRepository::ListConversations(
    const core::Identity& who, const std::string& parent_id,
    const std::optional<ConversationCursor>& after, int page_size) {
  absl::MutexLock lock(&mu_);
  if (!parent_id.empty() && Find(who, parent_id) == nullptr) return ConversationNotFound(parent_id);
  std::vector<Conversation> matching;
  for (const auto& [key, s] : stored_) {
    const Conversation& c = s.conversation;
    if (key.first != who.tenant_id || c.user_id != who.user_id || c.parent_id != parent_id)
      continue;
    if (after && std::tie(c.listed_at, c.id) >= std::tie(after->listed_at, after->id)) continue;
    matching.push_back(c);
  }
  std::sort(matching.begin(), matching.end(), [](const Conversation& a, const Conversation& b) {
    return std::tie(a.listed_at, a.id) > std::tie(b.listed_at, b.id);
  });
  ConversationPage page;
  if (static_cast<int>(matching.size()) > page_size) {
    matching.resize(page_size);
    page.next = ConversationCursor{matching.back().listed_at, matching.back().id};
  }
  page.conversations = std::move(matching);
  return page;
}

void MemoryConversationRepository::AppendMessage(const core::Identity& who, NewMessage in,
                                                 AppendCallback done) {
  absl::StatusOr<AppendResult> result;
  {
    absl::MutexLock lock(&mu_);
    Stored* s = Find(who, in.conversation_id);
    if (s == nullptr) {
      result = ConversationNotFound(in.conversation_id);
    } else if (auto seen = s->by_key.find(in.idempotency_key);
               !in.idempotency_key.empty() && seen != s->by_key.end()) {
      result = AppendResult{s->messages[seen->second], true};
    } else {
      Message m;
      m.id = core::NewUuid();
      m.conversation_id = in.conversation_id;
      m.seq = static_cast<int64_t>(s->messages.size()) + 1;
      m.role = in.role;
      m.content = std::move(in.content);
      m.metadata_json = std::move(in.metadata_json);
      m.token_count = in.token_count;
      m.created_at = ++clock_;
      if (!in.idempotency_key.empty()) s->by_key[in.idempotency_key] = s->messages.size();
      s->messages.push_back(m);
      s->conversation.message_count = m.seq;
      if (StartsTurn(m.role)) {
        s->conversation.updated_at = s->conversation.listed_at = m.created_at;
      }
      result = AppendResult{std::move(m), false};
    }
  }
  done(std::move(result));
}

absl::StatusOr<MessagePage> MemoryConversationRepository::ListMessages(
    const core::Identity& who, const std::string& conversation_id, int64_t before_seq, int limit) {
  absl::MutexLock lock(&mu_);
  Stored* s = Find(who, conversation_id);
  if (s == nullptr) return ConversationNotFound(conversation_id);
  const int64_t end = before_seq == 0 ? static_cast<int64_t>(s->messages.size())
                                      : std::min<int64_t>(before_seq - 1, s->messages.size());
  const int64_t begin = std::max<int64_t>(0, end - limit);
  MessagePage page;
  page.kind = s->conversation.kind;
  page.messages.assign(s->messages.begin() + begin, s->messages.begin() + end);
  page.has_more = begin > 0;
  return page;
}

absl::Status MemoryConversationRepository::DeleteConversation(const core::Identity& who,
                                                              const std::string& id) {
  absl::MutexLock lock(&mu_);
  if (Find(who, id) == nullptr) return ConversationNotFound(id);
  // Dialogues of dialogues go too, as PostgreSQL's cascade does.
  std::vector<std::string> doomed = {id};
  for (size_t i = 0; i < doomed.size(); ++i) {
    for (const auto& [key, s] : stored_) {
      if (key.first == who.tenant_id && s.conversation.parent_id == doomed[i]) {
        doomed.push_back(key.second);
      }
    }
  }
  for (const std::string& gone : doomed) stored_.erase({who.tenant_id, gone});
  return absl::OkStatus();
}

absl::StatusOr<Conversation> MemoryConversationRepository::SetDialogueStatus(
    const core::Identity& who, const std::string& id, DialogueStatus status) {
  absl::MutexLock lock(&mu_);
  Stored* s = Find(who, id);
  if (s == nullptr) return ConversationNotFound(id);
  if (absl::Status allowed = CheckDialogueStatusChange(id, s->conversation.status, status);
      !allowed.ok()) {
    return allowed;
  }
  s->conversation.status = status;
  return s->conversation;
}

}  // namespace omniforge::conversation
