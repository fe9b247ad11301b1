// Model-call usage in PostgreSQL (row-level security on): the calls of a
// turn (its ModelUsage) are stored as one row of
// orchestration.llm_turn_usage, and orchestration.llm_usage still answers
// one row per call, to its tenant only, and still takes the previous
// release's inserts.
#include "services/orchestrator/storage/usage_recorder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "libs/core/ids.h"
#include "libs/core/metrics.h"
#include "libs/pg/migrate.h"
#include "libs/pg/pool.h"
#include "services/orchestrator/storage/pg_spend_ledger.h"
#include "services/orchestrator/storage/tenant_row_writer.h"
#include "services/orchestrator/usage/usage_attribution.h"
#include "tests/support/migrated_database.h"

namespace omniforge::pg {
const std::vector<Migration>& OrchestratorMigrations();
}

namespace omniforge::orchestrator {
namespace {

using nlohmann::json;

constexpr char kTenant[] = "tenant-a";
constexpr char kOtherTenant[] = "tenant-b";

// The statement an orchestrator of the release before llm_turn_usage runs
// (one row per call straight into orchestration.llm_usage).
constexpr char kPreviousReleaseInsert[] =
    "INSERT INTO orchestration.llm_usage (tenant_id, id, user_id, conversation_id, "
    "turn_id, context_type, operation_type, profile, provider, model, prompt_tokens, "
    "completion_tokens, cached_tokens, cost_usd, latency_ms, ttft_ms, attempts, "
    "fallback_used, outcome, error_kind) "
    "SELECT $1, x.id, x.user_id, x.conversation_id, x.turn_id, x.context_type, "
    "x.operation_type, x.profile, x.provider, x.model, x.prompt_tokens, "
    "x.completion_tokens, x.cached_tokens, x.cost_usd, x.latency_ms, x.ttft_ms, "
    "x.attempts, x.fallback_used, x.outcome, x.error_kind "
    "FROM jsonb_to_recordset($2::jsonb) AS x(id uuid, user_id text, "
    "conversation_id uuid, turn_id text, context_type text, operation_type text, "
    "profile text, provider text, model text, prompt_tokens bigint, "
    "completion_tokens bigint, cached_tokens bigint, cost_usd double precision, "
    "latency_ms double precision, ttft_ms double precision, attempts integer, "
    "fallback_used boolean, outcome text, error_kind text)";

llm::UsageRecord Answered(const std::string& operation, const std::string& profile,
                          int64_t prompt_tokens, int64_t completion_tokens, double cost_usd) {
  llm::UsageRecord r;
  r.operation_type = operation;
  r.profile = profile;
  r.provider = "fake";
  r.model = "fake-model";
  r.tokens.prompt_tokens = prompt_tokens;
  r.tokens.completion_tokens = completion_tokens;
  r.tokens.cached_tokens = 3;
  r.cost_usd = cost_usd;
  r.latency_us = 12500;
  r.time_to_first_token_us = 4000;
  r.streamed = true;
  r.attempts = 1;
  r.ok = true;
  return r;
}

llm::UsageRecord TimedOut(const std::string& operation, const std::string& profile) {
  llm::UsageRecord r;
  r.operation_type = operation;
  r.profile = profile;
  r.provider = "fake";
  r.model = "fake-fallback";
  r.latency_us = 30000000;
  r.attempts = 3;
  r.fallback_used = true;
  r.ok = false;
  r.error_kind = llm::LlmErrorKind::kTimeout;
  return r;
}

double Dropped(const char* reason) {
  return core::MetricsRegistry::Global()
      .GetCounter("omniforge_orchestrator_llm_usage_dropped_total",
                  "Model-call usage records not stored", {{"reason", reason}})
      .Value();
}

// One migrated database and pool (as the application role) for the program.
testing::SharedDatabase* const kDatabase =
    testing::SharedDatabase::Register("orchestrator", &pg::OrchestratorMigrations);

class UsageRecorderTest : public ::testing::Test {
 protected:
  UsageAttribution Turn() const {
    return {kTenant, "user-1", core::NewUuid(), "turn-" + core::NewUuid(), "CONTEXT_TYPE_SALES"};
  }

  // `sql` ($1 = `key`) as the cluster's superuser, who sees every tenant.
  static pqxx::result Query(const std::string& sql, const std::string& key) {
    pqxx::connection conn(kDatabase->dsn());
    pqxx::nontransaction tx(conn);
    return tx.exec_params(sql, key);
  }

