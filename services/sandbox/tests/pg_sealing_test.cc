// What users and models wrote in the sandbox is sealed at rest: a unique
// canary written through the tools (contacts, events, mail) and the seed
// (busy time) reads back for its tenant, and appears nowhere in the
// database in plain text: not in the sealed columns, not in any row of the
// schema, not in the database's files or its write-ahead log. Another
// tenant's key and another master key open nothing; searches still find
// sealed text; rows of an earlier version (plain text) still read and are
// sealed at start.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <pqxx/pqxx>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "libs/core/ids.h"
#include "libs/pg/migrate.h"
#include "libs/seal/sealed_text.h"
#include "libs/seal/test_keys.h"
#include "services/sandbox/src/pg_store.h"
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

// The sealed columns, as `table: columns` (jsonb columns as text).
const std::vector<std::pair<std::string, std::vector<std::string>>>& SealedColumns() {
  static const auto* columns = new std::vector<std::pair<std::string, std::vector<std::string>>>{
      {"contacts", {"name", "email", "phone", "organization"}},
      {"busy_blocks", {"email"}},
      {"events", {"title", "attendees #>> '{}'"}},
      {"messages", {"sender", "recipients #>> '{}'", "subject", "body"}},
  };
  return *columns;
}

class PgSealingTest : public ::testing::Test {
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
    keys_ = new seal::KeyRing(*pool_, kSandboxKeys, seal::TestMasterKey(), "test");
  }
  static void TearDownTestSuite() {
    delete keys_;
    delete pool_;
    delete db_;
  }

  void SetUp() override {
    absl::LoadTimeZone("Europe/Paris", &zone_);
    canary_ = "Quillwort" + core::NewUuid().substr(24);
    tenant_ = "t-" + core::NewUuid().substr(0, 8);
    other_ = "o-" + core::NewUuid().substr(0, 8);
  }

  // A superuser's statement: sees every tenant's raw rows, as a dump would.
  template <typename... Args>
  pqxx::result Raw(const std::string& sql, Args&&... args) {
    pqxx::connection conn(db_->dsn());
    pqxx::work tx(conn);
    pqxx::result rows = tx.exec_params(sql, std::forward<Args>(args)...);
    tx.commit();
    return rows;
  }

  // Every row of every table of schema sandbox, as text.
  std::string AllRows() {
    std::string all;
    for (const auto& table :
         Raw("SELECT table_name FROM information_schema.tables WHERE table_schema = 'sandbox'")) {
      for (const auto& row :
           Raw("SELECT t::text FROM sandbox." + table[0].as<std::string>() + " AS t")) {
        all += row[0].as<std::string>() + "\n";
      }
    }
    return all;
  }

  // The bytes of this database's files and of the write-ahead log, after a
  // checkpoint has written every page out.
  std::string DatabaseFiles() {
    Raw("CHECKPOINT");
    const auto where =
        Raw("SELECT current_setting('data_directory'), oid::text FROM pg_database"
            " WHERE datname = current_database()");
    const std::filesystem::path data = where[0][0].as<std::string>();
    std::string bytes;
    for (const auto& dir : {data / "base" / where[0][1].as<std::string>(), data / "pg_wal"}) {
      for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
        if (!entry.is_regular_file()) continue;
        std::ifstream in(entry.path(), std::ios::binary);
        EXPECT_TRUE(in.good()) << "cannot read " << entry.path();
        bytes.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      }
    }
    return bytes;
  }

  // Each sealed column of `tenant`'s rows is empty or in the sealed form;
  // returns how many values were checked.
  int ExpectAllSealed(const std::string& tenant) {
    int checked = 0;
    for (const auto& [table, columns] : SealedColumns()) {
      for (const std::string& column : columns) {
        for (const auto& row :
             Raw(absl::StrCat("SELECT ", column, " FROM sandbox.", table, " WHERE tenant_id = $1"),
                 tenant)) {
          const std::string value = row[0].is_null() ? "" : row[0].as<std::string>();
          EXPECT_TRUE(value.empty() || seal::IsSealedText(value))
              << table << "." << column << ": " << value;
          ++checked;
        }
      }
    }
    return checked;
  }

  std::string CanaryEmail() const { return absl::AsciiStrToLower(canary_) + "@example.com"; }

  static omniforge::testing::TestDatabase* db_;
  static pg::PgPool* pool_;
  static seal::KeyRing* keys_;
  absl::TimeZone zone_;
  std::string canary_;
  std::string tenant_;
  std::string other_;
  PgSandboxStore store_{*pool_, *keys_};
};

