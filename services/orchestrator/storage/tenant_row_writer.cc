#include "services/orchestrator/storage/tenant_row_writer.h"

#include <map>
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

}  // namespace

struct TenantRowWriter::Queue {
  Queue(pg::PgPool& pool, const TenantRowWriter& owner)
      : pool(pool),
        owner(owner),
        commits(
            1, 256, owner.options_.max_queued,
            [this](std::vector<TenantRow>& batch) { Write(batch); },
            [&owner](TenantRow& r, const absl::Status&) {
              owner.CountDropped("queue_full", r.records);
            },
            owner.options_.linger) {}

  void Write(std::vector<TenantRow>& batch) {
    std::map<std::string, nlohmann::json> rows_by_tenant;
    std::map<std::string, double> records_by_tenant;
    for (TenantRow& r : batch) {
      nlohmann::json& rows = rows_by_tenant[r.tenant_id];
      if (rows.is_null()) rows = nlohmann::json::array();
      rows.push_back(std::move(r.row));
      records_by_tenant[r.tenant_id] += r.records;
    }
    for (auto& by_tenant : rows_by_tenant) {
      const std::string& tenant = by_tenant.first;
      nlohmann::json& rows = by_tenant.second;
      absl::Status status =
          owner.options_.prepare ? owner.options_.prepare(tenant, rows) : absl::OkStatus();
      if (status.ok()) {
        status = pg::WithTenantTransaction(pool, tenant, [&](pqxx::work& tx) {
          tx.exec_params(owner.options_.insert_sql, tenant, rows.dump());
          return absl::OkStatus();
        });
      }
      if (!status.ok()) {
        owner.CountDropped("database", records_by_tenant[tenant]);
        core::LogWarn(owner.options_.what + " not stored",
                      {{"component", "orchestrator"},
                       {"rows", std::to_string(rows.size())},
                       {"error", std::string(status.message())}});
      }
    }
  }

  pg::PgPool& pool;
  const TenantRowWriter& owner;
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

}  // namespace omniforge::orchestrator