  // `sql` ($1 = `key`) as the orchestrator's role working for `tenant`.
  static pqxx::result QueryAsTenant(const std::string& tenant, const std::string& sql,
                                    const std::string& key) {
    pqxx::connection conn(kDatabase->dsn());
    pqxx::work tx(conn);
    tx.exec("SET LOCAL ROLE omniforge_orchestrator");
    tx.exec_params("SELECT set_config('app.tenant_id', $1, true)", tenant);
    pqxx::result rows = tx.exec_params(sql, key);
    tx.commit();
    return rows;
  }

  static int64_t Count(const std::string& sql, const std::string& key) {
    return Query(sql, key)[0][0].as<int64_t>();
  }
};

// A turn that made or acted on a plan says how the plan is carried out; a
// turn without one stores an empty mode. The per-call view answers it too,
// to the tenant's own role, and a mode no plan has is refused.
TEST_F(UsageRecorderTest, TheExecutionModeOfThePlanIsStoredWithTheRowAndInTheView) {
  UsageAttribution reviewed = Turn();
  reviewed.execution_mode = "agent_review";
  const UsageAttribution plain = Turn();
  {
    PgUsageRecorder recorder(kDatabase->pool());
    ModelUsage turn(reviewed, &recorder);
    turn.Record(Answered("plan_generation", "balanced", 100, 20, 0.01));
    turn.Record(Answered("plan_review", "quality", 80, 10, 0.02));
    ModelUsage other(plain, &recorder);
    other.Record(Answered("planner_stream", "balanced", 50, 5, 0.001));
  }
  const std::string mode =
      "SELECT execution_mode FROM orchestration.llm_turn_usage WHERE turn_id = $1";
  ASSERT_EQ(Query(mode, reviewed.turn_id).size(), 1u);
  EXPECT_EQ(Query(mode, reviewed.turn_id)[0][0].as<std::string>(), "agent_review");
  EXPECT_EQ(Query(mode, plain.turn_id)[0][0].as<std::string>(), "");
  const pqxx::result calls = QueryAsTenant(
      kTenant, "SELECT execution_mode FROM orchestration.llm_usage WHERE turn_id = $1",
      reviewed.turn_id);
  ASSERT_EQ(calls.size(), 2u);
  for (const pqxx::row& call : calls) EXPECT_EQ(call[0].as<std::string>(), "agent_review");
  EXPECT_THROW(Query("INSERT INTO orchestration.llm_turn_usage (tenant_id, id, user_id, "
                     "execution_mode, calls) VALUES ($1, gen_random_uuid(), 'u', 'whenever', "
                     "'[{}]'::jsonb)",
                     kTenant),
               pqxx::check_violation);
}

TEST_F(UsageRecorderTest, TurnWithTwoCallsIsOneStoredRowAndTwoRowsOfTheView) {
  const UsageAttribution who = Turn();
  {
    PgUsageRecorder recorder(kDatabase->pool());  // destruction writes what is queued
    ModelUsage turn(who, &recorder);
    turn.Record(Answered("planning", "balanced", 120, 30, 0.0125));
    turn.Record(TimedOut("summary", "fast"));
  }

  pqxx::result stored = Query(
      "SELECT tenant_id, user_id, conversation_id::text, context_type, "
      "jsonb_array_length(calls) FROM orchestration.llm_turn_usage WHERE turn_id = $1",
      who.turn_id);
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(stored[0][0].as<std::string>(), kTenant);
  EXPECT_EQ(stored[0][1].as<std::string>(), "user-1");
  EXPECT_EQ(stored[0][2].as<std::string>(), who.conversation_id);
  EXPECT_EQ(stored[0][3].as<std::string>(), "CONTEXT_TYPE_SALES");
  EXPECT_EQ(stored[0][4].as<int>(), 2);

  pqxx::result calls = Query(
      "SELECT tenant_id, user_id, conversation_id::text, turn_id, context_type, operation_type, "
      "profile, provider, model, prompt_tokens, completion_tokens, cached_tokens, cost_usd, "
      "latency_ms, ttft_ms, attempts, fallback_used, outcome, error_kind, id::text "
      "FROM orchestration.llm_usage WHERE turn_id = $1 ORDER BY created_at",
      who.turn_id);
  ASSERT_EQ(calls.size(), 2u);
  for (const pqxx::row& call : calls) {
    EXPECT_EQ(call["tenant_id"].as<std::string>(), kTenant);
    EXPECT_EQ(call["user_id"].as<std::string>(), "user-1");
    EXPECT_EQ(call["conversation_id"].as<std::string>(), who.conversation_id);
    EXPECT_EQ(call["turn_id"].as<std::string>(), who.turn_id);
    EXPECT_EQ(call["context_type"].as<std::string>(), "CONTEXT_TYPE_SALES");
    EXPECT_EQ(call["provider"].as<std::string>(), "fake");
  }
  const pqxx::row planning = calls[0];
  EXPECT_EQ(planning["operation_type"].as<std::string>(), "planning");
  EXPECT_EQ(planning["profile"].as<std::string>(), "balanced");
  EXPECT_EQ(planning["model"].as<std::string>(), "fake-model");
  EXPECT_EQ(planning["prompt_tokens"].as<int64_t>(), 120);
  EXPECT_EQ(planning["completion_tokens"].as<int64_t>(), 30);
  EXPECT_EQ(planning["cached_tokens"].as<int64_t>(), 3);
  EXPECT_DOUBLE_EQ(planning["cost_usd"].as<double>(), 0.0125);
  EXPECT_DOUBLE_EQ(planning["latency_ms"].as<double>(), 12.5);
  EXPECT_DOUBLE_EQ(planning["ttft_ms"].as<double>(), 4.0);
  EXPECT_EQ(planning["attempts"].as<int>(), 1);
  EXPECT_FALSE(planning["fallback_used"].as<bool>());
  EXPECT_EQ(planning["outcome"].as<std::string>(), "ok");
  EXPECT_EQ(planning["error_kind"].as<std::string>(), "");

  const pqxx::row summary = calls[1];
  EXPECT_EQ(summary["operation_type"].as<std::string>(), "summary");
  EXPECT_EQ(summary["profile"].as<std::string>(), "fast");
  EXPECT_EQ(summary["model"].as<std::string>(), "fake-fallback");
  EXPECT_EQ(summary["prompt_tokens"].as<int64_t>(), 0);
  EXPECT_DOUBLE_EQ(summary["cost_usd"].as<double>(), 0.0);
  EXPECT_TRUE(summary["ttft_ms"].is_null());
  EXPECT_EQ(summary["attempts"].as<int>(), 3);
  EXPECT_TRUE(summary["fallback_used"].as<bool>());
  EXPECT_EQ(summary["outcome"].as<std::string>(), "error");
  EXPECT_EQ(summary["error_kind"].as<std::string>(), "timeout");
  EXPECT_NE(planning["id"].as<std::string>(), summary["id"].as<std::string>());
}

TEST_F(UsageRecorderTest, TurnWithoutCallsStoresNothing) {
  const UsageAttribution who = Turn();
  {
    PgUsageRecorder recorder(kDatabase->pool());
    ModelUsage turn(who, &recorder);
  }
  EXPECT_EQ(
      Count("SELECT count(*) FROM orchestration.llm_turn_usage WHERE turn_id = $1", who.turn_id),
      0);
  EXPECT_EQ(Count("SELECT count(*) FROM orchestration.llm_usage WHERE turn_id = $1", who.turn_id),
            0);
}

TEST_F(UsageRecorderTest, CallForNoTurnIsDroppedAsUnattributed) {
  const double unattributed = Dropped("unattributed");
  const int64_t stored =
      Count("SELECT count(*) FROM orchestration.llm_usage WHERE $1 <> ''", "any");
  {
    PgUsageRecorder recorder(kDatabase->pool());
    recorder.Record(Answered("planning", "balanced", 10, 5, 0.001));
    // A turn that ends before the call does not take it.
    { ModelUsage turn(Turn(), &recorder); }
    recorder.Record(Answered("planning", "balanced", 10, 5, 0.001));
  }
  EXPECT_EQ(Dropped("unattributed"), unattributed + 2);
  EXPECT_EQ(Count("SELECT count(*) FROM orchestration.llm_usage WHERE $1 <> ''", "any"), stored);
}

TEST_F(UsageRecorderTest, AStepInATurnStoresItsOwnRow) {
  const UsageAttribution turn = Turn();
  UsageAttribution step = turn;
  step.context_type = "CONTEXT_TYPE_PLAN_STEP";
  {
    PgUsageRecorder recorder(kDatabase->pool());
    ModelUsage turn_usage(turn, &recorder);
    turn_usage.Record(Answered("planning", "balanced", 100, 10, 0.01));
    {
      ModelUsage step_usage(step, &recorder);
      step_usage.Record(Answered("plan_generation", "quality", 200, 50, 0.05));
    }
    turn_usage.Record(Answered("planning", "balanced", 150, 20, 0.02));
  }

  pqxx::result stored = Query(
      "SELECT context_type, jsonb_array_length(calls) FROM orchestration.llm_turn_usage "
      "WHERE turn_id = $1 ORDER BY context_type",
      turn.turn_id);
  ASSERT_EQ(stored.size(), 2u);
  EXPECT_EQ(stored[0][0].as<std::string>(), "CONTEXT_TYPE_PLAN_STEP");
  EXPECT_EQ(stored[0][1].as<int>(), 1);
  EXPECT_EQ(stored[1][0].as<std::string>(), "CONTEXT_TYPE_SALES");
  EXPECT_EQ(stored[1][1].as<int>(), 2);

  pqxx::result calls = Query(
      "SELECT operation_type, prompt_tokens FROM orchestration.llm_usage WHERE turn_id = $1 "
      "ORDER BY created_at",
      turn.turn_id);
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0][1].as<int64_t>(), 100);
  EXPECT_EQ(calls[1][1].as<int64_t>(), 200);
  EXPECT_EQ(calls[2][1].as<int64_t>(), 150);
}

