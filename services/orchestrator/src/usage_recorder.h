// Every model call the orchestrator makes for a turn lands in
// orchestration.llm_usage: who it was for (tenant, user, conversation, turn,
// context type) and what it used (operation, profile, provider, model,
// tokens, cost, latency, outcome). The LLM client hands each call's usage
// record to this sink on the calling thread; the turn says whom it serves
// with a ScopedUsageAttribution around its model calls. Records are written
// in batches by a background thread, so a turn never waits for them.
#pragma once

#include <memory>
#include <string>

#include "libs/llm/usage.h"
#include "libs/pg/pool.h"
#include "services/orchestrator/src/tenant_row_writer.h"
#include "services/orchestrator/src/usage_attribution.h"

namespace omniforge::orchestrator {

// Thread-safe. Records made without an attribution, or while more than
// `max_queued` wait, are counted (omniforge_orchestrator_llm_usage_dropped_total)
// and not stored. Destruction writes what is queued.
class PgUsageRecorder final : public llm::UsageSink {
 public:
  explicit PgUsageRecorder(pg::PgPool& pool, size_t max_queued = 10000);

  void Record(const llm::UsageRecord& record) override;

 private:
  TenantRowWriter rows_;
};

}  // namespace omniforge::orchestrator
