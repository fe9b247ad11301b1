// Every model call the orchestrator makes for a turn is recorded: who it was
// for (tenant, user, conversation, turn, context type) and what it used
// (operation, profile, provider, model, tokens, cost, latency, outcome).
// The LLM client hands each call's usage record to this sink on the calling
// thread; the turn says whom it serves with a ScopedUsageAttribution around
// its model calls, and the scope collects them. When the scope ends, its
// calls are stored as ONE row of orchestration.llm_turn_usage (the calls in
// its `calls` array); a scope without calls stores nothing, and a nested
// scope (a plan step inside a turn) stores its own row. Rows are written in
// batches by a background thread, so a turn never waits for them.
// orchestration.llm_usage is a view that answers one row per call.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "libs/llm/usage.h"
#include "libs/pg/pool.h"
#include "services/orchestrator/storage/tenant_row_writer.h"
#include "services/orchestrator/usage/usage_attribution.h"

namespace omniforge::orchestrator {

// Thread-safe. Records made without an attribution are counted
// (omniforge_orchestrator_llm_usage_dropped_total, reason "unattributed")
// and not stored; so are the calls of a scope that ends while more than
// `max_queued` rows wait, or whose row the database refuses, each call
// counted once. Must outlive the scopes it records into. Destruction writes
// what is queued.
class PgUsageRecorder final : public llm::UsageSink, public ScopeUsageWriter {
 public:
  explicit PgUsageRecorder(pg::PgPool& pool, size_t max_queued = 10000);

  void Record(const llm::UsageRecord& record) override;
  void WriteScope(const UsageAttribution& who, std::vector<AttributedCall> calls) override;

 private:
  TenantRowWriter rows_;
};

}  // namespace omniforge::orchestrator
