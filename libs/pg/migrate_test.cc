// Schema migrations against a real PostgreSQL: each applied once and
// recorded, an edited one refused, a failing one rolled back, concurrent
// migrators (replicas starting together) applying each exactly once.
#include "libs/pg/migrate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/test_database.h"

namespace omniforge::pg {
namespace {

int64_t Count(const std::string& dsn, const std::string& sql) {
  pqxx::connection conn(dsn);
  pqxx::nontransaction tx(conn);
  return tx.exec(sql)[0][0].as<int64_t>();
}

bool TableExists(const std::string& dsn, const std::string& name) {
  return Count(dsn, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename = '" +
                        name + "'") == 1;
}

std::vector<Migration> FirstTwo() {
  return {{2, "0002_notes.sql", "CREATE TABLE mt_notes (id int PRIMARY KEY, body text)"},
          {1, "0001_items.sql", "CREATE TABLE mt_items (id int PRIMARY KEY)"}};
}

TEST(MigrateTest, EachMigrationIsAppliedOnceInVersionOrderAndRecorded) {
  testing::TestDatabase db;
  absl::StatusOr<int> first = ApplyMigrations(db.dsn(), "mt", FirstTwo());
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(*first, 2);
  EXPECT_TRUE(TableExists(db.dsn(), "mt_items"));
  EXPECT_TRUE(TableExists(db.dsn(), "mt_notes"));
  EXPECT_EQ(Count(db.dsn(),
                  "SELECT count(*) FROM public.omniforge_schema_migrations WHERE component = 'mt'"
                  " AND ((version = 1 AND name = '0001_items.sql')"
                  " OR (version = 2 AND name = '0002_notes.sql'))"),
            2);

  // Again (a restart): nothing to do; the tables would not be created twice.
  absl::StatusOr<int> again = ApplyMigrations(db.dsn(), "mt", FirstTwo());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, 0);

  // A new release adds one: only it runs.
  std::vector<Migration> three = FirstTwo();
  three.push_back({3, "0003_items_name.sql", "ALTER TABLE mt_items ADD COLUMN name text"});
  absl::StatusOr<int> added = ApplyMigrations(db.dsn(), "mt", three);
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_EQ(*added, 1);

  // Another component keeps its own versions.
  absl::StatusOr<int> other = ApplyMigrations(
      db.dsn(), "mt_other", {{1, "0001_other.sql", "CREATE TABLE mt_other (id int)"}});
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(*other, 1);
}

TEST(MigrateTest, AnAppliedMigrationThatWasEditedIsRefused) {
  testing::TestDatabase db;
  ASSERT_TRUE(ApplyMigrations(db.dsn(), "mt", FirstTwo()).ok());
  std::vector<Migration> edited = FirstTwo();
  edited[1].sql = "CREATE TABLE mt_items (id bigint PRIMARY KEY)";
  edited.push_back({3, "0003_more.sql", "CREATE TABLE mt_more (id int)"});
  absl::StatusOr<int> refused = ApplyMigrations(db.dsn(), "mt", edited);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("0001_items.sql"), std::string::npos)
      << refused.status();
  EXPECT_FALSE(TableExists(db.dsn(), "mt_more"));  // nothing after it ran
}

TEST(MigrateTest, AFailingMigrationIsRolledBackAndNotRecorded) {
  testing::TestDatabase db;
  std::vector<Migration> broken = FirstTwo();
  broken.push_back(
      {3, "0003_broken.sql", "CREATE TABLE mt_half (id int); INSERT INTO mt_missing VALUES (1)"});
  absl::StatusOr<int> failed = ApplyMigrations(db.dsn(), "mt", broken);
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kInternal);
  // The two before it stand; nothing of the third does.
  EXPECT_TRUE(TableExists(db.dsn(), "mt_notes"));
  EXPECT_FALSE(TableExists(db.dsn(), "mt_half"));
  EXPECT_EQ(Count(db.dsn(),
                  "SELECT count(*) FROM public.omniforge_schema_migrations"
                  " WHERE component = 'mt' AND version = 3"),
            0);
  // Fixed, it applies.
  broken[2].sql = "CREATE TABLE mt_half (id int)";
  absl::StatusOr<int> fixed = ApplyMigrations(db.dsn(), "mt", broken);
  ASSERT_TRUE(fixed.ok()) << fixed.status();
  EXPECT_EQ(*fixed, 1);
}

TEST(MigrateTest, ReplicasStartingTogetherApplyEachMigrationOnce) {
  testing::TestDatabase db;
  std::atomic<int> applied{0};
  std::atomic<int> failed{0};
  constexpr int kReplicas = 6;
  std::vector<std::thread> replicas;
  replicas.reserve(kReplicas);
  for (int i = 0; i < kReplicas; ++i) {
    replicas.emplace_back([&] {
      absl::StatusOr<int> n = ApplyMigrations(db.dsn(), "mt", FirstTwo());
      if (n.ok()) {
        applied += *n;
      } else {
        ++failed;
      }
    });
  }
  for (auto& t : replicas) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(applied.load(), 2);
  EXPECT_EQ(Count(db.dsn(),
                  "SELECT count(*) FROM public.omniforge_schema_migrations WHERE component = 'mt'"),
            2);
}

TEST(MigrateTest, AnUnreachableDatabaseIsUnavailable) {
  absl::StatusOr<int> n = ApplyMigrations(
      "host=127.0.0.1 port=1 user=nobody dbname=none connect_timeout=2", "mt", FirstTwo());
  EXPECT_EQ(n.status().code(), absl::StatusCode::kUnavailable) << n.status();
}

}  // namespace
}  // namespace omniforge::pg
