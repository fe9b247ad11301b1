#include "services/conversation/src/pg_repository.h"

#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

#include "libs/core/clock.h"
#include "libs/core/ids.h"
#include "libs/core/logging.h"
#include "libs/core/metrics.h"
#include "libs/pg/array_literal.h"
#include "libs/seal/sealed_text.h"

namespace omniforge::conversation {
namespace {

constexpr char kConversationColumns[] =
    "id::text, user_id, kind, COALESCE(parent_id::text, ''), key_id, title, metadata::text,"
    " COALESCE((SELECT m.seq FROM conversation.messages m WHERE m.tenant_id ="
    "  conversations.tenant_id AND m.conversation_id = conversations.id"
    "  ORDER BY m.seq DESC LIMIT 1), 0),"
    " (extract(epoch FROM created_at) * 1000000)::bigint,"
    // The activity shown: the stored time, or the newest message that started
    // a turn when that is newer (the stored time moves only when the list's
    // order changes or it is 10 minutes behind; migration 0004).
    " (extract(epoch FROM GREATEST(updated_at, (SELECT m.created_at FROM conversation.messages m"
    "  WHERE m.tenant_id = conversations.tenant_id AND m.conversation_id = conversations.id"
    "  AND m.role IN (1, 5) ORDER BY m.seq DESC LIMIT 1))) * 1000000)::bigint,"
    " COALESCE(status, 0), (extract(epoch FROM updated_at) * 1000000)::bigint";
// SQL turning a microseconds-since-epoch expression into a timestamptz.
std::string MicrosToTimestamp(const std::string& micros) {
  return "('epoch'::timestamptz + " + micros + " * interval '1 microsecond')";
}

std::string TitleAd(const std::string& tenant, const std::string& conversation_id) {
  return "title|" + tenant + "|" + conversation_id;
}

std::string ContentAd(const std::string& tenant, const std::string& conversation_id,
                      const std::string& message_id) {
  return "message|" + tenant + "|" + conversation_id + "|" + message_id;
}

std::string MetadataAd(const std::string& tenant, const std::string& conversation_id,
                       const std::string& message_id) {
  return "metadata|" + tenant + "|" + conversation_id + "|" + message_id;
}

// Metadata is sealed with its row's key (its routing notes hold the user's
// words); the jsonb column holds the sealed form as a JSON string. An empty
// object stays as it is.
std::string SealMetadata(const seal::DataKey& key, const std::string& json, const std::string& ad) {
  if (json.empty() || json == "{}") return "{}";
  return seal::SealJson(key, json, ad);
}

// Errors that one message's data can cause; a batch failing with one of
// these is split to find the culprit. Anything else (overload, timeouts, a
// lost connection) fails the whole batch at once.
bool IsItemError(const absl::Status& status) {
  return status.code() == absl::StatusCode::kFailedPrecondition ||
         status.code() == absl::StatusCode::kInternal ||
         status.code() == absl::StatusCode::kInvalidArgument;
}

}  // namespace

PgConversationRepository::PgConversationRepository(pg::PgPool& pool, seal::KeyRing& keys,
                                                   PgRepositoryOptions options)
    : pool_(pool), keys_(keys), completions_(std::make_unique<core::ThreadPool>(1, 1024)) {
  appends_ = std::make_unique<pg::GroupCommitQueue<PendingAppend>>(
      options.append_committers, options.append_max_batch, options.append_max_queued,
      [this](std::vector<PendingAppend>& batch, const std::function<void()>& executed) {
        CommitBatch(batch, executed);
      },
      [](PendingAppend& item, absl::Status why) { item.done(std::move(why)); });
}

PgConversationRepository::~PgConversationRepository() { appends_.reset(); }

absl::StatusOr<Conversation> PgConversationRepository::ReadConversation(pqxx::work& tx,
                                                                        const std::string& tenant,
                                                                        const pqxx::row& row) {
  Conversation c;
  c.id = row[0].as<std::string>();
  c.tenant_id = tenant;
  c.user_id = row[1].as<std::string>();
  c.kind = static_cast<ConversationKind>(row[2].as<int>());
  c.parent_id = row[3].as<std::string>();
  auto key = keys_.KeyById(tx, tenant, row[4].as<int>());
  if (!key.ok()) return key.status();
  auto title = seal::KeyRing::Open(*key, pqxx::binarystring(row[5]).str(), TitleAd(tenant, c.id));
  if (!title.ok()) return title.status();
  c.title = *std::move(title);
  auto metadata = seal::OpenJsonWith(*key, row[6].as<std::string>(), MetadataAd(tenant, c.id, ""));
  if (!metadata.ok()) return metadata.status();
  c.metadata_json = *std::move(metadata);
  c.message_count = row[7].as<int64_t>();
  c.created_at = row[8].as<int64_t>();
  c.updated_at = row[9].as<int64_t>();
  c.status = static_cast<DialogueStatus>(row[10].as<int>());
  c.listed_at = row[11].as<int64_t>();
  return c;
}

absl::StatusOr<Message> PgConversationRepository::ReadMessage(const std::string& tenant,
                                                              const std::string& conversation_id,
                                                              const pqxx::row& row) {
  Message m;
  m.id = row[0].as<std::string>();
  m.conversation_id = conversation_id;
  m.seq = row[1].as<int64_t>();
  m.role = static_cast<Role>(row[2].as<int>());
  auto key = keys_.Key(tenant, row[3].as<int>());
  if (!key.ok()) return key.status();
  auto content = seal::KeyRing::Open(*key, pqxx::binarystring(row[4]).str(),
                                     ContentAd(tenant, conversation_id, m.id));
  if (!content.ok()) return content.status();
  m.content = *std::move(content);
  m.token_count = row[5].as<int32_t>();
  auto metadata =
      seal::OpenJsonWith(*key, row[6].as<std::string>(), MetadataAd(tenant, conversation_id, m.id));
  if (!metadata.ok()) return metadata.status();
  m.metadata_json = *std::move(metadata);
  m.created_at = row[7].as<int64_t>();
  return m;
}

absl::StatusOr<Conversation> PgConversationRepository::CreateConversation(
    const core::Identity& who, const NewConversation& input) {
  auto key = keys_.ActiveKey(who.tenant_id);
  if (!key.ok()) return key.status();
  Conversation c;
  c.id = core::NewUuid();
  c.tenant_id = who.tenant_id;
  c.user_id = who.user_id;
  c.title = input.title;
  c.kind = input.kind;
  c.parent_id = input.parent_id;
  c.metadata_json = input.metadata_json;
  if (c.kind == ConversationKind::kAgentDialogue) c.status = DialogueStatus::kActive;
  c.created_at = c.updated_at = c.listed_at = core::NowMicros();
  const std::string sealed_title = seal::KeyRing::Seal(*key, c.title, TitleAd(c.tenant_id, c.id));
  absl::Status status = pg::WithTenantTransaction(pool_, who.tenant_id, [&](pqxx::work& tx) {
    if (!c.parent_id.empty()) {
      pqxx::result parent = tx.exec_params(
          "SELECT 1 FROM conversation.conversations"
          " WHERE tenant_id = $1 AND id = $2::uuid AND user_id = $3 FOR KEY SHARE",
          who.tenant_id, c.parent_id, who.user_id);
      if (parent.empty()) return ConversationNotFound(c.parent_id);
    }
    tx.exec_params(
        "INSERT INTO conversation.conversations (tenant_id, id, user_id, kind, parent_id, key_id,"
        " title, metadata, created_at, updated_at, status) VALUES ($1, $2::uuid, $3, $4,"
        " NULLIF($5, '')::uuid, $6, $7, $8::jsonb, " +
            MicrosToTimestamp("$9") + ", " + MicrosToTimestamp("$9") + ", NULLIF($10, 0))",
        who.tenant_id, c.id, who.user_id, static_cast<int>(c.kind), c.parent_id, key->id,
        pqxx::binarystring(sealed_title),
        SealMetadata(*key, c.metadata_json, MetadataAd(c.tenant_id, c.id, "")), c.created_at,
        static_cast<int>(c.status));
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return c;
}

absl::StatusOr<Conversation> PgConversationRepository::GetConversation(const core::Identity& who,
                                                                       const std::string& id) {
  absl::StatusOr<Conversation> result = ConversationNotFound(id);
  absl::Status status = pg::WithTenantTransaction(pool_, who.tenant_id, [&](pqxx::work& tx) {
    pqxx::result rows =
        tx.exec_params(std::string("SELECT ") + kConversationColumns +
                           " FROM conversation.conversations"
                           " WHERE tenant_id = $1 AND id = $2::uuid AND user_id = $3",
                       who.tenant_id, id, who.user_id);
    if (!rows.empty()) result = ReadConversation(tx, who.tenant_id, rows[0]);
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return result;
}

absl::StatusOr<ConversationPage> PgConversationRepository::ListConversations(
    const core::Identity& who, const std::string& parent_id,
    const std::optional<ConversationCursor>& after, int page_size) {
  ConversationPage page;
  absl::Status status =
      pg::WithTenantTransaction(pool_, who.tenant_id, [&](pqxx::work& tx) -> absl::Status {
        page = ConversationPage{};  // the body may run again after a lost connection
        std::string where = " WHERE tenant_id = $1 AND user_id = $2";
        if (parent_id.empty()) {
          where += " AND parent_id IS NULL AND $3 = ''";
        } else {
          pqxx::result parent = tx.exec_params(
              "SELECT 1 FROM conversation.conversations"
              " WHERE tenant_id = $1 AND id = $2::uuid AND user_id = $3",
              who.tenant_id, parent_id, who.user_id);
          if (parent.empty()) return ConversationNotFound(parent_id);
          where += " AND parent_id = NULLIF($3, '')::uuid";
        }
        // Keyset pagination; the page token carries the last row's position.
        where += after ? " AND (updated_at, id) < (" + MicrosToTimestamp("$5") + ", $6::uuid)"
                       : " AND $5::bigint IS NOT NULL AND $6 = ''";
        const std::string sql = std::string("SELECT ") + kConversationColumns +
                                " FROM conversation.conversations" + where +
                                " ORDER BY updated_at DESC, id DESC LIMIT $4";
        pqxx::result rows =
            tx.exec_params(sql, who.tenant_id, who.user_id, parent_id, page_size + 1,
                           after ? after->listed_at : 0, after ? after->id : std::string());
        for (const pqxx::row& row : rows) {
          if (static_cast<int>(page.conversations.size()) == page_size) {
            const Conversation& last = page.conversations.back();
            page.next = ConversationCursor{last.listed_at, last.id};
            break;
          }
          auto c = ReadConversation(tx, who.tenant_id, row);
          if (!c.ok()) return c.status();
          page.conversations.push_back(*std::move(c));
        }
        return absl::OkStatus();
      });
  if (!status.ok()) return status;
  return page;
}

void PgConversationRepository::AppendMessage(const core::Identity& who, NewMessage message,
                                             AppendCallback done) {
  appends_->Submit(PendingAppend{who, std::move(message), std::move(done)});
}

// A batch made ready to write: each new message with its id, key and sealed
// content, the retries that share an earlier item's result, and, for more
// than one message, the statement's columns (one array each).
struct PgConversationRepository::PreparedBatch {
  explicit PreparedBatch(size_t size)
      : messages(size), key_ids(size), sealed(size), sealed_metadata(size) {}

  // Adds batch item `i`, prepared already, as the next element of each column.
  void AddRow(size_t i, const core::Identity& who, const std::string& idempotency_key) {
    const Message& m = messages[i];
    sent.push_back(i);
    tenants.Add(who.tenant_id);
    users.Add(who.user_id);
    conversations.Add(m.conversation_id);
    ids.Add(m.id);
    roles.Add(static_cast<int64_t>(m.role));
    key_id_column.Add(int64_t{key_ids[i]});
    contents.AddBytes(sealed[i]);
    tokens.Add(int64_t{m.token_count});
    metadata_column.Add(sealed_metadata[i]);
    if (idempotency_key.empty()) {
      idempotency_keys.AddNull();
    } else {
      idempotency_keys.Add(idempotency_key);
    }
    created.Add(m.created_at);
  }

  std::vector<std::pair<size_t, size_t>> followers;  // (item, leader)
  std::vector<Message> messages;
  std::vector<int> key_ids;
  std::vector<std::string> sealed;
  std::vector<std::string> sealed_metadata;
  // The statement's columns; element n is batch[sent[n]].
  std::vector<size_t> sent;
  pg::ArrayLiteral tenants, users, conversations, ids, roles, key_id_column, contents, tokens,
      metadata_column, idempotency_keys, created;
};

absl::Status PgConversationRepository::PrepareBatch(const std::vector<PendingAppend>& batch,
                                                    PreparedBatch& prepared) {
  // The first item of each (tenant, conversation, idempotency key) goes to
  // the database; later retries in the same batch share its result.
  std::map<std::tuple<std::string, std::string, std::string>, size_t> leaders;
  std::unordered_map<std::string, seal::DataKey> tenant_keys;
  const Micros now = core::NowMicros();
  for (size_t i = 0; i < batch.size(); ++i) {
    const core::Identity& who = batch[i].who;
    const NewMessage& in = batch[i].message;
    if (!in.idempotency_key.empty()) {
      auto [it, first] =
          leaders.try_emplace({who.tenant_id, in.conversation_id, in.idempotency_key}, i);
      if (!first) {
        prepared.followers.emplace_back(i, it->second);
        continue;
      }
    }
    auto key = tenant_keys.find(who.tenant_id);
    if (key == tenant_keys.end()) {
      auto active = keys_.ActiveKey(who.tenant_id);
      if (!active.ok()) return active.status();
      key = tenant_keys.emplace(who.tenant_id, *active).first;
    }
    Message& m = prepared.messages[i];
    m.id = core::NewUuid();
    m.conversation_id = in.conversation_id;
    m.role = in.role;
    m.content = in.content;
    m.metadata_json = in.metadata_json;
    m.token_count = in.token_count;
    m.created_at = now;
    prepared.key_ids[i] = key->second.id;
    prepared.sealed[i] = seal::KeyRing::Seal(key->second, m.content,
                                             ContentAd(who.tenant_id, m.conversation_id, m.id));
    prepared.sealed_metadata[i] = SealMetadata(key->second, m.metadata_json,
                                               MetadataAd(who.tenant_id, m.conversation_id, m.id));
    if (batch.size() == 1) break;  // written with plain parameters
    prepared.AddRow(i, who, in.idempotency_key);
  }
  return absl::OkStatus();
}

// A lone message: one statement in autocommit, one round trip (the latency
// a quiet conversation feels). A batch: the statement in a transaction
// whose commit waits for the WAL flush after the turn has passed to the
// next committer, so that batch runs while this one is being flushed.
// Only the statements are inside the try: once the commit has returned,
// the batch is stored and nothing may send it again.
absl::StatusOr<pqxx::result> PgConversationRepository::WriteBatch(
    const std::vector<PendingAppend>& batch, const PreparedBatch& prepared,
    const std::function<void()>& executed) {
  auto lease = pool_.Acquire();
  if (!lease.ok()) return lease.status();
  pqxx::result rows;
  try {
    if (batch.size() == 1) {
      pqxx::nontransaction tx(lease->conn());
      const Message& m = prepared.messages[0];
      const std::string& key = batch[0].message.idempotency_key;
      rows = tx.exec_params(
          "SELECT * FROM conversation.append_message($1, $2, $3::uuid, $4::uuid,"
          " $5::smallint, $6, $7, $8, $9::jsonb, NULLIF($10, ''), $11)",
          batch[0].who.tenant_id, batch[0].who.user_id, m.conversation_id, m.id,
          static_cast<int>(m.role), prepared.key_ids[0], pqxx::binarystring(prepared.sealed[0]),
          m.token_count, prepared.sealed_metadata[0], key, m.created_at);
    } else {
      pqxx::work tx(lease->conn());
      rows = tx.exec_params(
          "SELECT * FROM conversation.append_message_batch($1::text[], $2::text[],"
          " $3::uuid[], $4::uuid[], $5::smallint[], $6::integer[], $7::bytea[],"
          " $8::integer[], $9::jsonb[], $10::text[], $11::bigint[])",
          prepared.tenants.Text(), prepared.users.Text(), prepared.conversations.Text(),
          prepared.ids.Text(), prepared.roles.Text(), prepared.key_id_column.Text(),
          prepared.contents.Text(), prepared.tokens.Text(), prepared.metadata_column.Text(),
          prepared.idempotency_keys.Text(), prepared.created.Text());
      executed();
      tx.commit();
    }
  } catch (const std::exception& e) {
    if (!lease->conn().is_open()) lease->Discard();
    return pg::StatusFromException(e);
  }
  return rows;
}

std::vector<absl::StatusOr<AppendResult>> PgConversationRepository::BatchResults(
    const std::vector<PendingAppend>& batch, PreparedBatch& prepared, const pqxx::result& rows) {
  std::vector<absl::StatusOr<AppendResult>> results(batch.size(),
                                                    absl::InternalError("append not attempted"));
  for (const pqxx::row& row : rows) {
    // A lone message's row says 0; a batch's rows give the 1-based element.
    const size_t i = batch.size() == 1 ? 0 : prepared.sent.at(row[0].as<size_t>() - 1);
    const std::string outcome = row[1].as<std::string>();
    if (outcome == "stored") {
      prepared.messages[i].seq = row[3].as<int64_t>();
      results[i] = AppendResult{std::move(prepared.messages[i]), false};
    } else if (outcome == "duplicate") {
      // Columns 2..9 are the stored message.
      auto m = ReadMessage(batch[i].who.tenant_id, batch[i].message.conversation_id,
                           row.slice(2, row.size()));
      results[i] = m.ok() ? absl::StatusOr<AppendResult>(AppendResult{*std::move(m), true})
                          : absl::StatusOr<AppendResult>(m.status());
    } else {
      results[i] = ConversationNotFound(batch[i].message.conversation_id);
    }
  }
  for (auto [item, leader] : prepared.followers) {
    results[item] = results[leader];
    if (results[item].ok()) results[item]->deduplicated = true;
  }
  return results;
}

void PgConversationRepository::CompleteBatch(std::vector<PendingAppend>& batch,
                                             std::vector<absl::StatusOr<AppendResult>> results) {
  struct Completion {
    std::vector<PendingAppend> batch;
    std::vector<absl::StatusOr<AppendResult>> results;
    void Run() {
      for (size_t i = 0; i < batch.size(); ++i) batch[i].done(std::move(results[i]));
    }
  };
  auto completion = std::make_shared<Completion>(Completion{std::move(batch), std::move(results)});
  // A lone message completes here: another thread hop would only add latency.
  // When the completion thread is backed up, the committer completes itself.
  if (completion->batch.size() > 1 && completions_->Submit([completion] { completion->Run(); })) {
    return;
  }
  completion->Run();
}

void PgConversationRepository::CommitBatch(std::vector<PendingAppend>& batch,
                                           const std::function<void()>& executed) {
  static core::Histogram& batch_sizes = core::MetricsRegistry::Global().GetHistogram(
      "omniforge_conversation_append_batch_size", "Messages written per group commit.", {},
      {1, 2, 4, 8, 16, 32, 64, 128, 256});
  static core::Histogram& commit_seconds = core::MetricsRegistry::Global().GetHistogram(
      "omniforge_conversation_append_commit_seconds",
      "Time to write and commit one group of messages.");
  const auto started = std::chrono::steady_clock::now();
  batch_sizes.Observe(static_cast<double>(batch.size()));

  PreparedBatch prepared(batch.size());
  absl::StatusOr<pqxx::result> rows;
  if (absl::Status status = PrepareBatch(batch, prepared); status.ok()) {
    rows = WriteBatch(batch, prepared, executed);
  } else {
    rows = status;
  }
  commit_seconds.Observe(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());

  if (!rows.ok()) {
    if (batch.size() > 1 && IsItemError(rows.status())) {
      // Halve until the item at fault fails alone and its neighbours land.
      std::vector<PendingAppend> second(std::make_move_iterator(batch.begin() + batch.size() / 2),
                                        std::make_move_iterator(batch.end()));
      batch.resize(batch.size() / 2);
      CommitBatch(batch, executed);
      CommitBatch(second, executed);
      return;
    }
    for (PendingAppend& item : batch) item.done(rows.status());
    return;
  }
  CompleteBatch(batch, BatchResults(batch, prepared, *rows));
}

absl::StatusOr<MessagePage> PgConversationRepository::ListMessages(
    const core::Identity& who, const std::string& conversation_id, int64_t before_seq, int limit) {
  pqxx::result rows;
  {
    auto lease = pool_.Acquire();
    if (!lease.ok()) return lease.status();
    try {
      pqxx::nontransaction tx(lease->conn());
      rows = tx.exec_params("SELECT * FROM conversation.message_page($1, $2, $3::uuid, $4, $5)",
                            who.tenant_id, who.user_id, conversation_id, before_seq, limit + 1);
    } catch (const std::exception& e) {
      if (!lease->conn().is_open()) lease->Discard();
      return pg::StatusFromException(e);
    }
  }  // The connection goes back before decryption, which may need one itself.
  if (rows.empty()) return ConversationNotFound(conversation_id);
  MessagePage page;
  page.kind = static_cast<ConversationKind>(rows[0][8].as<int>());
  if (rows[0][0].is_null()) return page;  // the conversation has no messages
  page.has_more = static_cast<int>(rows.size()) > limit;
  const int n = std::min<int>(rows.size(), limit);
  page.messages.reserve(n);
  for (int i = n - 1; i >= 0; --i) {
    auto m = ReadMessage(who.tenant_id, conversation_id, rows[i]);
    if (!m.ok()) return m.status();
    page.messages.push_back(*std::move(m));
  }
  return page;
}

absl::Status PgConversationRepository::DeleteConversation(const core::Identity& who,
                                                          const std::string& id) {
  return pg::WithTenantTransaction(pool_, who.tenant_id, [&](pqxx::work& tx) {
    pqxx::result deleted = tx.exec_params(
        "DELETE FROM conversation.conversations"
        " WHERE tenant_id = $1 AND id = $2::uuid AND user_id = $3 RETURNING 1",
        who.tenant_id, id, who.user_id);
    return deleted.empty() ? ConversationNotFound(id) : absl::OkStatus();
  });
}

absl::StatusOr<Conversation> PgConversationRepository::SetDialogueStatus(const core::Identity& who,
                                                                         const std::string& id,
                                                                         DialogueStatus status) {
  absl::StatusOr<Conversation> result = ConversationNotFound(id);
  absl::Status stored =
      pg::WithTenantTransaction(pool_, who.tenant_id, [&](pqxx::work& tx) -> absl::Status {
        // The row lock orders concurrent changes: the second one sees the
        // first one's status and is checked against it.
        pqxx::result rows =
            tx.exec_params(std::string("SELECT ") + kConversationColumns +
                               " FROM conversation.conversations"
                               " WHERE tenant_id = $1 AND id = $2::uuid AND user_id = $3"
                               " FOR UPDATE",
                           who.tenant_id, id, who.user_id);
        if (rows.empty()) return ConversationNotFound(id);
        result = ReadConversation(tx, who.tenant_id, rows[0]);
        if (!result.ok()) return result.status();
        if (absl::Status allowed = CheckDialogueStatusChange(id, result->status, status);
            !allowed.ok()) {
          return allowed;
        }
        if (result->status == status) return absl::OkStatus();
        tx.exec_params(
            "UPDATE conversation.conversations SET status = $3"
            " WHERE tenant_id = $1 AND id = $2::uuid",
            who.tenant_id, id, static_cast<int>(status));
        result->status = status;
        return absl::OkStatus();
      });
  if (!stored.ok()) return stored;
  return result;
}

absl::StatusOr<int64_t> PgConversationRepository::PurgeIdle(const RetentionPolicy& policy,
                                                            Micros now, int limit) {
  nlohmann::json overrides = nlohmann::json::object();
  for (const auto& [tenant, days] : policy.tenant_days) overrides[tenant] = days;
  int64_t deleted = 0;
  auto lease = pool_.Acquire();
  if (!lease.ok()) return lease.status();
  try {
    pqxx::work tx(lease->conn());
    deleted = tx.exec_params1("SELECT conversation.purge_idle($1, $2::jsonb, " +
                                  MicrosToTimestamp("$3::bigint") + ", $4)",
                              policy.default_days, overrides.dump(), now, limit)[0]
                  .as<int64_t>();
    tx.commit();
  } catch (const std::exception& e) {
    if (!lease->conn().is_open()) lease->Discard();
    return pg::StatusFromException(e);
  }
  return deleted;
}

}  // namespace omniforge::conversation
