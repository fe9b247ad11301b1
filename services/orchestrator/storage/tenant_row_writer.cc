#include "services/orchestrator/storage/tenant_row_writer.h"

#include <condition_variable>
#include <map>
#include <mutex>
#include <pqxx/pqxx>
#include <utility>
#include <vector>

#include "libs/core/logging.h"
#include "libs/core/metrics.h"
#include "libs/pg/group_commit.h"

namespace omniforge::orchestrator {
namespace {

struct TenantRow {
  std::string tenant_id;
  nlohmann::json row;
  double records = 1;
};

// Rows a drain pass takes from the spool (and inserts per tenant).
constexpr size_t kDrainRows = 1000;

// The database cannot take rows now but may later: they are worth keeping.
bool WorthRetrying(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status) ||
         absl::IsResourceExhausted(status) || absl::IsAborted(status);
}

// A spooled row as the insert takes it (the spool keeps what was given).
nlohmann::json Parsed(const SpooledRow& row) {
  return nlohmann::json::parse(row.row, nullptr, /*allow_exceptions=*/false);
}

core::Counter& SpooledCounter(const std::string& what) {
  return core::MetricsRegistry::Global().GetCounter(
      "omniforge_orchestrator_spooled_rows_total",
      "Background rows written to their spool because the database could not take them",
      {{"spool", what}});
}

core::Counter& DrainedCounter(const std::string& what) {
  return core::MetricsRegistry::Global().GetCounter(
      "omniforge_orchestrator_spool_drained_rows_total",
      "Spooled background rows stored in the database", {{"spool", what}});
}

}  // namespace

struct TenantRowWriter::Queue {
  Queue(pg::PgPool& pool, TenantRowWriter& owner)
      : pool(pool),
        owner(owner),
        commits(
            1, 256, owner.options_.max_queued,
            [this](std::vector<TenantRow>& batch) { Write(batch); },
            [&owner](TenantRow& r, const absl::Status&) {
              owner.CountDropped("queue_full", r.records);
            },
            owner.options_.linger) {
    if (owner.options_.spool) drainer = std::thread([this] { DrainLoop(); });
  }

  ~Queue() {
    {
      std::lock_guard lock(mu);
      stopping = true;
    }
    wake.notify_all();
    if (drainer.joinable()) drainer.join();
  }

  // Inserts one tenant's rows, prepared (sealed) on a copy so that what is
  // spooled after a failure is the row as it was given.
  absl::Status Insert(const std::string& tenant, const nlohmann::json& rows) {
    nlohmann::json prepared = rows;
    absl::Status status =
        owner.options_.prepare ? owner.options_.prepare(tenant, prepared) : absl::OkStatus();
    if (!status.ok()) return status;
    return pg::WithTenantTransaction(pool, tenant, [&](pqxx::work& tx) {
      tx.exec_params(owner.options_.insert_sql, tenant, prepared.dump());
      return absl::OkStatus();
    });
  }

  void Write(std::vector<TenantRow>& batch) {
    std::map<std::string, nlohmann::json> rows_by_tenant;
    std::map<std::string, double> records_by_tenant;
    for (TenantRow& r : batch) {
      nlohmann::json& rows = rows_by_tenant[r.tenant_id];
      if (rows.is_null()) rows = nlohmann::json::array();
      rows.push_back(std::move(r.row));
      records_by_tenant[r.tenant_id] += r.records;
    }
    RowSpool* spool = owner.options_.spool.get();
    for (auto& [tenant, rows] : rows_by_tenant) {
      // While rows wait in the spool the database is (or was just) out of
      // reach: new ones join them rather than wait for it here.
      absl::Status status = spool != nullptr && spool->depth() > 0
                                ? absl::UnavailableError("rows are waiting in the spool")
                                : Insert(tenant, rows);
      if (status.ok()) continue;
      if (spool != nullptr && WorthRetrying(status)) {
        Spool(tenant, rows, batch);
        continue;
      }
      owner.CountDropped("database", records_by_tenant[tenant]);
      core::LogWarn(owner.options_.what + " not stored",
                    {{"component", "orchestrator"},
                     {"rows", std::to_string(rows.size())},
                     {"error", std::string(status.message())}});
    }
  }

  // Writes `tenant`'s rows (with their records from `batch`) to the spool.
  void Spool(const std::string& tenant, nlohmann::json& rows, const std::vector<TenantRow>& batch) {
    std::vector<SpooledRow> spooled;
    size_t next = 0;
    for (const TenantRow& r : batch) {
      if (r.tenant_id != tenant) continue;
      spooled.push_back(
          SpooledRow{0, tenant, rows[next++].dump(), static_cast<uint64_t>(r.records), 0});
    }
    double refused = 0;
    for (const SpooledRow& row : spooled) refused += static_cast<double>(row.records);
    absl::StatusOr<size_t> kept = owner.options_.spool->Add(spooled);
    for (size_t i = 0; kept.ok() && i < *kept; ++i) {
      refused -= static_cast<double>(spooled[i].records);
    }
    if (kept.ok() && *kept > 0) {
      SpooledCounter(owner.options_.spool->name()).Inc(static_cast<double>(*kept));
      { std::lock_guard lock(mu); }  // the drainer is waiting, or sees the rows
      wake.notify_all();
    }
    if (refused > 0) {
      owner.CountDropped(kept.ok() ? "spool_full" : "spool_error", refused);
      core::LogWarn(owner.options_.what +
                        " not stored: the database is unreachable and the "
                        "spool cannot take them",
                    {{"component", "orchestrator"},
                     {"error", kept.ok() ? "spool full" : std::string(kept.status().message())}});
    }
  }

