// Every model call the orchestrator makes for a turn is recorded: who it was
// for (tenant, user, conversation, turn, context type, the execution mode of
// the plan it served) and what it used
// (operation, profile, provider, model, tokens, cost, latency, outcome).
// The turn passes its ModelUsage (usage_attribution.h) with each model
// call, the LLM client reports the call's usage record to it, and when the
// turn ends its calls come here and are stored as ONE row of
// orchestration.llm_turn_usage (the calls in its `calls` array); a turn
// without calls stores nothing, and a plan step inside a turn (a ModelUsage
// of its own) stores its own row. A call made for no turn reaches this
// class as the client's own sink. Rows are written in
// batches by a background thread, so a turn never waits for them.
// orchestration.llm_usage is a view that answers one row per call.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "libs/llm/usage.h"
#include "libs/pg/pool.h"
#include "services/orchestrator/storage/tenant_row_writer.h"
#include "services/orchestrator/usage/usage_attribution.h"

namespace omniforge::orchestrator {

// Thread-safe. Records of calls made for no turn (Record) are counted
// (omniforge_orchestrator_llm_usage_dropped_total, reason "unattributed")
// and not stored; so are the calls of a turn that ends while more than
// `max_queued` rows wait, or whose row the database refuses, each call
// counted once. With a spool, rows the database cannot take now wait there
// (row_spool.h) and are stored once it is back, each once. Must outlive the
// ModelUsages it writes for. Destruction writes what is queued.
class PgUsageRecorder final : public ScopeUsageWriter {
 public:
  // `spool` may be null (rows the database cannot take are then dropped).
  explicit PgUsageRecorder(pg::PgPool& pool, std::shared_ptr<RowSpool> spool = nullptr,
                           size_t max_queued = 10000,
                           std::chrono::milliseconds max_backoff = std::chrono::seconds(30));

  void Record(const llm::UsageRecord& record) override;
  void WriteScope(const UsageAttribution& who, std::vector<AttributedCall> calls) override;

 private:
  TenantRowWriter rows_;
};

}  // namespace omniforge::orchestrator
