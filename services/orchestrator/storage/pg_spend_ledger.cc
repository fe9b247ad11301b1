#include "services/orchestrator/storage/pg_spend_ledger.h"

namespace omniforge::orchestrator {

absl::StatusOr<Spend> PgSpendLedger::Read(const std::string& tenant, core::TimePoint now) {
  const int64_t month = core::MicrosOf(StartOfUtcMonth(now));
  const int64_t day = core::MicrosOf(StartOfUtcDay(now));
  Spend spend;
  absl::Status status = pg::WithTenantTransaction(pool_, tenant, [&](pqxx::work& tx) {
    // Both tables are indexed by (tenant_id, created_at); a turn's calls
    // count at the time its row was written. Rows up to 5 minutes after
    // `now` count too: the database's clock may be a little ahead.
    const pqxx::row row = tx.exec_params1(
        "WITH since AS (SELECT 'epoch'::timestamptz + $2::bigint * interval '1 microsecond' AS "
        "month, 'epoch'::timestamptz + $3::bigint * interval '1 microsecond' AS day, "
        "'epoch'::timestamptz + $4::bigint * interval '1 microsecond' + interval '5 minutes' AS "
        "upto), "
        "scopes AS ("
        "  SELECT t.created_at AS at, (SELECT coalesce(sum((c.call ->> 'cost_usd')::float8), 0) "
        "    FROM jsonb_array_elements(t.calls) AS c(call)) AS cost "
        "  FROM orchestration.llm_turn_usage AS t, since "
        "  WHERE t.tenant_id = $1 AND t.created_at >= since.month AND t.created_at <= since.upto "
        "  UNION ALL "
        "  SELECT u.created_at, u.cost_usd FROM orchestration.llm_usage_calls AS u, since "
        "  WHERE u.tenant_id = $1 AND u.created_at >= since.month AND u.created_at <= since.upto) "
        "SELECT coalesce(sum(cost) FILTER (WHERE at >= (SELECT day FROM since)), 0), "
        "coalesce(sum(cost), 0), count(*) FROM scopes",
        tenant, month, day, core::MicrosOf(now));
    spend.day_usd = row[0].as<double>();
    spend.month_usd = row[1].as<double>();
    const auto scopes = row[2].as<int64_t>();
    spend.mean_turn_usd = scopes > 0 ? spend.month_usd / static_cast<double>(scopes) : 0;
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return spend;
}

}  // namespace omniforge::orchestrator
