// The PostgreSQL store against a real database, logged in as the sandbox's
// own role: the seed stored once, tenant isolation (by the store's filters
// and by row-level security underneath), bookings that cannot both take the
// same time, and the mailbox; then the tools end to end on it.
#include "services/sandbox/src/pg_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <pqxx/pqxx>
#include <thread>

#include "libs/pg/migrate.h"
#include "services/sandbox/src/sandbox_time.h"
#include "services/sandbox/src/sandbox_tools.h"
#include "services/sandbox/src/seed.h"
#include "services/sandbox/tests/fixed_clock.h"
#include "tests/support/test_database.h"

namespace omniforge::pg {
const std::vector<Migration>& SandboxMigrations();
}  // namespace omniforge::pg

namespace omniforge::sandbox {
namespace {

using Json = nlohmann::json;

core::TimePoint Parse(const std::string& text) { return *ParseRfc3339("t", text); }

class PgStoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    db_ = new omniforge::testing::TestDatabase();
    auto applied = pg::ApplyMigrations(db_->owner_dsn(), "sandbox", pg::SandboxMigrations());
    ASSERT_TRUE(applied.ok()) << applied.status();
    pg::PgOptions options;
    options.dsn = db_->service_dsn("sandbox");
    options.pool_size = 4;
    auto pool = pg::PgPool::Create(options);
    ASSERT_TRUE(pool.ok()) << pool.status();
    pool_ = pool->release();
  }
  static void TearDownTestSuite() {
    delete pool_;
    delete db_;
  }

  void SetUp() override {
    absl::LoadTimeZone("Europe/Paris", &zone_);
    tenant_a_ = "a-" + std::to_string(++counter_);
    tenant_b_ = "b-" + std::to_string(counter_);
  }

  SeedData Seed() const { return MakeSeed(Parse("2026-11-28T10:00:00+01:00"), zone_); }

  static omniforge::testing::TestDatabase* db_;
  static pg::PgPool* pool_;
  static int counter_;
  absl::TimeZone zone_;
  std::string tenant_a_;
  std::string tenant_b_;
  PgSandboxStore store_{*pool_};
};

omniforge::testing::TestDatabase* PgStoreTest::db_ = nullptr;
pg::PgPool* PgStoreTest::pool_ = nullptr;
int PgStoreTest::counter_ = 0;

const Interval kTomorrow{Parse("2026-11-29T00:00:00+01:00"), Parse("2026-11-30T00:00:00+01:00")};

TEST_F(PgStoreTest, TheSafetyChecksOfTheServicesPass) {
  EXPECT_TRUE(pg::CheckRowLevelSecurityApplies(*pool_, "sandbox").ok());
}

TEST_F(PgStoreTest, TheSeedIsStoredOnceAndReadBackWhole) {
  EXPECT_TRUE(*store_.SeedOnce(tenant_a_, Seed()));
  EXPECT_FALSE(*store_.SeedOnce(tenant_a_, Seed()));
  const auto contacts = store_.ListContacts(tenant_a_);
  ASSERT_TRUE(contacts.ok()) << contacts.status();
  ASSERT_EQ(contacts->size(), 5u);
  EXPECT_EQ((*contacts)[0].name, "John Doe");
  EXPECT_EQ((*contacts)[0].organization, "Contoso");
  const auto events = store_.ListEvents(tenant_a_, kTomorrow);
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[1].title, "Design review");
  EXPECT_EQ((*events)[1].when.start, Parse("2026-11-29T14:00:00+01:00"));
  EXPECT_EQ((*events)[0].attendees,
            (std::vector<std::string>{"sarah.chen@example.com", "priya.patel@example.org"}));
  const auto busy = store_.ListBusy(tenant_a_, {"sarah.chen@example.com"}, kTomorrow);
  ASSERT_EQ(busy->size(), 1u);
  EXPECT_EQ((*busy)[0].when.end, Parse("2026-11-29T15:30:00+01:00"));
  EXPECT_EQ(store_.ListFolder(tenant_a_, Folder::kInbox, 10)->size(), 2u);
}

TEST_F(PgStoreTest, ATenantNeverSeesAnotherTenantsState) {
  ASSERT_TRUE(store_.SeedOnce(tenant_a_, Seed()).ok());
  const Event mine{"e-1",
                   "Board meeting",
                   {Parse("2026-11-29T17:00:00+01:00"), Parse("2026-11-29T18:00:00+01:00")},
                   {}};
  ASSERT_TRUE(store_.BookEvent(tenant_a_, mine)->booked);
  ASSERT_TRUE(store_
                  .AddMessage(tenant_a_, {"m-1",
                                          Folder::kDraft,
                                          kSandboxUserEmail,
                                          {"x@y.example"},
                                          "secret plan",
                                          "body",
                                          Parse("2026-11-28T10:00:00+01:00"),
                                          {}})
                  .ok());

  EXPECT_TRUE(store_.ListEvents(tenant_b_, kTomorrow)->empty());
  EXPECT_TRUE(store_.ListContacts(tenant_b_)->empty());
  EXPECT_TRUE(store_.SearchMessages(tenant_b_, "secret", 10)->empty());
  EXPECT_TRUE(store_.ListFolder(tenant_b_, Folder::kDraft, 10)->empty());
  EXPECT_EQ(store_.DeleteEvent(tenant_b_, "e-1").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_.SendDraft(tenant_b_, "m-1", Parse("2026-11-28T11:00:00+01:00")).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store_.GetMessage(tenant_b_, "m-1").status().code(), absl::StatusCode::kNotFound);
  // B's booking of the same time is not A's conflict.
  EXPECT_TRUE(store_.BookEvent(tenant_b_, mine)->booked);
  EXPECT_EQ(store_.ListEvents(tenant_a_, kTomorrow)->size(), 3u);

  // Underneath, row-level security: the sandbox's role sees no row of a
  // tenant it did not name, whatever the query asks for.
  pqxx::connection conn(db_->service_dsn("sandbox"));
  pqxx::work tx(conn);
  tx.exec_params("SELECT set_config('app.tenant_id', $1, true)", tenant_b_);
  EXPECT_EQ(
      tx.exec_params("SELECT count(*) FROM sandbox.events WHERE tenant_id = $1", tenant_a_)[0][0]
          .as<int>(),
      0);
  EXPECT_EQ(tx.exec("SELECT count(*) FROM sandbox.messages WHERE subject = 'secret plan'")[0][0]
                .as<int>(),
            0);
}