TEST_F(UsageRecorderTest, AnotherTenantSeesNoneOfTheRowsThroughTheView) {
  const UsageAttribution who = Turn();
  {
    PgUsageRecorder recorder(kDatabase->pool());
    ModelUsage turn(who, &recorder);
    turn.Record(Answered("planning", "balanced", 120, 30, 0.0125));
    turn.Record(Answered("summary", "fast", 60, 10, 0.001));
  }
  const std::string view = "SELECT count(*) FROM orchestration.llm_usage WHERE turn_id = $1";
  const std::string table = "SELECT count(*) FROM orchestration.llm_turn_usage WHERE turn_id = $1";
  EXPECT_EQ(QueryAsTenant(kOtherTenant, view, who.turn_id)[0][0].as<int64_t>(), 0);
  EXPECT_EQ(QueryAsTenant(kOtherTenant, table, who.turn_id)[0][0].as<int64_t>(), 0);
  // The same statements, for the tenant the rows belong to.
  EXPECT_EQ(QueryAsTenant(kTenant, view, who.turn_id)[0][0].as<int64_t>(), 2);
  EXPECT_EQ(QueryAsTenant(kTenant, table, who.turn_id)[0][0].as<int64_t>(), 1);
}

TEST_F(UsageRecorderTest, PreviousReleaseInsertIntoTheViewIsStored) {
  const std::string turn_id = "turn-" + core::NewUuid();
  const std::string call_id = core::NewUuid();
  const std::string conversation_id = core::NewUuid();
  const std::string dropped_metric = "omniforge_test_previous_release_usage_dropped_total";
  {
    TenantRowWriter previous_release(kDatabase->pool(), {.insert_sql = kPreviousReleaseInsert,
                                                         .what = "LLM usage",
                                                         .dropped_metric = dropped_metric,
                                                         .dropped_help = "rows not stored"});
    previous_release.Submit(kTenant, json{{"id", call_id},
                                          {"user_id", "user-1"},
                                          {"conversation_id", conversation_id},
                                          {"turn_id", turn_id},
                                          {"context_type", "CONTEXT_TYPE_SALES"},
                                          {"operation_type", "planning"},
                                          {"profile", "balanced"},
                                          {"provider", "fake"},
                                          {"model", "fake-model"},
                                          {"prompt_tokens", 42},
                                          {"completion_tokens", 7},
                                          {"cached_tokens", 0},
                                          {"cost_usd", 0.5},
                                          {"latency_ms", 8.25},
                                          {"ttft_ms", nullptr},
                                          {"attempts", 1},
                                          {"fallback_used", false},
                                          {"outcome", "ok"},
                                          {"error_kind", ""}});
  }
  for (const char* reason : {"database", "queue_full"}) {
    EXPECT_EQ(core::MetricsRegistry::Global()
                  .GetCounter(dropped_metric, "rows not stored", {{"reason", reason}})
                  .Value(),
              0)
        << reason;
  }

  pqxx::result rows = QueryAsTenant(
      kTenant,
      "SELECT id::text, conversation_id::text, operation_type, prompt_tokens, completion_tokens, "
      "cost_usd, latency_ms, ttft_ms, outcome, created_at IS NOT NULL "
      "FROM orchestration.llm_usage WHERE turn_id = $1",
      turn_id);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][0].as<std::string>(), call_id);
  EXPECT_EQ(rows[0][1].as<std::string>(), conversation_id);
  EXPECT_EQ(rows[0][2].as<std::string>(), "planning");
  EXPECT_EQ(rows[0][3].as<int64_t>(), 42);
  EXPECT_EQ(rows[0][4].as<int64_t>(), 7);
  EXPECT_DOUBLE_EQ(rows[0][5].as<double>(), 0.5);
  EXPECT_DOUBLE_EQ(rows[0][6].as<double>(), 8.25);
  EXPECT_TRUE(rows[0][7].is_null());
  EXPECT_EQ(rows[0][8].as<std::string>(), "ok");
  EXPECT_TRUE(rows[0][9].as<bool>());
  EXPECT_EQ(Count("SELECT count(*) FROM orchestration.llm_usage_calls WHERE turn_id = $1", turn_id),
            1);
  EXPECT_EQ(
      QueryAsTenant(kOtherTenant, "SELECT count(*) FROM orchestration.llm_usage WHERE turn_id = $1",
                    turn_id)[0][0]
          .as<int64_t>(),
      0);
}

