// Turn errors (error_log.h) stored in orchestration.error_log, in background
// batches per tenant like the model-call usage: a turn never waits for them.
// The message, which may quote the user's or the model's words, is sealed
// with the tenant's key; kind, component, stage and tool stay readable.
#pragma once

#include <chrono>
#include <memory>

#include "libs/pg/pool.h"
#include "libs/seal/key_ring.h"
#include "services/orchestrator/storage/tenant_row_writer.h"
#include "services/orchestrator/turn/error_log.h"

namespace omniforge::orchestrator {

// Thread-safe. Errors recorded while more than `max_queued` wait are counted
// (omniforge_orchestrator_turn_errors_dropped_total) and not stored. With a
// spool, errors the database cannot take now wait there (row_spool.h) and
// are stored once it is back, each once. Destruction writes what is queued.
class PgErrorLog final : public TurnErrorLog {
 public:
  // `keys` (orchestration.tenant_keys) must outlive the log; `spool` may be
  // null (errors the database cannot take are then dropped).
  PgErrorLog(pg::PgPool& pool, seal::KeyRing& keys, std::shared_ptr<RowSpool> spool = nullptr,
             size_t max_queued = 10000,
             std::chrono::milliseconds max_backoff = std::chrono::seconds(30));

  void Record(TurnError error) override;

 private:
  TenantRowWriter rows_;
};

}  // namespace omniforge::orchestrator
