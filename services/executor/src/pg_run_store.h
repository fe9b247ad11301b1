// The runs of agents on PostgreSQL (platform.agents, platform.runs), in
// tenant transactions under row-level security. A run's input, output,
// error and tool calls are sealed with the tenant's key (the strings in
// them: seal::SealStrings), and what is read back is opened, the agent's
// description and instructions included. Thread-safe.
#pragma once

#include "libs/pg/pool.h"
#include "libs/seal/key_ring.h"
#include "services/executor/src/agent_runner.h"

namespace omniforge::executor {

class PgRunStore final : public RunStore {
 public:
  // `keys` is platform.tenant_keys; both must outlive the store.
  PgRunStore(pg::PgPool& pool, seal::KeyRing& keys) : pool_(pool), keys_(keys) {}

  absl::StatusOr<std::optional<AgentDefinition>> LoadAgent(const core::Identity& who,
                                                           const std::string& ref) override;
  absl::StatusOr<std::string> StartRun(const core::Identity& who, const AgentDefinition& agent,
                                       const RunStart& start) override;
  absl::StatusOr<bool> BeginRun(const core::Identity& who, const std::string& run_id,
                                std::chrono::seconds lease) override;
  absl::StatusOr<std::string> FinishRun(const core::Identity& who, const std::string& run_id,
                                        const RunOutcome& outcome) override;

 private:
  // A row's or a run's JSON with the sealed strings in it opened.
  // Ordered: a run reads as PostgreSQL wrote it, members in their order.
  absl::StatusOr<nlohmann::ordered_json> Opened(pqxx::work& tx, const std::string& tenant,
                                                const char* json_text);

  pg::PgPool& pool_;
  seal::KeyRing& keys_;
};

// An agent row's runnable parts (tools, steps, limits as stored JSON) as a
// definition; limits out of range fall back to the defaults.
AgentDefinition DefinitionFromRow(const nlohmann::json& agent);

}  // namespace omniforge::executor
