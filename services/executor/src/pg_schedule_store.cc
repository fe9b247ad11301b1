#include "services/executor/src/pg_schedule_store.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "libs/core/ids.h"
#include "libs/pg/array_literal.h"

namespace omniforge::executor {
namespace {

// A time as the statements take it: microseconds since the epoch.
int64_t Micros(core::TimePoint t) { return core::MicrosOf(t); }

// The statement's parameter $n (microseconds) as a timestamptz.
std::string At(int n) { return absl::StrCat("to_timestamp($", n, "::double precision / 1e6)"); }

// The plans of one claim as the arrays platform.record_claims takes.
struct Batch {
  pg::ArrayLiteral tenants, agents, run_slots, run_ids, missed_first, missed_last, missed, next,
      ended, overlap_ok;

  void Add(const DueSchedule& due, const SlotPlan& plan, const std::string& run_id) {
    tenants.Add(due.who.tenant_id);
    agents.Add(due.agent_id);
    if (plan.run.has_value()) {
      run_slots.Add(core::MicrosOf(*plan.run));
    } else {
      run_slots.AddNull();
    }
    run_ids.Add(run_id);
    missed_first.Add(core::MicrosOf(plan.missed_first));
    missed_last.Add(core::MicrosOf(plan.missed_last));
    missed.Add(plan.missed);
    next.Add(core::MicrosOf(plan.next_slot));
    ended.Add(plan.ended ? "t" : "f");
    overlap_ok.Add(due.allow_overlap ? "t" : "f");
  }
};

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
    if (due.empty()) return absl::OkStatus();
    Batch batch;
    std::map<std::pair<std::string, std::string>, core::Identity> who;
    for (const auto& row : due) {
      DueSchedule d{{row[0].c_str(), row[2].c_str()},
                    row[1].c_str(),
                    row[3].c_str(),
                    row[4].c_str(),
                    core::TimePointFromMicros(row[5].as<int64_t>()),
                    row[6].c_str(),
                    row[7].as<bool>()};
      const SlotPlan planned = plan(d);
      claim.missed += planned.missed;
      batch.Add(d, planned, core::NewUuid());
      who[{d.who.tenant_id, d.agent_id}] = d.who;
    }
    pqxx::result recorded = tx.exec_params(
        absl::StrCat("SELECT tenant_id, agent_id::text, (extract(epoch FROM slot) * 1e6)::bigint, "
                     "outcome, run_id::text FROM platform.record_claims(",
                     At(1),
                     ", $2, $3::text[], $4::uuid[], $5::bigint[], $6::uuid[], $7::bigint[], "
                     "$8::bigint[], $9::integer[], $10::bigint[], $11::boolean[], "
                     "$12::boolean[])"),
        Micros(now), claimant, batch.tenants.Text(), batch.agents.Text(), batch.run_slots.Text(),
        batch.run_ids.Text(), batch.missed_first.Text(), batch.missed_last.Text(),
        batch.missed.Text(), batch.next.Text(), batch.ended.Text(), batch.overlap_ok.Text());
    for (const auto& row : recorded) {
      const std::string outcome = row[3].c_str();
      if (outcome == "overlap") ++claim.overlaps;
      if (outcome != "run") continue;
      const core::TimePoint slot = core::TimePointFromMicros(row[2].as<int64_t>());
      claim.runs.push_back({who[{row[0].c_str(), row[1].c_str()}], row[1].c_str(), row[4].c_str(),
                            slot, Micros(now) - Micros(slot)});
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

absl::StatusOr<std::vector<std::pair<core::Identity, std::string>>>
PgScheduleStore::UnreadSchedules(const std::pair<std::string, std::string>& after, int limit) {
  std::vector<std::pair<core::Identity, std::string>> out;
  absl::Status status = pg::WithTenantTransaction(pool_, "", [&](pqxx::work& tx) -> absl::Status {
    for (const auto& row : tx.exec_params(
             "SELECT tenant_id, user_id, agent_id::text FROM platform.unread_schedules($1, "
             "coalesce($2::uuid, '00000000-0000-0000-0000-000000000000'::uuid), $3)",
             after.first,
             after.second.empty() ? std::nullopt : std::optional<std::string>(after.second),
             limit)) {
      out.emplace_back(core::Identity{row[0].c_str(), row[1].c_str()}, row[2].c_str());
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return out;
}

}  // namespace omniforge::executor