TEST_F(PgStoreTest, TwoBookingsOfTheSameTimeCannotBothSucceed) {
  ASSERT_TRUE(store_.SeedOnce(tenant_a_, Seed()).ok());
  std::atomic<int> booked{0};
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      const Event event{"race-" + std::to_string(i),
                        "Race",
                        {Parse("2026-11-30T11:00:00+01:00"), Parse("2026-11-30T11:30:00+01:00")},
                        {}};
      auto outcome = store_.BookEvent(tenant_a_, event);
      ASSERT_TRUE(outcome.ok()) << outcome.status();
      if (outcome->booked) ++booked;
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(booked.load(), 1);

  const Event clash{"clash",
                    "Clash",
                    {Parse("2026-11-29T13:30:00+01:00"), Parse("2026-11-29T14:30:00+01:00")},
                    {"john.smith@example.com"}};
  const auto outcome = store_.BookEvent(tenant_a_, clash);
  EXPECT_FALSE(outcome->booked);
  ASSERT_EQ(outcome->conflicting_events.size(), 1u);
  EXPECT_EQ(outcome->conflicting_events[0].id, "event-design-review");
  ASSERT_EQ(outcome->conflicting_busy.size(), 1u);
  EXPECT_EQ(outcome->conflicting_busy[0].email, "john.smith@example.com");
}

TEST_F(PgStoreTest, TheMailboxKeepsDraftsSentMailAndSearchesIt) {
  ASSERT_TRUE(store_.SeedOnce(tenant_a_, Seed()).ok());
  const Message draft{"d-1",
                      Folder::kDraft,
                      kSandboxUserEmail,
                      {"sarah.chen@example.com"},
                      "Budget",
                      "Numbers for Q1",
                      Parse("2026-11-28T10:00:00+01:00"),
                      {}};
  ASSERT_TRUE(store_.AddMessage(tenant_a_, draft).ok());
  EXPECT_EQ(store_.ListFolder(tenant_a_, Folder::kDraft, 10)->size(), 1u);
  EXPECT_TRUE(store_.SearchMessages(tenant_a_, "budget", 10)->empty());  // drafts are not mail
  const auto sent = store_.SendDraft(tenant_a_, "d-1", Parse("2026-11-28T10:05:00+01:00"));
  ASSERT_TRUE(sent.ok()) << sent.status();
  EXPECT_EQ(sent->folder, Folder::kSent);
  EXPECT_EQ(sent->sent_at, Parse("2026-11-28T10:05:00+01:00"));
  EXPECT_EQ(sent->to, draft.to);
  EXPECT_EQ(store_.SendDraft(tenant_a_, "d-1", Parse("2026-11-28T10:06:00+01:00")).status().code(),
            absl::StatusCode::kFailedPrecondition);
  const auto found = store_.SearchMessages(tenant_a_, "NUMBERS", 10);
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].id, "d-1");
  const auto sarah = store_.SearchMessages(tenant_a_, "sarah.chen", 10);
  ASSERT_EQ(sarah->size(), 2u);  // the new mail to her, then her seeded agenda
  EXPECT_EQ((*sarah)[0].id, "d-1");
}

TEST_F(PgStoreTest, TheToolsWorkEndToEndOnPostgres) {
  omniforge::sandbox::testing::FixedClock clock(Parse("2026-11-24T10:00:00+01:00"));
  SandboxTools tools(store_, clock, zone_, tenant_a_, *ParseDomains("all"));
  const auto conflict = tools.Call("create_event", {{"title", "Call"},
                                                    {"start", "2026-11-25T14:00:00+01:00"},
                                                    {"end", "2026-11-25T14:30:00+01:00"},
                                                    {"attendees", {"sarah.chen@example.com"}}});
  ASSERT_TRUE(conflict.ok());
  ASSERT_TRUE(conflict->is_error);
  EXPECT_EQ(conflict->structured["error"]["code"], "conflict");
  EXPECT_EQ(conflict->structured["error"]["alternatives"].size(), 3u);
  const auto johns = tools.Call("find_contacts", {{"query", "john"}});
  EXPECT_EQ(johns->structured["matches"].size(), 2u);
}

}  // namespace
}  // namespace omniforge::sandbox
