// The PostgreSQL repository against a real database: ordering under
// concurrency, idempotency, tenant isolation (application and row-level
// security), encryption at rest, key rotation and retention.
#include "services/conversation/src/pg_repository.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "libs/core/call_deadline.h"
#include "libs/core/ids.h"
#include "libs/pg/migrate.h"
#include "services/conversation/src/conversation_logic.h"
#include "services/conversation/src/retention.h"
#include "tests/support/test_database.h"

namespace omniforge::pg {
const std::vector<Migration>& ConversationMigrations();
}  // namespace omniforge::pg

namespace omniforge::conversation {
namespace {

const core::Identity kAlice{"acme", "alice"};
const core::Identity kBob{"acme", "bob"};
const core::Identity kEve{"evil-corp", "eve"};

seal::KeyBytes TestMasterKey() {
  return *seal::KeyRing::ParseMasterKey(
      "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
}

Micros Now() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class PgRepositoryTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { db_ = new testing::TestDatabase(); }
  static void TearDownTestSuite() {
    delete db_;
    db_ = nullptr;
  }

  void SetUp() override {
    pg::PgOptions options;
    options.dsn = db_->service_dsn("conversation");
    options.pool_size = 24;
    auto pool = pg::PgPool::Create(options);
    ASSERT_TRUE(pool.ok()) << pool.status();
    pool_ = *std::move(pool);
    keys_ = std::make_unique<seal::KeyRing>(*pool_, kConversationKeys, TestMasterKey(), "test");
    repository_ = std::make_unique<PgConversationRepository>(*pool_, *keys_);
    logic_ = std::make_unique<ConversationLogic>(*repository_, estimator_);
  }

  Conversation NewChat(const core::Identity& who, const std::string& title = "chat") {
    auto c = logic_->Create(who, {title, 0, "", ""});
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *c : Conversation{};
  }

  absl::StatusOr<AppendResult> Append(const core::Identity& who, const AppendMessageInput& input) {
    std::promise<absl::StatusOr<AppendResult>> done;
    logic_->Append(who, input,
                   [&](absl::StatusOr<AppendResult> r) { done.set_value(std::move(r)); });
    return done.get_future().get();
  }

  // A superuser connection: sees raw rows, as a database dump would.
  pqxx::result Raw(const std::string& sql) {
    pqxx::connection conn(db_->dsn());
    pqxx::work tx(conn);
    pqxx::result r = tx.exec(sql);
    tx.commit();
    return r;
  }

  static testing::TestDatabase* db_;
  std::unique_ptr<pg::PgPool> pool_;
  std::unique_ptr<seal::KeyRing> keys_;
  std::unique_ptr<PgConversationRepository> repository_;
  HeuristicTokenEstimator estimator_;
  std::unique_ptr<ConversationLogic> logic_;
};

testing::TestDatabase* PgRepositoryTest::db_ = nullptr;

TEST_F(PgRepositoryTest, CreateGetListDeleteRoundTrip) {
  Conversation c = NewChat(kAlice, "Monday Notion updates");
  auto got = logic_->Get(kAlice, c.id);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->title, "Monday Notion updates");
  EXPECT_EQ(got->tenant_id, "acme");
  EXPECT_EQ(got->user_id, "alice");
  EXPECT_EQ(got->created_at, c.created_at);

  ASSERT_TRUE(logic_->Delete(kAlice, c.id).ok());
  EXPECT_EQ(logic_->Get(kAlice, c.id).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(logic_->Delete(kAlice, c.id).code(), absl::StatusCode::kNotFound);
}

TEST_F(PgRepositoryTest, AppendAndListMessagesWithMetadata) {
  Conversation c = NewChat(kAlice);
  auto first = Append(kAlice, {c.id, 1, "our weekly reports are always late", "", ""});
  auto second = Append(kAlice, {c.id, 2, "I can help with that.",
                                R"({"routing":{"action":"CREATE_AGENT","confidence":0.92}})", ""});
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(first->message.seq, 1);
  EXPECT_EQ(second->message.seq, 2);

  auto page = logic_->ListMessages(kAlice, c.id, 0, 10);
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->messages.size(), 2u);
  EXPECT_EQ(page->messages[0].content, "our weekly reports are always late");
  EXPECT_EQ(page->messages[0].role, Role::kUser);
  EXPECT_EQ(page->messages[1].role, Role::kAssistant);
  EXPECT_EQ(nlohmann::json::parse(page->messages[1].metadata_json)["routing"]["action"],
            "CREATE_AGENT");
  EXPECT_EQ(page->messages[1].id, second->message.id);
  EXPECT_EQ(page->messages[1].created_at, second->message.created_at);
  EXPECT_FALSE(page->has_more);