  // Stores one tenant's spooled rows; false when the database cannot be
  // reached. Rows it refuses for good are dropped one by one, counted.
  bool DrainTenant(const std::string& tenant, const std::vector<const SpooledRow*>& rows,
                   std::vector<uint64_t>& removed) {
    nlohmann::json batch = nlohmann::json::array();
    for (const SpooledRow* r : rows) batch.push_back(Parsed(*r));
    absl::Status status = Insert(tenant, batch);
    if (WorthRetrying(status)) return false;
    if (status.ok()) {
      for (const SpooledRow* r : rows) removed.push_back(r->number);
      DrainedCounter(owner.options_.spool->name()).Inc(static_cast<double>(rows.size()));
      return true;
    }
    for (const SpooledRow* r : rows) {
      status = Insert(tenant, nlohmann::json::array({Parsed(*r)}));
      if (WorthRetrying(status)) return false;
      if (!status.ok()) {
        owner.CountDropped("database", static_cast<double>(r->records));
        core::LogWarn("spooled " + owner.options_.what + " dropped: the database refuses it",
                      {{"component", "orchestrator"}, {"error", std::string(status.message())}});
      }
      removed.push_back(r->number);
    }
    return true;
  }

  size_t DrainOnce() {
    RowSpool& spool = *owner.options_.spool;
    size_t drained = 0;
    while (true) {
      std::vector<SpooledRow> oldest = spool.Oldest(kDrainRows);
      if (oldest.empty()) break;
      std::map<std::string, std::vector<const SpooledRow*>> by_tenant;
      for (const SpooledRow& r : oldest) by_tenant[r.tenant_id].push_back(&r);
      std::vector<uint64_t> removed;
      bool reachable = true;
      for (const auto& [tenant, rows] : by_tenant) {
        reachable = DrainTenant(tenant, rows, removed);
        if (!reachable) break;
      }
      if (!removed.empty()) {
        if (absl::Status trimmed = spool.Remove(removed); !trimmed.ok()) {
          core::LogError("row spool: cannot rewrite", {{"error", trimmed.ToString()}});
          break;
        }
        drained += removed.size();
      }
      if (!reachable) break;
    }
    return drained;
  }

  void DrainLoop() {
    std::unique_lock lock(mu);
    std::chrono::milliseconds backoff = owner.options_.min_backoff;
    while (!stopping) {
      // Rows left by an earlier process are tried at once; new ones after a
      // moment (the failure that spooled them is fresh).
      if (owner.options_.spool->depth() == 0) {
        backoff = owner.options_.min_backoff;
        wake.wait_for(lock, owner.options_.max_backoff,
                      [this] { return stopping || owner.options_.spool->depth() > 0; });
        continue;
      }
      lock.unlock();
      const size_t drained = DrainOnce();
      lock.lock();
      backoff = drained > 0 ? owner.options_.min_backoff
                            : std::min(backoff * 2, owner.options_.max_backoff);
      if (owner.options_.spool->depth() > 0)
        wake.wait_for(lock, backoff, [this] { return stopping; });
    }
  }

  pg::PgPool& pool;
  TenantRowWriter& owner;
  std::mutex mu;
  std::condition_variable wake;
  bool stopping = false;
  std::thread drainer;
  // Declared last: its destruction writes what is queued (and may spool it)
  // after the drainer has stopped.
  pg::GroupCommitQueue<TenantRow> commits;
};

TenantRowWriter::TenantRowWriter(pg::PgPool& pool, TenantRowWriterOptions options)
    : options_(std::move(options)), queue_(std::make_unique<Queue>(pool, *this)) {}

TenantRowWriter::~TenantRowWriter() = default;

void TenantRowWriter::Submit(std::string tenant_id, nlohmann::json row, double records) {
  queue_->commits.Submit({std::move(tenant_id), std::move(row), records});
}

void TenantRowWriter::CountDropped(const char* reason, double rows) const {
  core::MetricsRegistry::Global()
      .GetCounter(options_.dropped_metric, options_.dropped_help, {{"reason", reason}})
      .Inc(rows);
}

size_t TenantRowWriter::DrainSpool() { return options_.spool ? queue_->DrainOnce() : 0; }

}  // namespace omniforge::orchestrator
