// Turn errors (error_log.h) stored in orchestration.error_log, in background
// batches per tenant like the model-call usage: a turn never waits for them.
#pragma once

#include "libs/pg/pool.h"
#include "services/orchestrator/storage/tenant_row_writer.h"
#include "services/orchestrator/turn/error_log.h"

namespace omniforge::orchestrator {

// Thread-safe. Errors recorded while more than `max_queued` wait are counted
// (omniforge_orchestrator_turn_errors_dropped_total) and not stored.
// Destruction writes what is queued.
class PgErrorLog final : public TurnErrorLog {
 public:
  explicit PgErrorLog(pg::PgPool& pool, size_t max_queued = 10000);

  void Record(TurnError error) override;

 private:
  TenantRowWriter rows_;
};

}  // namespace omniforge::orchestrator