  auto conversation = logic_->Get(kAlice, c.id);
  ASSERT_TRUE(conversation.ok());
  EXPECT_EQ(conversation->message_count, 2);
  // The user's message started the turn; the reply does not move the
  // conversation's activity time.
  EXPECT_EQ(conversation->updated_at, first->message.created_at);
}

TEST_F(PgRepositoryTest, ListingIsMostRecentlyActiveFirstAcrossPages) {
  const core::Identity carol{"acme", "carol"};
  constexpr int kChats = 5;
  std::vector<std::string> ids;
  ids.reserve(kChats);
  for (int i = 0; i < kChats; ++i) ids.push_back(NewChat(carol, "c" + std::to_string(i)).id);
  auto listed = [&] {
    std::vector<std::string> seen;
    std::string token;
    do {
      auto page = logic_->List(carol, "", 2, token);
      EXPECT_TRUE(page.ok()) << page.status();
      if (!page.ok()) break;
      for (const auto& c : page->conversations) seen.push_back(c.id);
      token = page->next_page_token;
    } while (!token.empty());
    return seen;
  };
  // A user's message in c1 moves it to the top.
  ASSERT_TRUE(Append(carol, {ids[1], 1, "bump", "", ""}).ok());
  EXPECT_EQ(listed(), (std::vector<std::string>{ids[1], ids[4], ids[3], ids[2], ids[0]}));
  // Replies (assistant, tool) do not; a user's message does, also when they
  // arrive together and are written in one batch.
  std::vector<std::thread> writers;
  std::atomic<int> stored{0};
  for (const auto& [id, role] : std::vector<std::pair<std::string, int>>{
           {ids[3], 2}, {ids[2], 4}, {ids[0], 1}, {ids[4], 2}}) {
    // Copies named in the capture: clang before 16 cannot capture structured bindings.
    writers.emplace_back([&, id = id, role = role] {
      if (Append(carol, {id, role, "later", "", ""}).ok()) ++stored;
    });
  }
  for (auto& w : writers) w.join();
  ASSERT_EQ(stored.load(), 4);
  EXPECT_EQ(listed(), (std::vector<std::string>{ids[0], ids[1], ids[4], ids[3], ids[2]}));
}

// The stored activity time moves only when a reader would see it: a user
// talking on in their most recent conversation writes no conversation row,
// and the list's order and the shown time are still exact.
TEST_F(PgRepositoryTest, TalkingOnInTheNewestConversationWritesNoConversationRow) {
  const core::Identity dave{"acme", "dave"};
  Conversation older = NewChat(dave, "older");
  Conversation newer = NewChat(dave, "newer");
  auto stored = [&](const Conversation& c) {
    return Raw("SELECT (extract(epoch FROM updated_at) * 1000000)::bigint"
               " FROM conversation.conversations WHERE id = '" +
               c.id + "'")[0][0]
        .as<int64_t>();
  };
  auto listed = [&] {
    std::vector<std::string> seen;
    auto page = logic_->List(dave, "", 10, "");
    EXPECT_TRUE(page.ok()) << page.status();
    if (page.ok()) {
      for (const auto& c : page->conversations) seen.push_back(c.id);
    }
    return seen;
  };
  // Three turns in the newest conversation: its row is not written...
  absl::StatusOr<AppendResult> last;
  for (int i = 0; i < 3; ++i) {
    last = Append(dave, {newer.id, 1, "turn " + std::to_string(i), "", ""});
    ASSERT_TRUE(last.ok()) << last.status();
    ASSERT_TRUE(Append(dave, {newer.id, 2, "reply", "", ""}).ok());
  }
  EXPECT_EQ(stored(newer), newer.updated_at);
  // ...yet it shows the last turn's time, and stays on top.
  EXPECT_EQ(logic_->Get(dave, newer.id)->updated_at, last->message.created_at);
  EXPECT_EQ(listed(), (std::vector<std::string>{newer.id, older.id}));
  auto page = logic_->List(dave, "", 10, "");
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->conversations[0].updated_at, last->message.created_at);

  // A turn in the other conversation moves it above: its time is stored.
  auto switched = Append(dave, {older.id, 1, "back to this one", "", ""});
  ASSERT_TRUE(switched.ok());
  EXPECT_EQ(stored(older), switched->message.created_at);
  EXPECT_EQ(listed(), (std::vector<std::string>{older.id, newer.id}));
  // And back: the first one is moved above again, past every earlier turn.
  auto again = Append(dave, {newer.id, 1, "and again", "", ""});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(stored(newer), again->message.created_at);
  EXPECT_EQ(listed(), (std::vector<std::string>{newer.id, older.id}));

  // A stored time more than 10 minutes behind moves even on top, so it is
  // never further behind than that.
  Raw("UPDATE conversation.conversations SET updated_at = now() - interval '11 minutes'"
      " WHERE id = '" +
      newer.id + "'");
  auto late = Append(dave, {newer.id, 1, "after a break", "", ""});
  ASSERT_TRUE(late.ok());
  EXPECT_EQ(stored(newer), late->message.created_at);
}

// Instances of the previous release write batches with the JSON function
// while a rolling update replaces them: its seqs continue the same sequence.
TEST_F(PgRepositoryTest, ThePreviousReleasesBatchCallContinuesTheSameSequence) {
  Conversation c = NewChat(kAlice);
  ASSERT_TRUE(Append(kAlice, {c.id, 1, "first", "", ""}).ok());
  auto item = [&](int o, const std::string& user, int role, const nlohmann::json& key) {
    return nlohmann::json{{"o", o},
                          {"tenant", kAlice.tenant_id},
                          {"u", user},
                          {"c", c.id},
                          {"i", core::NewUuid()},
                          {"r", role},
                          {"k", 1},
                          {"b", "AAEC"},
                          {"t", 3},
                          {"m", nlohmann::json::object()},
                          {"ik", key},
                          {"at", 1700000000000000}};
  };
  const std::string items =
      nlohmann::json::array({item(7, kAlice.user_id, 1, nullptr), item(9, "mallory", 1, nullptr),
                             item(8, kAlice.user_id, 2, "retry-1")})
          .dump();
  pqxx::connection conn(db_->dsn());
  pqxx::work tx(conn);
  pqxx::result rows = tx.exec_params(
      "SELECT ord, outcome, seq FROM conversation.append_messages($1::jsonb) ORDER BY ord", items);
  tx.commit();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0][0].as<int>(), 7);
  EXPECT_EQ(rows[0][1].as<std::string>(), "stored");
  EXPECT_EQ(rows[0][2].as<int64_t>(), 2);
  EXPECT_EQ(rows[1][0].as<int>(), 8);
  EXPECT_EQ(rows[1][1].as<std::string>(), "stored");
  EXPECT_EQ(rows[1][2].as<int64_t>(), 3);
  EXPECT_EQ(rows[2][0].as<int>(), 9);  // another user's conversation
  EXPECT_EQ(rows[2][1].as<std::string>(), "not_found");
  auto next = Append(kAlice, {c.id, 1, "after the update", "", ""});
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->message.seq, 4);
}

