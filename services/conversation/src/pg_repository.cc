#include "services/conversation/src/pg_repository.h"

#include <sodium.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

#include "libs/core/ids.h"
#include "libs/core/logging.h"

namespace omniforge::conversation {
namespace {

constexpr char kConversationColumns[] =
    "id::text, user_id, kind, COALESCE(parent_id::text, ''), key_id, title, metadata::text,"
    " last_seq, (extract(epoch FROM created_at) * 1000000)::bigint,"
    " (extract(epoch FROM updated_at) * 1000000)::bigint";
constexpr char kMessageColumns[] =
    "id::text, seq, role, key_id, content, token_count, metadata::text,"
    " (extract(epoch FROM created_at) * 1000000)::bigint";
constexpr char kMicrosToTimestamp[] = "('epoch'::timestamptz + %s * interval '1 microsecond')";

Micros NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string MicrosToTimestamp(const std::string& placeholder) {
  std::string sql = kMicrosToTimestamp;
  return sql.replace(sql.find("%s"), 2, placeholder);
}

std::string TitleAd(const std::string& tenant, const std::string& conversation_id) {
  return "title|" + tenant + "|" + conversation_id;
}

std::string ContentAd(const std::string& tenant, const std::string& conversation_id,
                      const std::string& message_id) {
  return "message|" + tenant + "|" + conversation_id + "|" + message_id;
}

std::string Base64(const std::string& bytes) {
  std::string out(sodium_base64_ENCODED_LEN(bytes.size(), sodium_base64_VARIANT_ORIGINAL), '\0');
  sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char*>(bytes.data()),
                    bytes.size(), sodium_base64_VARIANT_ORIGINAL);
  out.resize(out.size() - 1);  // the terminating NUL
  return out;
}

absl::Status NotFound(const std::string& id) {
  return absl::NotFoundError("conversation " + id + " not found");
}

}  // namespace

PgConversationRepository::PgConversationRepository(pg::PgPool& pool, KeyRing& keys,
                                                   PgRepositoryOptions options)
    : pool_(pool), keys_(keys) {
  appends_ = std::make_unique<pg::GroupCommitQueue<PendingAppend>>(
      options.append_committers, options.append_max_batch,
      [this](std::vector<PendingAppend>& batch) { CommitBatch(batch); },
      [](PendingAppend& item) { item.done(absl::UnavailableError("service is shutting down")); });
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
  auto title = KeyRing::Open(*key, pqxx::binarystring(row[5]).str(), TitleAd(tenant, c.id));
  if (!title.ok()) return title.status();
  c.title = *std::move(title);
  c.metadata_json = row[6].as<std::string>();
  c.message_count = row[7].as<int64_t>();
  c.created_at = row[8].as<int64_t>();
  c.updated_at = row[9].as<int64_t>();
  return c;
}