TEST_F(UsageRecorderTest, InsertIntoTheViewForAnotherTenantIsRefused) {
  const json row = {
      {"id", core::NewUuid()}, {"user_id", "user-1"},    {"conversation_id", nullptr},
      {"turn_id", "turn-x"},   {"context_type", ""},     {"operation_type", "planning"},
      {"profile", "balanced"}, {"provider", "fake"},     {"model", "fake-model"},
      {"prompt_tokens", 1},    {"completion_tokens", 1}, {"cached_tokens", 0},
      {"cost_usd", 0.0},       {"latency_ms", 1.0},      {"ttft_ms", nullptr},
      {"attempts", 1},         {"fallback_used", false}, {"outcome", "ok"},
      {"error_kind", ""}};
  pqxx::connection conn(kDatabase->dsn());
  pqxx::work tx(conn);
  tx.exec("SET LOCAL ROLE omniforge_orchestrator");
  tx.exec_params("SELECT set_config('app.tenant_id', $1, true)", std::string(kOtherTenant));
  try {
    tx.exec_params(std::string(kPreviousReleaseInsert), std::string(kTenant),
                   json::array({row}).dump());
    ADD_FAILURE() << "a row of another tenant was stored";
  } catch (const pqxx::sql_error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("row-level security")) << e.what();
  }
}