TEST_F(PgRepositoryTest, IdempotentRetriesReturnTheOriginal) {
  Conversation c = NewChat(kAlice);
  auto first = Append(kAlice, {c.id, 1, "run the report", "", "req-42"});
  auto retry = Append(kAlice, {c.id, 1, "run the report", "", "req-42"});
  ASSERT_TRUE(first.ok() && retry.ok());
  EXPECT_TRUE(retry->deduplicated);
  EXPECT_EQ(retry->message.id, first->message.id);
  EXPECT_EQ(retry->message.content, "run the report");
  // Concurrent retries of one key: exactly one row.
  constexpr int kRetries = 8;
  std::vector<std::thread> threads;
  threads.reserve(kRetries);
  std::atomic<int> fresh{0};
  for (int i = 0; i < kRetries; ++i) {
    threads.emplace_back([&] {
      auto r = Append(kAlice, {c.id, 1, "again", "", "req-43"});
      ASSERT_TRUE(r.ok()) << r.status();
      if (!r->deduplicated) ++fresh;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(fresh.load(), 1);
  auto count =
      Raw("SELECT count(*) FROM conversation.messages WHERE conversation_id = '" + c.id + "'");
  EXPECT_EQ(count[0][0].as<int>(), 2);
}

TEST_F(PgRepositoryTest, SixteenConcurrentClientsGetGaplessUniqueSeqs) {
  Conversation c = NewChat(kAlice);
  constexpr int kClients = 16;
  constexpr int kPerClient = 40;
  std::vector<std::thread> threads;
  threads.reserve(kClients);
  std::mutex mu;
  std::vector<int64_t> seqs;
  for (int t = 0; t < kClients; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerClient; ++i) {
        auto r = Append(
            kAlice, {c.id, 1, "client " + std::to_string(t) + " msg " + std::to_string(i), "", ""});
        ASSERT_TRUE(r.ok()) << r.status();
        std::lock_guard lock(mu);
        seqs.push_back(r->message.seq);
      }
    });
  }
  for (auto& t : threads) t.join();
  std::sort(seqs.begin(), seqs.end());
  ASSERT_EQ(seqs.size(), static_cast<size_t>(kClients * kPerClient));
  for (size_t i = 0; i < seqs.size(); ++i) ASSERT_EQ(seqs[i], static_cast<int64_t>(i + 1));

  // Every acknowledged message is in the table, each client's in its order.
  auto page = logic_->ListMessages(kAlice, c.id, 0, 500);
  ASSERT_TRUE(page.ok());
  std::vector<Message> all = page->messages;
  auto older = logic_->ListMessages(kAlice, c.id, all.front().seq, 500);
  ASSERT_TRUE(older.ok());
  all.insert(all.begin(), older->messages.begin(), older->messages.end());
  ASSERT_EQ(all.size(), static_cast<size_t>(kClients * kPerClient));
  std::map<std::string, int> next_index;
  for (const Message& m : all) {
    const std::string client = m.content.substr(0, m.content.find(" msg "));
    const int index = std::stoi(m.content.substr(m.content.find(" msg ") + 5));
    EXPECT_EQ(index, next_index[client]++) << m.content;
  }
  EXPECT_EQ(logic_->Get(kAlice, c.id)->message_count, kClients * kPerClient);
}