omniforge::testing::TestDatabase* PgSealingTest::db_ = nullptr;
pg::PgPool* PgSealingTest::pool_ = nullptr;
seal::KeyRing* PgSealingTest::keys_ = nullptr;

TEST_F(PgSealingTest, TheCanaryReadsBackButNeverReachesTheDatabaseInPlainText) {
  // The seed first, with the canary in a contact's busy time.
  SeedData seed = MakeSeed(Parse("2026-11-24T10:00:00+01:00"), zone_);
  seed.busy.push_back(
      {CanaryEmail(), {Parse("2026-11-25T09:00:00+01:00"), Parse("2026-11-25T10:00:00+01:00")}});
  ASSERT_TRUE(*store_.SeedOnce(tenant_, seed));
  omniforge::sandbox::testing::FixedClock clock(Parse("2026-11-24T10:00:00+01:00"));
  SandboxTools tools(store_, clock, zone_, tenant_, *ParseDomains("all"));
  const auto call = [&](const std::string& tool, const Json& args) {
    auto result = tools.Call(tool, args);
    EXPECT_TRUE(result.ok()) << result.status();
    EXPECT_FALSE(result->is_error) << tool << ": " << result->structured.dump();
    return result->structured;
  };
  call("add_contact", {{"name", "Ada " + canary_},
                       {"email", CanaryEmail()},
                       {"phone", "+33 1 23 45 67 89"},
                       {"organization", canary_ + " Ltd"}});
  call("create_event", {{"title", "Review with " + canary_},
                        {"start", "2026-11-25T11:00:00+01:00"},
                        {"end", "2026-11-25T11:30:00+01:00"},
                        {"attendees", {CanaryEmail()}}});
  call("draft_message",
       {{"to", {CanaryEmail()}}, {"subject", "Draft " + canary_}, {"body", "Hello " + canary_}});
  call("send_message", {{"to", {CanaryEmail()}},
                        {"subject", "Plan for " + canary_},
                        {"body", "Dear " + canary_ + ", the plan."}});

  // Read back, searched by the canary.
  const Json found = call("find_contacts", {{"query", canary_}});
  ASSERT_EQ(found["matches"].size(), 1u) << found.dump();
  EXPECT_EQ(found["matches"][0]["organization"], canary_ + " Ltd");
  const Json mail = call("search_messages", {{"query", absl::AsciiStrToUpper(canary_)}});
  ASSERT_EQ(mail["messages"].size(), 1u) << mail.dump();
  EXPECT_EQ(mail["messages"][0]["body"], "Dear " + canary_ + ", the plan.");
  const Json events = call("list_events", {{"start", "2026-11-25T00:00:00+01:00"},
                                           {"end", "2026-11-26T00:00:00+01:00"}});
  EXPECT_NE(events.dump().find("Review with " + canary_), std::string::npos) << events.dump();
  const Json slots = call("find_free_slots", {{"attendees", {CanaryEmail()}},
                                              {"duration_minutes", 30},
                                              {"window_start", "2026-11-25T09:00:00+01:00"},
                                              {"window_end", "2026-11-25T12:00:00+01:00"}});
  EXPECT_NE(slots["busy"].dump().find(CanaryEmail()), std::string::npos) << slots.dump();
  EXPECT_EQ(slots["slots"][0]["start"], "2026-11-25T10:00:00+01:00") << slots.dump();

  // At rest: every sealed column sealed, the canary in no row, no file.
  EXPECT_GT(ExpectAllSealed(tenant_), 40);
  const std::string lower = absl::AsciiStrToLower(canary_);
  const std::string rows = AllRows();
  EXPECT_NE(rows.find(tenant_), std::string::npos) << "the dump holds the tenant's rows";
  EXPECT_EQ(rows.find(canary_), std::string::npos);
  EXPECT_EQ(rows.find(lower), std::string::npos);
  EXPECT_EQ(rows.find("Contract draft v2"), std::string::npos) << "the seed is sealed too";
  const std::string files = DatabaseFiles();
  EXPECT_NE(files.find(tenant_), std::string::npos) << "the files hold the tenant's rows";
  EXPECT_EQ(files.find(canary_), std::string::npos);
  EXPECT_EQ(files.find(lower), std::string::npos);
}