// The rows stored one per call before llm_turn_usage existed are kept and
// answered by the view.
TEST(UsageMigrationTest, RowsStoredBeforeTheMigrationStayInTheView) {
  testing::TestDatabase db;
  const std::vector<pg::Migration>& all = pg::OrchestratorMigrations();
  std::vector<pg::Migration> before;
  for (const pg::Migration& m : all) {
    if (m.version < 4) before.push_back(m);
  }
  ASSERT_TRUE(pg::ApplyMigrations(db.owner_dsn(), "orchestrator", before).ok());
  const std::string call_id = core::NewUuid();
  {
    pqxx::connection conn(db.dsn());
    pqxx::work tx(conn);
    tx.exec_params(
        "INSERT INTO orchestration.llm_usage (tenant_id, id, user_id, turn_id, operation_type, "
        "profile, provider, model, prompt_tokens, completion_tokens, cached_tokens, cost_usd, "
        "latency_ms, attempts, fallback_used, outcome) VALUES ($1, $2, 'user-1', 'turn-old', "
        "'planning', 'balanced', 'fake', 'fake-model', 11, 2, 0, 0.25, 5, 1, false, 'ok')",
        std::string(kTenant), call_id);
    tx.commit();
  }
  auto applied = pg::ApplyMigrations(db.owner_dsn(), "orchestrator", all);
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ(*applied, static_cast<int>(all.size() - before.size()));

  pqxx::connection conn(db.dsn());
  pqxx::nontransaction tx(conn);
  pqxx::result rows = tx.exec_params(
      "SELECT id::text, prompt_tokens, cost_usd FROM orchestration.llm_usage WHERE turn_id = $1",
      std::string("turn-old"));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][0].as<std::string>(), call_id);
  EXPECT_EQ(rows[0][1].as<int64_t>(), 11);
  EXPECT_DOUBLE_EQ(rows[0][2].as<double>(), 0.25);
}

