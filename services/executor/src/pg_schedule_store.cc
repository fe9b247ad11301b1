#include "services/executor/src/pg_schedule_store.h"

#include "absl/strings/str_cat.h"
#include "libs/core/ids.h"

namespace omniforge::executor {
namespace {

// A time as the statements take it: microseconds since the epoch.
int64_t Micros(core::TimePoint t) { return core::MicrosOf(t); }

// The statement's parameter $n (microseconds) as a timestamptz.
std::string At(int n) { return absl::StrCat("to_timestamp($", n, "::double precision / 1e6)"); }

// Records what `plan` made of `due`'s slots; adds the run to start to `claim`.
void Record(pqxx::work& tx, const DueSchedule& due, const SlotPlan& plan, core::TimePoint now,
            const std::string& claimant, struct Claim& claim) {
  pg::SetTenant(tx, due.who.tenant_id);
  if (plan.missed > 0) {
    tx.exec_params(
        absl::StrCat("INSERT INTO platform.schedule_slots (tenant_id, agent_id, slot, "
                     "outcome, missed, missed_until, claimed_at, claimed_by) VALUES "
                     "($1, $2::uuid, ",
                     At(3), ", 'missed', $4, ", At(5), ", ", At(6), ", $7) ON CONFLICT DO NOTHING"),
        due.who.tenant_id, due.agent_id, Micros(plan.missed_first), plan.missed,
        Micros(plan.missed_last), Micros(now), claimant);
    claim.missed += plan.missed;
  }
  if (plan.run.has_value()) {
    const bool busy =
        !due.allow_overlap && !tx.exec_params(
                                     "SELECT 1 FROM platform.runs WHERE tenant_id = $1 AND "
                                     "agent_id = $2::uuid AND status = 'running' LIMIT 1",
                                     due.who.tenant_id, due.agent_id)
                                   .empty();
    const std::string run_id = core::NewUuid();
    pqxx::result slot = tx.exec_params(
        absl::StrCat("INSERT INTO platform.schedule_slots (tenant_id, agent_id, slot, outcome, "
                     "run_id, claimed_at, claimed_by) VALUES ($1, $2::uuid, ",
                     At(3), ", $4, $5::uuid, ", At(6), ", $7) ON CONFLICT DO NOTHING RETURNING 1"),
        due.who.tenant_id, due.agent_id, Micros(*plan.run), busy ? "overlap" : "run",
        busy ? std::optional<std::string>() : std::optional<std::string>(run_id), Micros(now),
        claimant);
    if (busy && !slot.empty()) ++claim.overlaps;
    if (!busy && !slot.empty()) {
      tx.exec_params(
          absl::StrCat("INSERT INTO platform.runs (tenant_id, id, user_id, agent_id, agent_name, "
                       "status, trigger, slot, lease_until) SELECT a.tenant_id, $3::uuid, "
                       "a.user_id, a.id, a.name, 'running', 'schedule', ",
                       At(4),
                       ", now() + make_interval(secs => coalesce((a.limits ->> 'timeout_s')::int, "
                       "120) + 60) FROM platform.agents a WHERE a.tenant_id = $1 AND a.id = "
                       "$2::uuid"),
          due.who.tenant_id, due.agent_id, run_id, Micros(*plan.run));
      claim.runs.push_back(
          {due.who, due.agent_id, run_id, *plan.run, Micros(now) - Micros(*plan.run)});
    }
  }
  tx.exec_params(absl::StrCat("UPDATE platform.agent_schedules SET next_slot = CASE WHEN $3 THEN "
                              "next_slot ELSE ",
                              At(4),
                              " END, active = active AND NOT $3 WHERE tenant_id = $1 AND "
                              "agent_id = $2::uuid"),
                 due.who.tenant_id, due.agent_id, plan.ended, Micros(plan.next_slot));
}

}  // namespace

absl::StatusOr<Claim> PgScheduleStore::ClaimDue(
    core::TimePoint now, int limit, const std::string& claimant,
    const std::function<SlotPlan(const DueSchedule&)>& plan) {
  struct Claim claim;
  absl::Status status = pg::WithTenantTransaction(pool_, "", [&](pqxx::work& tx) -> absl::Status {
    claim = {};
    pqxx::result due = tx.exec_params(
        absl::StrCat("SELECT tenant_id, agent_id::text, user_id, cron, time_zone, "
                     "(extract(epoch FROM next_slot) * 1e6)::bigint, missed_runs, allow_overlap "
                     "FROM platform.claim_due_schedules(",
                     At(1), ", $2)"),
        Micros(now), limit);
    claim.schedules = static_cast<int>(due.size());
    for (const auto& row : due) {
      DueSchedule d{{row[0].c_str(), row[2].c_str()},
                    row[1].c_str(),
                    row[3].c_str(),
                    row[4].c_str(),
                    core::TimePointFromMicros(row[5].as<int64_t>()),
                    row[6].c_str(),
                    row[7].as<bool>()};
      Record(tx, d, plan(d), now, claimant, claim);
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return claim;
}

absl::StatusOr<std::optional<core::TimePoint>> PgScheduleStore::Earliest() {
  std::optional<core::TimePoint> earliest;
  absl::Status status = pg::WithTenantTransaction(pool_, "", [&](pqxx::work& tx) -> absl::Status {
    pqxx::result r =
        tx.exec("SELECT (extract(epoch FROM platform.earliest_schedule()) * 1e6)::bigint");
    if (!r[0][0].is_null()) earliest = core::TimePointFromMicros(r[0][0].as<int64_t>());
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return earliest;
}

absl::StatusOr<int64_t> PgScheduleStore::FailAbandonedRuns(core::TimePoint now) {
  int64_t failed = 0;
  absl::Status status = pg::WithTenantTransaction(pool_, "", [&](pqxx::work& tx) -> absl::Status {
    failed = tx.exec_params1(absl::StrCat("SELECT platform.fail_abandoned_runs(", At(1), ", 1000)"),
                             Micros(now))[0]
                 .as<int64_t>();
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return failed;
}

}  // namespace omniforge::executor
