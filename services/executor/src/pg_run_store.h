// The runs of agents on PostgreSQL (platform.agents, platform.runs), in
// tenant transactions under row-level security. Thread-safe.
#pragma once

#include "libs/pg/pool.h"
#include "services/executor/src/agent_runner.h"

namespace omniforge::executor {

class PgRunStore final : public RunStore {
 public:
  explicit PgRunStore(pg::PgPool& pool) : pool_(pool) {}

  absl::StatusOr<std::optional<AgentDefinition>> LoadAgent(const core::Identity& who,
                                                           const std::string& ref) override;
  absl::StatusOr<std::string> StartRun(const core::Identity& who, const AgentDefinition& agent,
                                       const RunStart& start) override;
  absl::StatusOr<bool> BeginRun(const core::Identity& who, const std::string& run_id,
                                std::chrono::seconds lease) override;
  absl::StatusOr<std::string> FinishRun(const core::Identity& who, const std::string& run_id,
                                        const RunOutcome& outcome) override;

 private:
  pg::PgPool& pool_;
};

// An agent row's runnable parts (tools, steps, limits as stored JSON) as a
// definition; limits out of range fall back to the defaults.
AgentDefinition DefinitionFromRow(const nlohmann::json& agent);

}  // namespace omniforge::executor