absl::StatusOr<Message> PgConversationRepository::ReadMessage(pqxx::work& tx,
                                                              const std::string& tenant,
                                                              const std::string& conversation_id,
                                                              const pqxx::row& row) {
  Message m;
  m.id = row[0].as<std::string>();
  m.conversation_id = conversation_id;
  m.seq = row[1].as<int64_t>();
  m.role = static_cast<Role>(row[2].as<int>());
  auto key = keys_.KeyById(tx, tenant, row[3].as<int>());
  if (!key.ok()) return key.status();
  auto content =
      KeyRing::Open(*key, pqxx::binarystring(row[4]).str(), ContentAd(tenant, conversation_id, m.id));
  if (!content.ok()) return content.status();
  m.content = *std::move(content);
  m.token_count = row[5].as<int32_t>();
  m.metadata_json = row[6].as<std::string>();
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
  c.created_at = c.updated_at = NowMicros();
  const std::string sealed_title = KeyRing::Seal(*key, c.title, TitleAd(c.tenant_id, c.id));
  absl::Status status = pg::WithTenantTransaction(pool_, who.tenant_id, [&](pqxx::work& tx) {
    if (!c.parent_id.empty()) {
      pqxx::result parent = tx.exec_params(
          "SELECT 1 FROM conversation.conversations"
          " WHERE tenant_id = $1 AND id = $2::uuid AND user_id = $3 FOR KEY SHARE",
          who.tenant_id, c.parent_id, who.user_id);
      if (parent.empty()) return NotFound(c.parent_id);
    }
    tx.exec_params(
        "INSERT INTO conversation.conversations (tenant_id, id, user_id, kind, parent_id, key_id,"
        " title, metadata, created_at, updated_at) VALUES ($1, $2::uuid, $3, $4, NULLIF($5, '')::uuid,"
        " $6, $7, $8::jsonb, " + MicrosToTimestamp("$9") + ", " + MicrosToTimestamp("$9") + ")",
        who.tenant_id, c.id, who.user_id, static_cast<int>(c.kind), c.parent_id, key->id,
        pqxx::binarystring(sealed_title), c.metadata_json, c.created_at);
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return c;
}

absl::StatusOr<Conversation> PgConversationRepository::GetConversation(const core::Identity& who,
                                                                       const std::string& id) {
  absl::StatusOr<Conversation> result = NotFound(id);
  absl::Status status = pg::WithTenantTransaction(pool_, who.tenant_id, [&](pqxx::work& tx) {
    pqxx::result rows = tx.exec_params(std::string("SELECT ") + kConversationColumns +
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
  absl::Status status = pg::WithTenantTransaction(pool_, who.tenant_id, [&](pqxx::work& tx) -> absl::Status {
    std::string where = " WHERE tenant_id = $1 AND user_id = $2";
    if (parent_id.empty()) {
      where += " AND parent_id IS NULL AND $3 = ''";
    } else {
      pqxx::result parent = tx.exec_params(
          "SELECT 1 FROM conversation.conversations"
          " WHERE tenant_id = $1 AND id = $2::uuid AND user_id = $3",
          who.tenant_id, parent_id, who.user_id);
      if (parent.empty()) return NotFound(parent_id);
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
                       after ? after->updated_at : 0, after ? after->id : std::string());
    for (const pqxx::row& row : rows) {
      if (static_cast<int>(page.conversations.size()) == page_size) {
        const Conversation& last = page.conversations.back();
        page.next = ConversationCursor{last.updated_at, last.id};
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

void PgConversationRepository::WriteTenantAppends(
    pqxx::work& tx, const std::string& tenant, const DataKey& key,
    std::vector<PendingAppend*>& items,
    std::vector<absl::StatusOr<AppendResult>>& results) {
  pg::SetTenant(tx, tenant);

  // 1. Lock the conversations (in id order, so concurrent batches cannot
  //    deadlock); the lock also orders seq assignment across replicas.
  std::set<std::string> ids;
  for (const PendingAppend* item : items) ids.insert(item->message.conversation_id);
  std::string id_array = "{";
  for (const std::string& id : ids) id_array += (id_array.size() > 1 ? "," : "") + id;
  id_array += "}";
  struct Locked {
    std::string user_id;
    int64_t last_seq;
    int64_t first_new_seq;
  };
  std::unordered_map<std::string, Locked> locked;
  for (const pqxx::row& row : tx.exec_params(
           "SELECT id::text, user_id, last_seq FROM conversation.conversations"
           " WHERE tenant_id = $1 AND id = ANY($2::uuid[]) ORDER BY id FOR UPDATE",
           tenant, id_array)) {
    const int64_t last_seq = row[2].as<int64_t>();
    locked[row[0].as<std::string>()] = Locked{row[1].as<std::string>(), last_seq, last_seq + 1};
  }

  // 2. Idempotency: keys already stored (checked under the lock, so a
  //    concurrent writer of the same key has committed or not started).
  nlohmann::json keys = nlohmann::json::array();
  for (const PendingAppend* item : items) {
    if (!item->message.idempotency_key.empty()) {
      keys.push_back({{"c", item->message.conversation_id}, {"k", item->message.idempotency_key}});
    }
  }
  std::map<std::pair<std::string, std::string>, AppendResult> by_key;
  if (!keys.empty()) {
    for (const pqxx::row& row : tx.exec_params(
             std::string("SELECT m.conversation_id::text, m.idempotency_key, ") + kMessageColumns +
                 " FROM conversation.messages m"
                 " JOIN jsonb_to_recordset($2::jsonb) AS k(c uuid, k text)"
                 " ON m.tenant_id = $1 AND m.conversation_id = k.c AND m.idempotency_key = k.k",
             tenant, keys.dump())) {
      const std::string conversation_id = row[0].as<std::string>();
      auto message = ReadMessage(tx, tenant, conversation_id, row.slice(2, row.size()));
      if (!message.ok()) throw std::runtime_error(std::string(message.status().message()));
      by_key[{conversation_id, row[1].as<std::string>()}] = AppendResult{*std::move(message), true};
    }
  }

  // 3. Assign seqs, seal and write the new messages in one statement.
  nlohmann::json rows = nlohmann::json::array();
  const Micros now = NowMicros();
  for (size_t i = 0; i < items.size(); ++i) {
    const NewMessage& in = items[i]->message;
    auto conversation = locked.find(in.conversation_id);
    if (conversation == locked.end() || conversation->second.user_id != items[i]->who.user_id) {
      results[i] = NotFound(in.conversation_id);
      continue;
    }
    if (!in.idempotency_key.empty()) {
      if (auto seen = by_key.find({in.conversation_id, in.idempotency_key}); seen != by_key.end()) {
        results[i] = seen->second;
        continue;
      }
    }
    Message m;
    m.id = core::NewUuid();
    m.conversation_id = in.conversation_id;
    m.seq = ++conversation->second.last_seq;
    m.role = in.role;
    m.content = in.content;
    m.metadata_json = in.metadata_json;
    m.token_count = in.token_count;
    m.created_at = now;
    rows.push_back({{"c", m.conversation_id},
                    {"s", m.seq},
                    {"i", m.id},
                    {"r", static_cast<int>(m.role)},
                    {"k", key.id},
                    {"b", Base64(KeyRing::Seal(key, m.content, ContentAd(tenant, m.conversation_id, m.id)))},
                    {"t", m.token_count},
                    {"m", nlohmann::json::parse(m.metadata_json)},
                    {"ik", in.idempotency_key.empty() ? nlohmann::json() : nlohmann::json(in.idempotency_key)},
                    {"at", m.created_at}});
    // A retry of this key later in the same batch gets this message back.
    if (!in.idempotency_key.empty()) {
      by_key[{in.conversation_id, in.idempotency_key}] = AppendResult{m, true};
    }
    results[i] = AppendResult{std::move(m), false};
  }
  if (rows.empty()) return;
  const std::string payload = rows.dump();
  tx.exec_params(
      "INSERT INTO conversation.messages (tenant_id, conversation_id, seq, id, role, key_id,"
      " content, token_count, metadata, idempotency_key, created_at)"
      " SELECT $1, x.c, x.s, x.i, x.r, x.k, decode(x.b, 'base64'), x.t, x.m, x.ik, " +
          MicrosToTimestamp("x.at") +
          " FROM jsonb_to_recordset($2::jsonb) AS x(c uuid, s bigint, i uuid, r smallint, k integer,"
          " b text, t integer, m jsonb, ik text, at bigint)",
      tenant, payload);
  tx.exec_params(
      "UPDATE conversation.conversations c SET last_seq = x.s,"
      " updated_at = GREATEST(c.updated_at, " + MicrosToTimestamp("x.at") + ")"
      " FROM (SELECT x.c, max(x.s) AS s, max(x.at) AS at"
      "       FROM jsonb_to_recordset($2::jsonb) AS x(c uuid, s bigint, at bigint) GROUP BY x.c) x"
      " WHERE c.tenant_id = $1 AND c.id = x.c",
      tenant, payload);
}

void PgConversationRepository::CommitBatch(std::vector<PendingAppend>& batch) {
  // Tenants in first-seen order; each tenant's items keep their queue order.
  std::vector<std::string> tenants;
  std::unordered_map<std::string, std::vector<size_t>> by_tenant;
  for (size_t i = 0; i < batch.size(); ++i) {
    auto [it, inserted] = by_tenant.try_emplace(batch[i].who.tenant_id);
    if (inserted) tenants.push_back(batch[i].who.tenant_id);
    it->second.push_back(i);
  }
  std::vector<absl::StatusOr<AppendResult>> results(batch.size(),
                                                    absl::InternalError("append not attempted"));
  // Keys first: fetching one may need a transaction of its own.
  std::unordered_map<std::string, DataKey> tenant_keys;
  absl::Status status = absl::OkStatus();
  for (const std::string& tenant : tenants) {
    auto key = keys_.ActiveKey(tenant);
    if (!key.ok()) {
      status = key.status();
      break;
    }
    tenant_keys[tenant] = *key;
  }
  auto lease = pool_.Acquire();
  if (status.ok()) status = lease.status();
  if (status.ok()) {
    try {
      pqxx::work tx(lease->conn());
      for (const std::string& tenant : tenants) {
        std::vector<PendingAppend*> items;
        std::vector<absl::StatusOr<AppendResult>> tenant_results(by_tenant[tenant].size(),
                                                                 absl::InternalError("unset"));
        for (size_t i : by_tenant[tenant]) items.push_back(&batch[i]);
        WriteTenantAppends(tx, tenant, tenant_keys[tenant], items, tenant_results);
        for (size_t j = 0; j < items.size(); ++j) results[by_tenant[tenant][j]] = std::move(tenant_results[j]);
      }
      tx.commit();
    } catch (const std::exception& e) {
      if (!lease->conn().is_open()) lease->Discard();
      status = pg::StatusFromException(e);
    }
  }
  if (!status.ok()) {
    if (batch.size() > 1 && status.code() != absl::StatusCode::kUnavailable) {
      // One bad item must not fail its neighbours: write each on its own.
      for (PendingAppend& item : batch) {
        std::vector<PendingAppend> single;
        single.push_back(std::move(item));
        CommitBatch(single);
      }
      return;
    }
    for (PendingAppend& item : batch) item.done(status);
    return;
  }
  for (size_t i = 0; i < batch.size(); ++i) batch[i].done(std::move(results[i]));
}

absl::StatusOr<MessagePage> PgConversationRepository::ListMessages(
    const core::Identity& who, const std::string& conversation_id, int64_t before_seq, int limit) {
  MessagePage page;
  absl::Status status = pg::WithTenantTransaction(pool_, who.tenant_id, [&](pqxx::work& tx) -> absl::Status {
    pqxx::result owner = tx.exec_params(
        "SELECT 1 FROM conversation.conversations"
        " WHERE tenant_id = $1 AND id = $2::uuid AND user_id = $3",
        who.tenant_id, conversation_id, who.user_id);
    if (owner.empty()) return NotFound(conversation_id);
    pqxx::result rows = tx.exec_params(
        std::string("SELECT ") + kMessageColumns +
            " FROM conversation.messages"
            " WHERE tenant_id = $1 AND conversation_id = $2::uuid AND ($3 = 0 OR seq < $3)"
            " ORDER BY seq DESC LIMIT $4",
        who.tenant_id, conversation_id, before_seq, limit + 1);
    page.has_more = static_cast<int>(rows.size()) > limit;
    const int n = std::min<int>(rows.size(), limit);
    page.messages.reserve(n);
    for (int i = n - 1; i >= 0; --i) {
      auto m = ReadMessage(tx, who.tenant_id, conversation_id, rows[i]);
      if (!m.ok()) return m.status();
      page.messages.push_back(*std::move(m));
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return page;
}

absl::Status PgConversationRepository::DeleteConversation(const core::Identity& who,
                                                          const std::string& id) {
  return pg::WithTenantTransaction(pool_, who.tenant_id, [&](pqxx::work& tx) {
    pqxx::result deleted = tx.exec_params(
        "DELETE FROM conversation.conversations"
        " WHERE tenant_id = $1 AND id = $2::uuid AND user_id = $3 RETURNING 1",
        who.tenant_id, id, who.user_id);
    return deleted.empty() ? NotFound(id) : absl::OkStatus();
  });
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
