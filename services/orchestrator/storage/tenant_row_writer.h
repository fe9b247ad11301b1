// Records a turn must never wait for (model-call usage, turn errors) are
// written by a background thread in batches: rows queue up, a committer takes
// what waits and inserts it with one statement per tenant, each in its own
// tenant transaction so row-level security applies. Built on
// pg::GroupCommitQueue.
//
// With a RowSpool, rows the database cannot take now (unreachable, timed
// out, no connection free, a conflict) are written to the spool instead of
// being dropped, and a background thread stores them once the database is
// back; while the spool holds rows, new ones join it, and a drain pass
// inserts the oldest in batches per tenant. `insert_sql` must skip a row
// already stored under its key (ON CONFLICT DO NOTHING), so that a row
// written again after a crash is stored once.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "libs/pg/pool.h"
#include "services/orchestrator/storage/row_spool.h"

namespace omniforge::orchestrator {

struct TenantRowWriterOptions {
  // Takes $1 = the tenant and $2 = that tenant's rows of the batch as a JSON
  // array, e.g. "INSERT INTO t (tenant_id, a) SELECT $1, x.a FROM
  // jsonb_to_recordset($2::jsonb) AS x(a text)".
  std::string insert_sql;
  // What the rows are, for logs ("LLM usage").
  std::string what;
  // Counter of rows not stored, by reason (queue_full, database, and what
  // the owner counts itself with CountDropped).
  std::string dropped_metric;
  std::string dropped_help;
  size_t max_queued = 10000;
  // How long rows gather before a batch is written: under a steady stream
  // of turns one transaction (one WAL flush, one wake-up of the writer)
  // carries this long's rows instead of one row each. Rows not yet written
  // when the process dies are lost either way; this widens that window by
  // as much.
  std::chrono::milliseconds linger{10};
  // Runs on the writer thread before a tenant's rows are inserted (to seal
  // their text); an error drops them, counted as `database`.
  std::function<absl::Status(const std::string& tenant, nlohmann::json& rows)> prepare;
  // Where rows wait while the database is unreachable; null: they are
  // dropped (counted as `database`). Rows the spool cannot take (full) are
  // counted as `spool_full`.
  std::shared_ptr<RowSpool> spool;
  // The drainer's wait after a pass that stored nothing: doubles from
  // min_backoff up to max_backoff.
  std::chrono::milliseconds min_backoff{200};
  std::chrono::milliseconds max_backoff{30000};
};

// Thread-safe. Rows submitted while `max_queued` wait are dropped and
// counted. Destruction writes what is queued (to the spool when the
// database is unreachable); what is spooled stays for the next process.
class TenantRowWriter final {
 public:
  TenantRowWriter(pg::PgPool& pool, TenantRowWriterOptions options);
  ~TenantRowWriter();

  // `records`: what the row counts for in the dropped metric should it not
  // be stored (a row holding several records counts each).
  void Submit(std::string tenant_id, nlohmann::json row, double records = 1);
  void CountDropped(const char* reason, double rows = 1) const;
  // One pass over the spool: its oldest rows are inserted, per tenant,
  // until the database cannot be reached. Returns how many left the spool.
  size_t DrainSpool();

 private:
  struct Queue;
  const TenantRowWriterOptions options_;
  std::unique_ptr<Queue> queue_;
};

}  // namespace omniforge::orchestrator