TEST_F(PgSealingTest, AnotherTenantsKeyOrAnotherMasterKeyOpensNothing) {
  const Message sent{"m-1",
                     Folder::kSent,
                     kSandboxUserEmail,
                     {CanaryEmail()},
                     "To " + canary_,
                     "Body " + canary_,
                     Parse("2026-11-24T10:00:00+01:00"),
                     Parse("2026-11-24T10:00:00+01:00")};
  ASSERT_TRUE(store_.AddMessage(tenant_, sent).ok());
  ASSERT_TRUE(store_
                  .AddMessage(other_, {"m-own",
                                       Folder::kSent,
                                       kSandboxUserEmail,
                                       {"a@b.example"},
                                       "own",
                                       "own",
                                       sent.created_at,
                                       sent.sent_at})
                  .ok());
  EXPECT_EQ(store_.GetMessage(tenant_, "m-1")->body, "Body " + canary_);

  // The row copied to the other tenant (its own key 1): nothing opens.
  Raw("INSERT INTO sandbox.messages SELECT $2, id, folder, sender, recipients, subject, body,"
      " created_at, sent_at FROM sandbox.messages WHERE tenant_id = $1 AND id = 'm-1'",
      tenant_, other_);
  const auto stolen = store_.GetMessage(other_, "m-1");
  EXPECT_EQ(stolen.status().code(), absl::StatusCode::kDataLoss) << stolen.status();
  const auto searched = store_.SearchMessages(other_, canary_, 10);
  EXPECT_EQ(searched.status().code(), absl::StatusCode::kDataLoss) << searched.status();
  EXPECT_EQ(searched.status().message().find(canary_), std::string::npos);

  // Another master key (under the same id) cannot unwrap the tenant's key.
  seal::KeyRing intruder_keys(*pool_, kSandboxKeys, seal::TestMasterKeys("test", '7').current,
                              "test");
  PgSandboxStore intruder(*pool_, intruder_keys);
  const auto opened = intruder.GetMessage(tenant_, "m-1");
  EXPECT_EQ(opened.status().code(), absl::StatusCode::kDataLoss) << opened.status();

  // The right tenant still reads it.
  EXPECT_EQ(store_.SearchMessages(tenant_, "to " + absl::AsciiStrToLower(canary_), 10)->size(), 1u);
}

TEST_F(PgSealingTest, SearchesAndChecksMatchSealedFields) {
  const core::TimePoint t0 = Parse("2026-11-24T10:00:00+01:00");
  for (int i = 0; i < 5; ++i) {
    const core::TimePoint at = t0 + std::chrono::minutes(i);
    ASSERT_TRUE(store_
                    .AddMessage(tenant_, {"m-" + std::to_string(i),
                                          i == 4 ? Folder::kDraft : Folder::kInbox,
                                          "sender" + std::to_string(i) + "@example.com",
                                          {kSandboxUserEmail},
                                          "Report " + std::to_string(i),
                                          i % 2 == 0 ? "mentions " + canary_ : "nothing",
                                          at,
                                          at})
                    .ok());
  }
  // Newest first, drafts left out, case ignored, the limit kept.
  const auto found = store_.SearchMessages(tenant_, absl::AsciiStrToLower(canary_), 10);
  ASSERT_EQ(found->size(), 2u);
  EXPECT_EQ((*found)[0].id, "m-2");
  EXPECT_EQ((*found)[1].id, "m-0");
  EXPECT_EQ(store_.SearchMessages(tenant_, "report", 2)->size(), 2u);
  EXPECT_EQ((*store_.SearchMessages(tenant_, "SENDER3@", 10))[0].id, "m-3");

  // Busy time by email, once opened.
  ASSERT_TRUE(store_.SeedOnce(tenant_, MakeSeed(t0, zone_)).ok());
  const Interval tomorrow{Parse("2026-11-25T00:00:00+01:00"), Parse("2026-11-26T00:00:00+01:00")};
  const auto busy = store_.ListBusy(tenant_, {"priya.patel@example.org"}, tomorrow);
  ASSERT_EQ(busy->size(), 1u);
  EXPECT_EQ((*busy)[0].email, "priya.patel@example.org");

  // One contact per email, also when two adds race.
  std::atomic<int> added{0};
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      const absl::Status status = store_.AddContact(
          tenant_, {"c-" + std::to_string(i), "Ada " + canary_, CanaryEmail(), "", ""});
      if (status.ok()) ++added;
      if (status.code() == absl::StatusCode::kAlreadyExists) ++refused;
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(added.load(), 1);
  EXPECT_EQ(refused.load(), 3);
}

