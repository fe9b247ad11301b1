// The built-in platform tools: agents, skills, runs, projects, tasks,
// project templates and context documents, on PostgreSQL (schema
// `platform`). Every tool reads and writes only the calling tenant's and
// user's rows (row-level security enforces the tenant). Thread-safe.
#pragma once

#include <string_view>
#include <vector>

#include "libs/pg/pool.h"
#include "libs/seal/key_ring.h"
#include "services/executor/src/platform_handlers.h"
#include "services/executor/src/tool.h"

namespace omniforge::executor {

inline constexpr std::string_view kBuiltinSource = "builtin";

// The descriptors of every built-in tool.
std::vector<ToolSpec> PlatformToolSpecs();

class PlatformTools final : public ToolProvider {
 public:
  // `clock` gives the time schedules count from (the next slot of a new or
  // resumed agent).
  // `keys` (platform.tenant_keys) seal what the tools store of the user's
  // and the model's words, and open it in their results.
  PlatformTools(pg::PgPool& pool, seal::KeyRing& keys,
                const core::Clock& clock = core::SystemClock())
      : pool_(pool), keys_(keys), clock_(clock) {}

  absl::StatusOr<std::vector<ToolSpec>> ListTools() override;

  // Each tool runs in one tenant transaction: it commits everything or
  // nothing. Business failures are results with is_error (codes not_found,
  // already_exists, failed_precondition); INVALID_ARGUMENT names the field
  // (a malformed id, text too long) and writes nothing.
  absl::StatusOr<ToolResult> Invoke(const ToolCall& call) override;

  // The runtime run_agent runs agents with (it invokes these tools in
  // turn, so it is set after both exist); without one run_agent fails.
  void SetRunner(AgentRunner* runner) { runner_ = runner; }

 private:
  // Invoke before the result's sealed words are opened.
  absl::StatusOr<ToolResult> InvokeSealed(const ToolCall& call);
  absl::Status OpenResult(const std::string& tenant, ToolResult& result);
  absl::StatusOr<ToolResult> RunRead(platform::ReadHandler handler, const ToolCall& call);

  pg::PgPool& pool_;
  seal::KeyRing& keys_;
  const core::Clock& clock_;
  AgentRunner* runner_ = nullptr;
};

}  // namespace omniforge::executor