// The budgets' ledger: what a tenant's turns cost since the start of the UTC
// day and month of `now`, and the mean cost of a turn; another tenant's
// rows, rows of an earlier month and the per-call rows of the previous
// release are told apart as they should be.
TEST_F(UsageRecorderTest, SpendLedgerSumsTheTenantsTurnsOfTheDayAndTheMonth) {
  const std::string tenant = "spend-" + core::NewUuid();
  auto turn = [&](const std::string& for_tenant, const std::vector<double>& costs) {
    UsageAttribution who = Turn();
    who.tenant_id = for_tenant;
    {
      PgUsageRecorder recorder(kDatabase->pool());
      ModelUsage usage(who, &recorder);
      for (double cost : costs) usage.Record(Answered("planning", "balanced", 10, 5, cost));
    }
    return who.turn_id;
  };
  turn(tenant, {0.01, 0.02});
  turn(tenant, {0.05});
  const std::string earlier_today = turn(tenant, {0.5});
  const std::string last_month = turn(tenant, {7.0});
  turn("spend-other-" + core::NewUuid(), {3.0});
  // Rows moved back in time by the superuser (a turn's calls count when
  // its row was written).
  const core::TimePoint now = core::SystemClock().Now();
  const int64_t day = core::MicrosOf(StartOfUtcDay(now));
  const int64_t month = core::MicrosOf(StartOfUtcMonth(now));
  auto move_to = [&](const std::string& turn_id, int64_t micros) {
    pqxx::connection conn(kDatabase->dsn());
    pqxx::work tx(conn);
    tx.exec_params(
        "UPDATE orchestration.llm_turn_usage SET created_at = 'epoch'::timestamptz + "
        "$2::bigint * interval '1 microsecond' WHERE turn_id = $1",
        turn_id, micros);
    tx.commit();
  };
  move_to(earlier_today, day + 1);
  move_to(last_month, month - 1);
  // A call row of the previous release, this month.
  {
    pqxx::connection conn(kDatabase->dsn());
    pqxx::work tx(conn);
    tx.exec_params(
        "INSERT INTO orchestration.llm_usage_calls (tenant_id, id, user_id, turn_id, "
        "operation_type, profile, provider, model, prompt_tokens, completion_tokens, "
        "cached_tokens, cost_usd, latency_ms, attempts, fallback_used, outcome) VALUES ($1, $2, "
        "'user-1', 'turn-old', 'planning', 'balanced', 'fake', 'fake-model', 1, 1, 0, 0.25, 5, 1, "
        "false, 'ok')",
        tenant, core::NewUuid());
    tx.commit();
  }

  PgSpendLedger ledger(kDatabase->pool());
  absl::StatusOr<Spend> spend = ledger.Read(tenant, now);
  ASSERT_TRUE(spend.ok()) << spend.status();
  EXPECT_NEAR(spend->day_usd, 0.08 + 0.5 + 0.25, 1e-9);
  EXPECT_NEAR(spend->month_usd, 0.08 + 0.5 + 0.25, 1e-9);
  EXPECT_NEAR(spend->mean_turn_usd, (0.08 + 0.5 + 0.25) / 4, 1e-9);
  // Read as of the last microsecond of the previous month: only that row
  // (nothing written after the time read counts).
  absl::StatusOr<Spend> before = ledger.Read(tenant, core::TimePointFromMicros(month - 1));
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_NEAR(before->month_usd, 7.0, 1e-9);
  EXPECT_NEAR(before->day_usd, 7.0, 1e-9);
  // A tenant without rows has spent nothing.
  absl::StatusOr<Spend> none = ledger.Read("spend-none-" + core::NewUuid(), now);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->month_usd, 0);
  EXPECT_EQ(none->mean_turn_usd, 0);
}

}  // namespace
}  // namespace omniforge::orchestrator