TEST_F(PgSealingTest, RowsOfAnEarlierVersionStillReadAndAreSealed) {
  // As a version before sealing wrote them: plain text.
  Raw("INSERT INTO sandbox.tenants (tenant_id) VALUES ($1)", tenant_);
  Raw("INSERT INTO sandbox.contacts VALUES ($1, 'c-1', $2, $3, '+1 555 0100', 'Old Org')", tenant_,
      "Ada " + canary_, CanaryEmail());
  Raw("INSERT INTO sandbox.busy_blocks VALUES ($1, $2, '2026-11-25T09:00:00Z',"
      " '2026-11-25T10:00:00Z')",
      tenant_, CanaryEmail());
  Raw("INSERT INTO sandbox.events VALUES ($1, 'e-1', $2, '2026-11-25T11:00:00Z',"
      " '2026-11-25T12:00:00Z', jsonb_build_array($3::text))",
      tenant_, "Old " + canary_, CanaryEmail());
  Raw("INSERT INTO sandbox.messages VALUES ($1, 'm-1', 2, $2, jsonb_build_array($3::text), $4,"
      " 'old body', '2026-11-24T09:00:00Z', '2026-11-24T09:00:00Z')",
      tenant_, CanaryEmail(), kSandboxUserEmail, "Old " + canary_);
  const Interval day{Parse("2026-11-25T00:00:00Z"), Parse("2026-11-26T00:00:00Z")};
  const auto read_all = [&] {
    EXPECT_EQ((*store_.ListContacts(tenant_))[0].name, "Ada " + canary_);
    EXPECT_EQ(store_.ListBusy(tenant_, {CanaryEmail()}, day)->size(), 1u);
    const auto events = store_.ListEvents(tenant_, day);
    ASSERT_EQ(events->size(), 1u);
    EXPECT_EQ((*events)[0].attendees, std::vector<std::string>{CanaryEmail()});
    const auto found = store_.SearchMessages(tenant_, canary_, 10);
    ASSERT_EQ(found->size(), 1u);
    EXPECT_EQ((*found)[0].to, std::vector<std::string>{kSandboxUserEmail});
  };
  read_all();
  EXPECT_NE(AllRows().find(canary_), std::string::npos);

  EXPECT_EQ(*store_.SealPlainRows(tenant_), 4);
  EXPECT_EQ(*store_.SealPlainRows(tenant_), 0);
  read_all();
  EXPECT_GT(ExpectAllSealed(tenant_), 10);
  EXPECT_EQ(AllRows().find(canary_), std::string::npos);
  EXPECT_EQ(AllRows().find(absl::AsciiStrToLower(canary_)), std::string::npos);

  // A tenant never seeded (the executor's tool-listing session) gets no key.
  EXPECT_EQ(*store_.SealPlainRows(other_), 0);
  EXPECT_EQ(
      Raw("SELECT count(*) FROM sandbox.tenant_keys WHERE tenant_id = $1", other_)[0][0].as<int>(),
      0);
}

}  // namespace
}  // namespace omniforge::sandbox