TEST_F(PgRepositoryTest, AnotherTenantOrUserGetsNotFoundAndChangesNothing) {
  Conversation c = NewChat(kAlice);
  ASSERT_TRUE(Append(kAlice, {c.id, 1, "private plans", "", ""}).ok());
  for (const core::Identity& other : {kBob, kEve}) {
    EXPECT_EQ(logic_->Get(other, c.id).status().code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(Append(other, {c.id, 1, "injected", "", ""}).status().code(),
              absl::StatusCode::kNotFound);
    EXPECT_EQ(logic_->ListMessages(other, c.id, 0, 10).status().code(),
              absl::StatusCode::kNotFound);
    EXPECT_EQ(logic_->Delete(other, c.id).code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(logic_->Create(other, {"x", 2, c.id, ""}).status().code(),
              absl::StatusCode::kNotFound);
    auto listing = logic_->List(other, "", 100, "");
    ASSERT_TRUE(listing.ok());
    for (const auto& seen : listing->conversations) EXPECT_NE(seen.id, c.id);
  }
  auto messages = logic_->ListMessages(kAlice, c.id, 0, 10);
  ASSERT_TRUE(messages.ok());
  ASSERT_EQ(messages->messages.size(), 1u);
  EXPECT_EQ(messages->messages[0].content, "private plans");
}

TEST_F(PgRepositoryTest, RowLevelSecurityHidesOtherTenantsEvenWithoutAFilter) {
  Conversation mine = NewChat(kAlice);
  Conversation theirs = NewChat(kEve);
  ASSERT_TRUE(Append(kEve, {theirs.id, 1, "eve's secret", "", ""}).ok());
  auto lease = pool_->Acquire();
  ASSERT_TRUE(lease.ok());
  pqxx::work tx(lease->conn());
  pg::SetTenant(tx, "acme");
  // No tenant predicate: only row-level security stands in the way.
  pqxx::result visible = tx.exec("SELECT tenant_id FROM conversation.conversations");
  for (const auto& row : visible) EXPECT_EQ(row[0].as<std::string>(), "acme");
  EXPECT_TRUE(tx.exec("SELECT 1 FROM conversation.messages WHERE tenant_id = 'evil-corp'").empty());
  EXPECT_EQ(
      tx.exec("UPDATE conversation.conversations SET last_seq = 99 WHERE id = '" + theirs.id + "'")
          .affected_rows(),
      0u);
  EXPECT_THROW(
      tx.exec("INSERT INTO conversation.conversations (tenant_id, id, user_id, kind, key_id,"
              " title, created_at, updated_at) VALUES ('evil-corp', gen_random_uuid(),"
              " 'x', 1, 1, ''::bytea, now(), now())"),
      pqxx::sql_error);
  (void)mine;
}

TEST_F(PgRepositoryTest, ContentTitlesAndMetadataAreEncryptedAtRest) {
  const std::string title = "Quarterly layoffs planning";
  const std::string content = "The layoff list is in the shared drive under HR-2026";
  // A reply's routing notes quote the user's words.
  const std::string metadata = R"({"goal":"plan the Quarterly layoffs","route":"model"})";
  Conversation c = NewChat(kAlice, title);
  ASSERT_TRUE(Append(kAlice, {c.id, 1, content, "", ""}).ok());
  ASSERT_TRUE(Append(kAlice, {c.id, 2, "Noted.", metadata, ""}).ok());
  // Everything the database holds for this tenant, as text, like a dump.
  pqxx::result rows =
      Raw("SELECT encode(title, 'escape') || metadata::text FROM conversation.conversations"
          " UNION ALL SELECT encode(content, 'escape') || metadata::text FROM conversation.messages"
          " UNION ALL SELECT encode(wrapped_key, 'escape') FROM conversation.tenant_keys");
  ASSERT_FALSE(rows.empty());
  for (const auto& row : rows) {
    const std::string raw = row[0].c_str();
    EXPECT_EQ(raw.find("layoff"), std::string::npos);
    EXPECT_EQ(raw.find("Quarterly"), std::string::npos);
    EXPECT_EQ(raw.find("goal"), std::string::npos);
  }
  EXPECT_EQ(logic_->Get(kAlice, c.id)->title, title);
  auto page = logic_->ListMessages(kAlice, c.id, 0, 10);
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->messages.size(), 2u);
  EXPECT_EQ(page->messages[1].metadata_json, metadata);
  EXPECT_EQ(page->messages[0].metadata_json, "{}");
}

TEST_F(PgRepositoryTest, MetadataMovedToAnotherMessageIsDetected) {
  Conversation c = NewChat(kAlice);
  ASSERT_TRUE(Append(kAlice, {c.id, 2, "one", R"({"goal":"first"})", ""}).ok());
  ASSERT_TRUE(Append(kAlice, {c.id, 2, "two", R"({"goal":"second"})", ""}).ok());
  Raw("UPDATE conversation.messages m SET metadata = o.metadata FROM conversation.messages o"
      " WHERE m.conversation_id = '" +
      c.id +
      "' AND o.conversation_id = m.conversation_id"
      " AND m.seq = 2 AND o.seq = 1");
  EXPECT_EQ(logic_->ListMessages(kAlice, c.id, 0, 10).status().code(), absl::StatusCode::kDataLoss);
}

TEST_F(PgRepositoryTest, TamperedOrMovedCiphertextIsDetected) {
  Conversation c = NewChat(kAlice);
  ASSERT_TRUE(Append(kAlice, {c.id, 1, "first", "", ""}).ok());
  ASSERT_TRUE(Append(kAlice, {c.id, 1, "second", "", ""}).ok());
  // Copy message 1's ciphertext over message 2: the associated data differs.
  Raw("UPDATE conversation.messages m SET content = o.content FROM conversation.messages o"
      " WHERE m.conversation_id = '" +
      c.id +
      "' AND o.conversation_id = m.conversation_id"
      " AND m.seq = 2 AND o.seq = 1");
  EXPECT_EQ(logic_->ListMessages(kAlice, c.id, 0, 10).status().code(), absl::StatusCode::kDataLoss);
}

TEST_F(PgRepositoryTest, KeyRotationKeepsOldMessagesReadable) {
  const core::Identity rotating{"rotating-tenant", "u1"};
  Conversation c = NewChat(rotating);
  ASSERT_TRUE(Append(rotating, {c.id, 1, "sealed with key 1", "", ""}).ok());
  auto rotated = keys_->Rotate(rotating.tenant_id);
  ASSERT_TRUE(rotated.ok()) << rotated.status();
  EXPECT_EQ(*rotated, 2);
  ASSERT_TRUE(Append(rotating, {c.id, 1, "sealed with key 2", "", ""}).ok());
  auto key_ids = Raw("SELECT key_id FROM conversation.messages WHERE conversation_id = '" + c.id +
                     "' ORDER BY seq");
  ASSERT_EQ(key_ids.size(), 2u);
  EXPECT_EQ(key_ids[0][0].as<int>(), 1);
  EXPECT_EQ(key_ids[1][0].as<int>(), 2);

  // A fresh process (empty key cache) reads both.
  seal::KeyRing fresh_keys(*pool_, kConversationKeys, TestMasterKey(), "test");
  PgConversationRepository fresh(*pool_, fresh_keys);
  auto page = fresh.ListMessages(rotating, c.id, 0, 10);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(page->messages[0].content, "sealed with key 1");
  EXPECT_EQ(page->messages[1].content, "sealed with key 2");

  // The wrong master key cannot read anything.
  seal::KeyBytes wrong = TestMasterKey();
  wrong[0] ^= 1;
  seal::KeyRing wrong_keys(*pool_, kConversationKeys, wrong, "test");
  PgConversationRepository wrong_repo(*pool_, wrong_keys);
  EXPECT_EQ(wrong_repo.ListMessages(rotating, c.id, 0, 10).status().code(),
            absl::StatusCode::kDataLoss);
}

TEST(MasterKeyRotationTest, RewrapsEveryTenantsKeys) {
  // A database of its own: a re-wrap covers every tenant's keys.
  testing::TestDatabase db;
  pg::PgOptions options;
  options.dsn = db.service_dsn("conversation");
  auto app_pool = pg::PgPool::Create(options);
  ASSERT_TRUE(app_pool.ok()) << app_pool.status();
  pg::PgPool& pool = **app_pool;
  auto Raw = [&](const std::string& sql) {
    pqxx::connection conn(db.dsn());
    pqxx::nontransaction tx(conn);
    return tx.exec(sql);
  };
  // Two tenants whose data keys are wrapped by the old master key "m1".
  seal::KeyBytes old_master = TestMasterKey();
  old_master[31] ^= 0x5a;
  seal::KeyBytes new_master = TestMasterKey();
  new_master[30] ^= 0xa5;
  const core::Identity t1{"rewrap-one", "u"};
  const core::Identity t2{"rewrap-two", "u"};
  std::map<std::string, std::string> conversation_of;
  {
    seal::KeyRing old_keys(pool, kConversationKeys, old_master, "m1");
    PgConversationRepository old_repo(pool, old_keys);
    for (const core::Identity& who : {t1, t2}) {
      auto c =
          old_repo.CreateConversation(who, {"secret plans", ConversationKind::kChat, "", "{}"});
      ASSERT_TRUE(c.ok()) << c.status();
      ASSERT_TRUE(
          AppendMessageAndWait(old_repo, who, {c->id, Role::kUser, "under m1", "{}", 3, ""}).ok());
      conversation_of[who.tenant_id] = c->id;
    }
  }
  auto read = [&](seal::KeyRing& keys, const core::Identity& who) {
    PgConversationRepository repo(pool, keys);
    return repo.ListMessages(who, conversation_of[who.tenant_id], 0, 10);
  };

  // Step 1: the new master key is current and the old one still accepted.
  seal::KeyRing both(pool, kConversationKeys, new_master, "m2", std::chrono::seconds(60),
                     {{"m1", old_master}});
  auto before = read(both, t1);
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_EQ(before->messages[0].content, "under m1");

  // A run without the old key refuses and changes nothing.
  pg::PgOptions owner;
  owner.dsn = db.owner_dsn();
  owner.role.clear();
  auto owner_pool = pg::PgPool::Create(owner);
  ASSERT_TRUE(owner_pool.ok()) << owner_pool.status();
  EXPECT_EQ(seal::KeyRing::RewrapTenantKeys(**owner_pool, kConversationKeys, new_master, "m2", {})
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Raw("SELECT count(*) FROM conversation.tenant_keys WHERE master_key_id = 'm2'")[0][0]
                .as<int>(),
            0);

  // A service's role sees no tenant's keys: it is refused, not told 0.
  EXPECT_EQ(seal::KeyRing::RewrapTenantKeys(pool, kConversationKeys, new_master, "m2",
                                            {{"m1", old_master}})
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);

  // Step 2: re-wrap, in batches smaller than the number of keys.
  auto rewrapped = seal::KeyRing::RewrapTenantKeys(**owner_pool, kConversationKeys, new_master,
                                                   "m2", {{"m1", old_master}}, 1);
  ASSERT_TRUE(rewrapped.ok()) << rewrapped.status();
  EXPECT_EQ(*rewrapped, 2);
  EXPECT_EQ(Raw("SELECT count(*) FROM conversation.tenant_keys WHERE master_key_id = 'm1'")[0][0]
                .as<int>(),
            0);
  auto again = seal::KeyRing::RewrapTenantKeys(**owner_pool, kConversationKeys, new_master, "m2",
                                               {{"m1", old_master}});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, 0);

  // Step 3: the old master key is retired; everything reads with the new one
  // alone, and the old one alone can no longer read anything.
  seal::KeyRing only_new(pool, kConversationKeys, new_master, "m2");
  for (const core::Identity& who : {t1, t2}) {
    auto page = read(only_new, who);
    ASSERT_TRUE(page.ok()) << page.status();
    EXPECT_EQ(page->messages[0].content, "under m1");
  }
  seal::KeyRing only_old(pool, kConversationKeys, old_master, "m1");
  EXPECT_EQ(read(only_old, t2).status().code(), absl::StatusCode::kDataLoss);
}

