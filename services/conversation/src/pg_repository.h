// ConversationRepository on PostgreSQL (schema `conversation`).
//
// Every transaction runs as the application role with app.tenant_id set, so
// row-level security backs the tenant filter in each query; the user filter
// is the application's. Content and titles are sealed by the KeyRing before
// they reach the database. Appends go through a group-commit queue: the
// messages waiting at one moment are written in one transaction, and each is
// acknowledged only after that transaction commits.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "libs/core/thread_pool.h"
#include "libs/pg/group_commit.h"
#include "libs/pg/pool.h"
#include "libs/seal/key_ring.h"
#include "services/conversation/src/repository.h"

namespace omniforge::conversation {

// The table of the tenants' data keys (seal::KeyRing).
inline constexpr char kConversationKeys[] = "conversation.tenant_keys";

struct PgRepositoryOptions {
  int append_committers = 2;         // batches in flight: one running, one flushing
  size_t append_max_batch = 256;     // messages per transaction at most
  size_t append_max_queued = 10000;  // waiting messages; beyond, RESOURCE_EXHAUSTED
};

struct RetentionPolicy {
  int default_days = 30;
  std::map<std::string, int> tenant_days;  // overrides by tenant id
};

class PgConversationRepository final : public ConversationRepository {
 public:
  PgConversationRepository(pg::PgPool& pool, seal::KeyRing& keys, PgRepositoryOptions options = {});
  ~PgConversationRepository() override;

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

  // Deletes up to `limit` top-level conversations (with their messages and
  // dialogues) whose last activity is older than their tenant's retention at
  // `now`. Returns how many were deleted.
  absl::StatusOr<int64_t> PurgeIdle(const RetentionPolicy& policy, Micros now, int limit);

 private:
  struct PendingAppend {
    core::Identity who;
    NewMessage message;
    AppendCallback done;
  };
  struct PreparedBatch;
  // Writes a batch of appends (halving it around an item the database
  // rejects) and completes each item's call.
  void CommitBatch(std::vector<PendingAppend>& batch, const std::function<void()>& executed);
  // Gives each new message its id, seals its content and fills the columns;
  // fails when a tenant's key cannot be read.
  absl::Status PrepareBatch(const std::vector<PendingAppend>& batch, PreparedBatch& prepared);
  // Sends the prepared messages in one statement; the rows say per message
  // whether it was stored, a duplicate, or its conversation is missing.
  absl::StatusOr<pqxx::result> WriteBatch(const std::vector<PendingAppend>& batch,
                                          const PreparedBatch& prepared,
                                          const std::function<void()>& executed);
  // Each item's outcome from the rows; retries share their leader's.
  std::vector<absl::StatusOr<AppendResult>> BatchResults(const std::vector<PendingAppend>& batch,
                                                         PreparedBatch& prepared,
                                                         const pqxx::result& rows);
  // Runs the items' callbacks, on the completion thread when it is free.
  void CompleteBatch(std::vector<PendingAppend>& batch,
                     std::vector<absl::StatusOr<AppendResult>> results);
  absl::StatusOr<Conversation> ReadConversation(pqxx::work& tx, const std::string& tenant,
                                                const pqxx::row& row);
  // Row columns: id, seq, role, key_id, content, token_count, metadata, created_us.
  absl::StatusOr<Message> ReadMessage(const std::string& tenant, const std::string& conversation_id,
                                      const pqxx::row& row);

  pg::PgPool& pool_;
  seal::KeyRing& keys_;
  // Finishing the calls of a batch (writing their responses) takes about as
  // long as writing the batch; a committer hands multi-message batches to
  // this thread and starts the next write at once. Declared before appends_
  // so it outlives the queue's final drain.
  std::unique_ptr<core::ThreadPool> completions_;
  std::unique_ptr<pg::GroupCommitQueue<PendingAppend>> appends_;
};

}  // namespace omniforge::conversation