TEST_F(PgRepositoryTest, RetentionPurgesIdleConversationsPerTenant) {
  const core::Identity short_lived{"retention-short", "u"};
  const core::Identity long_lived{"retention-long", "u"};
  Conversation idle = NewChat(short_lived);
  Conversation dialogue = *logic_->Create(short_lived, {"d", 2, idle.id, ""});
  Conversation kept = NewChat(long_lived);
  ASSERT_TRUE(Append(short_lived, {idle.id, 1, "old", "", ""}).ok());
  RetentionPolicy policy;
  policy.default_days = 30;
  policy.tenant_days["retention-long"] = 90;
  const Micros day = 86400LL * 1000000;
  // Nothing is idle yet.
  auto none = repository_->PurgeIdle(policy, Now(), 1000);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(*none, 0);
  // The stored activity time may be up to 10 minutes behind the newest turn
  // (the turn above did not move it): 5 minutes past 30 days is not idle.
  auto margin = repository_->PurgeIdle(policy, Now() + 30 * day + 5LL * 60 * 1000000, 1000);
  ASSERT_TRUE(margin.ok()) << margin.status();
  EXPECT_EQ(*margin, 0);
  EXPECT_TRUE(logic_->Get(short_lived, idle.id).ok());
  // 31 days later: the 30-day tenant's conversation goes, with its dialogue
  // and messages; the 90-day tenant's stays.
  auto purged = repository_->PurgeIdle(policy, Now() + 31 * day, 1000);
  ASSERT_TRUE(purged.ok());
  EXPECT_GE(*purged, 1);
  EXPECT_EQ(logic_->Get(short_lived, idle.id).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(logic_->Get(short_lived, dialogue.id).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(logic_->Get(long_lived, kept.id).ok());
  EXPECT_EQ(Raw("SELECT count(*) FROM conversation.messages WHERE conversation_id = '" + idle.id +
                "'")[0][0]
                .as<int>(),
            0);
}

// The purge as the service runs it: a background thread that deletes
// batch after batch while they come back full, then sleeps, and stops at
// once when asked even in the middle of its sleep.
TEST_F(PgRepositoryTest, TheBackgroundPurgeDeletesEveryIdleConversationBatchByBatch) {
  const core::Identity who{"retention-background", "u"};
  std::vector<std::string> idle;
  for (int i = 0; i < 5; ++i) {
    idle.push_back(NewChat(who).id);
    ASSERT_TRUE(Append(who, {idle.back(), 1, "old news", "", ""}).ok());
  }
  const std::string fresh = NewChat(who).id;
  std::string ids;
  for (const std::string& id : idle) ids += (ids.empty() ? "'" : ",'") + id + "'";
  Raw("UPDATE conversation.conversations SET updated_at = now() - interval '40 days'"
      " WHERE tenant_id = 'retention-background' AND id IN (" +
      ids + ")");

  RetentionPolicy policy;
  policy.default_days = 30;
  std::atomic<int> batches{0};
  std::vector<int64_t> deleted;  // per batch, in order; written by the purger's thread
  std::mutex mu;
  auto purger = std::make_unique<RetentionPurger>(
      [&](int limit) {
        auto n = repository_->PurgeIdle(policy, Now(), limit);
        if (n.ok()) {
          std::lock_guard lock(mu);
          deleted.push_back(*n);
        }
        ++batches;
        return n;
      },
      std::chrono::seconds(3600), /*batch_size=*/2);
  // The first pass starts at once: 2 + 2 + 1 (the short batch ends it).
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (batches.load() < 3 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // no fourth batch follows
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(deleted, (std::vector<int64_t>{2, 2, 1}));
  }
  for (const std::string& id : idle) {
    EXPECT_EQ(logic_->Get(who, id).status().code(), absl::StatusCode::kNotFound) << id;
  }
  EXPECT_TRUE(logic_->Get(who, fresh).ok());
  EXPECT_EQ(Raw("SELECT count(*) FROM conversation.messages WHERE tenant_id = "
                "'retention-background'")[0][0]
                .as<int>(),
            0);
  // Asleep for an hour, it still stops at once.
  const auto stop_started = std::chrono::steady_clock::now();
  purger.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - stop_started, std::chrono::seconds(2));
  EXPECT_EQ(batches.load(), 3);
}

TEST_F(PgRepositoryTest, ContextWindowOnStoredConversation) {
  Conversation c = NewChat(kAlice);
  for (int i = 0; i < 30; ++i) {
    ASSERT_TRUE(Append(kAlice, {c.id, 1, "question number " + std::to_string(i), "", ""}).ok());
    ASSERT_TRUE(Append(kAlice, {c.id, 2, std::string(400, 'a'), R"({"route":"x"})", ""}).ok());
  }
  auto window = logic_->GetContextWindow(kAlice, c.id, 0, 0);
  ASSERT_TRUE(window.ok()) << window.status();
  EXPECT_TRUE(window->truncated);
  EXPECT_LE(window->total_tokens, 2000);
  EXPECT_EQ(window->messages.back().seq, 60);
  EXPECT_EQ(window->messages.back().metadata_json, R"({"route":"x"})");
}

TEST_F(PgRepositoryTest, BatchWithAMissingConversationFailsOnlyThatItem) {
  Conversation c = NewChat(kAlice);
  constexpr int kWriters = 32;
  std::vector<std::thread> threads;
  threads.reserve(kWriters);
  std::atomic<int> ok{0}, not_found{0};
  for (int i = 0; i < kWriters; ++i) {
    threads.emplace_back([&, i] {
      const std::string target = i % 4 == 0 ? "0190a7e4-0000-7000-8000-00000000dead" : c.id;
      auto r = Append(kAlice, {target, 1, "x", "", ""});
      if (r.ok()) ++ok;
      if (r.status().code() == absl::StatusCode::kNotFound) ++not_found;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 24);
  EXPECT_EQ(not_found.load(), 8);
}

TEST_F(PgRepositoryTest, StatementsStopAtTheCallDeadline) {
  // A statement that would run for 5 s is cancelled by the database once the
  // caller's 200 ms are up, well before the pool's 10 s statement_timeout.
  const auto start = std::chrono::steady_clock::now();
  absl::Status status;
  {
    core::ScopedCallDeadline deadline(std::chrono::system_clock::now() +
                                      std::chrono::milliseconds(200));
    status = pg::WithTenantTransaction(*pool_, "acme", [](pqxx::work& tx) {
      tx.exec("SELECT pg_sleep(5)");
      return absl::OkStatus();
    });
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_LT(elapsed, std::chrono::seconds(3));

  // The cap was local to that transaction: the next one on the same
  // connections runs with the configured timeout again.
  absl::Status after = pg::WithTenantTransaction(*pool_, "acme", [](pqxx::work& tx) {
    EXPECT_EQ(tx.exec1("SHOW statement_timeout")[0].as<std::string>(), "10s");
    return absl::OkStatus();
  });
  EXPECT_TRUE(after.ok()) << after;
}

TEST_F(PgRepositoryTest, NoDatabaseWorkOnceTheCallDeadlinePassed) {
  core::ScopedCallDeadline deadline(std::chrono::system_clock::now() -
                                    std::chrono::milliseconds(1));
  bool ran = false;
  absl::Status status = pg::WithTenantTransaction(*pool_, "acme", [&](pqxx::work&) {
    ran = true;
    return absl::OkStatus();
  });
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_FALSE(ran);
  // Reads through the repository obey it too.
  EXPECT_EQ(
      repository_->GetConversation(kAlice, "0190a0b2-0000-7000-8000-000000000000").status().code(),
      absl::StatusCode::kDeadlineExceeded);
}

TEST_F(PgRepositoryTest, IdsAreCaseInsensitive) {
  Conversation c = NewChat(kAlice);
  std::string upper = c.id;
  for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  ASSERT_TRUE(Append(kAlice, {upper, 1, "written with an upper-case id", "", "k1"}).ok());
  auto retry = Append(kAlice, {c.id, 1, "written with an upper-case id", "", "k1"});
  ASSERT_TRUE(retry.ok()) << retry.status();
  EXPECT_TRUE(retry->deduplicated);
  auto page = logic_->ListMessages(kAlice, c.id, 0, 10);
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->messages.size(), 1u);
  EXPECT_EQ(page->messages[0].content, "written with an upper-case id");
  EXPECT_TRUE(logic_->Get(kAlice, upper).ok());
}

TEST_F(PgRepositoryTest, OneConnectionIsEnoughWithAColdKeyCache) {
  Conversation c = NewChat(kAlice);
  ASSERT_TRUE(Append(kAlice, {c.id, 1, "hello", "", ""}).ok());
  pg::PgOptions options;
  options.dsn = db_->service_dsn("conversation");
  options.pool_size = 1;
  options.acquire_timeout = std::chrono::milliseconds(2000);
  auto pool = pg::PgPool::Create(options);
  ASSERT_TRUE(pool.ok());
  seal::KeyRing cold_keys(**pool, kConversationKeys, TestMasterKey(), "test");
  PgConversationRepository repository(**pool, cold_keys);
  auto page = repository.ListMessages(kAlice, c.id, 0, 10);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(page->messages[0].content, "hello");
  auto appended = AppendMessageAndWait(repository, kAlice, NewMessage{c.id, Role::kUser, "again"});
  ASSERT_TRUE(appended.ok()) << appended.status();
  EXPECT_EQ(appended->message.seq, 2);
}

TEST_F(PgRepositoryTest, ServingIsRefusedWhenRowLevelSecurityWouldNotApply) {
  EXPECT_TRUE(pg::CheckRowLevelSecurityApplies(*pool_, "conversation").ok());
  pg::PgOptions owner;
  owner.dsn = db_->dsn();
  owner.role = "";  // the login role: a superuser that owns the tables
  auto pool = pg::PgPool::Create(owner);
  ASSERT_TRUE(pool.ok());
  absl::Status refused = pg::CheckRowLevelSecurityApplies(**pool, "conversation");
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("row-level security"), std::string::npos);
  // Nor a privileged login that only SETs ROLE to the service's role: it
  // could SET ROLE back.
  pg::PgOptions switching;
  switching.dsn = db_->dsn();
  switching.role = "omniforge_conversation";
  auto switched = pg::PgPool::Create(switching);
  ASSERT_TRUE(switched.ok()) << switched.status();
  refused = pg::CheckRowLevelSecurityApplies(**switched, "conversation");
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  // It names the login, not the role switched to.
  EXPECT_EQ(refused.message().find("omniforge_conversation"), std::string::npos) << refused;
  // Nor the schema's owner (not a superuser: FORCE binds it, but it may
  // change the policies).
  pg::PgOptions schema_owner;
  schema_owner.dsn = db_->owner_dsn();
  auto owned = pg::PgPool::Create(schema_owner);
  ASSERT_TRUE(owned.ok()) << owned.status();
  EXPECT_EQ(pg::CheckRowLevelSecurityApplies(**owned, "conversation").code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(PgRepositoryTest, AgentDialogueWindowsAreBoundedByPlannerExchanges) {
  Conversation parent = NewChat(kAlice);
  Conversation dialogue = *logic_->Create(kAlice, {"step", 2, parent.id, ""});
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(Append(kAlice, {dialogue.id, 5, "do part " + std::to_string(i), "", ""}).ok());
    ASSERT_TRUE(Append(kAlice, {dialogue.id, 6, std::string(200, 'r'), "", ""}).ok());
  }
  auto window = logic_->GetContextWindow(kAlice, dialogue.id, 100, 3);
  ASSERT_TRUE(window.ok()) << window.status();
  ASSERT_EQ(window->messages.size(), 6u);  // three planner-opened exchanges
  EXPECT_EQ(window->messages.front().role, Role::kPlanner);
  EXPECT_TRUE(window->truncated);
}

TEST_F(PgRepositoryTest, DialogueStatusEndsOnceForItsOwnerOnly) {
  Conversation chat = NewChat(kAlice);
  auto dialogue = logic_->Create(kAlice, {"step 1", 2, chat.id, ""});
  ASSERT_TRUE(dialogue.ok()) << dialogue.status();
  EXPECT_EQ(dialogue->status, DialogueStatus::kActive);
  EXPECT_EQ(logic_->Get(kAlice, chat.id)->status, DialogueStatus::kNone);
  EXPECT_EQ(logic_->SetDialogueStatus(kAlice, chat.id, 2).status().code(),
            absl::StatusCode::kFailedPrecondition);
  for (const core::Identity& other : {kBob, kEve}) {
    EXPECT_EQ(logic_->SetDialogueStatus(other, dialogue->id, 4).status().code(),
              absl::StatusCode::kNotFound);
  }
  EXPECT_EQ(logic_->SetDialogueStatus(kAlice, core::NewUuid(), 4).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(logic_->Get(kAlice, dialogue->id)->status, DialogueStatus::kActive);

  // Two enders at once: exactly one status wins, the other is refused.
  std::vector<std::future<absl::StatusOr<Conversation>>> enders;
  for (int status : {3, 4}) {
    enders.push_back(std::async(std::launch::async, [&, status] {
      return logic_->SetDialogueStatus(kAlice, dialogue->id, status);
    }));
  }
  std::vector<absl::StatusCode> codes;
  DialogueStatus winner = DialogueStatus::kNone;
  for (auto& ender : enders) {
    auto result = ender.get();
    codes.push_back(result.status().code());
    if (result.ok()) winner = result->status;
  }
  std::sort(codes.begin(), codes.end());
  EXPECT_EQ(codes, (std::vector<absl::StatusCode>{absl::StatusCode::kOk,
                                                  absl::StatusCode::kFailedPrecondition}));
  EXPECT_EQ(logic_->Get(kAlice, dialogue->id)->status, winner);
  auto retried = logic_->SetDialogueStatus(kAlice, dialogue->id, static_cast<int>(winner));
  ASSERT_TRUE(retried.ok()) << retried.status();
  EXPECT_EQ(retried->title, "step 1");

  auto listing = logic_->List(kAlice, chat.id, 10, "");
  ASSERT_TRUE(listing.ok()) << listing.status();
  ASSERT_EQ(listing->conversations.size(), 1u);
  EXPECT_EQ(listing->conversations[0].status, winner);
}

// 0002 gives dialogues stored before it the status their last message
// recorded; a chat gets none.
TEST(DialogueStatusMigrationTest, EarlierDialoguesTakeTheStatusTheirLastMessageRecorded) {
  testing::TestDatabase db;
  pqxx::connection conn(db.dsn());
  {
    pqxx::work tx(conn);
    // Back to the 0001 shape, with rows as the executor stored them then.
    tx.exec(
        "ALTER TABLE conversation.conversations DROP CONSTRAINT dialogue_status_matches_kind;"
        "ALTER TABLE conversation.conversations DROP COLUMN status;");
    const std::string chat = core::NewUuid();
    tx.exec_params(
        "INSERT INTO conversation.conversations (tenant_id, id, user_id, kind, parent_id, key_id,"
        " title, created_at, updated_at) VALUES ('acme', $1::uuid, 'alice', 1, NULL, 1, '', now(),"
        " now())",
        chat);
    int n = 0;
    for (const char* last : {"completed", "failed", "", "none"}) {
      const std::string id = "00000000-0000-0000-0000-00000000000" + std::to_string(++n);
      tx.exec_params(
          "INSERT INTO conversation.conversations (tenant_id, id, user_id, kind, parent_id,"
          " key_id, title, last_seq, created_at, updated_at) VALUES ('acme', $1::uuid, 'alice',"
          " 2, $2::uuid, 1, '', 1, now(), now())",
          id, chat);
      if (std::string(last) == "none") continue;  // no message yet
      tx.exec_params(
          "INSERT INTO conversation.messages (tenant_id, conversation_id, seq, id, role, key_id,"
          " content, token_count, metadata, created_at) VALUES ('acme', $1::uuid, 1,"
          " gen_random_uuid(), 6, 1, '', 0, $2::jsonb, now())",
          id,
          nlohmann::json(std::string(last).empty() ? nlohmann::json::object()
                                                   : nlohmann::json{{"status", last}})
              .dump());
    }
    const auto& migrations = pg::ConversationMigrations();
    ASSERT_GE(migrations.size(), 2u);
    ASSERT_EQ(migrations[1].name, "0002_dialogue_status.sql");
    tx.exec(migrations[1].sql);
    tx.commit();
  }
  pqxx::work tx(conn);
  pqxx::result rows =
      tx.exec("SELECT kind, COALESCE(status, 0) FROM conversation.conversations ORDER BY kind, id");
  std::vector<std::pair<int, int>> seen;
  for (const auto& row : rows) seen.emplace_back(row[0].as<int>(), row[1].as<int>());
  EXPECT_EQ(seen, (std::vector<std::pair<int, int>>{{1, 0}, {2, 2}, {2, 3}, {2, 1}, {2, 1}}));
}

}  // namespace
}  // namespace omniforge::conversation
