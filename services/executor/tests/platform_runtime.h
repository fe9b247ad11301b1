// The executor's tools as its storage tests use them: a migrated database
// of their own (tests/support/migrated_database.h), the platform tools on
// it in their catalog, and the runtime that invokes them with the
// invocation ledger. A test suite makes one for its tests.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "libs/pg/migrate.h"
#include "libs/seal/test_keys.h"
#include "services/executor/src/pg_invocation_ledger.h"
#include "services/executor/src/pg_run_store.h"
#include "services/executor/src/platform_tools.h"
#include "services/executor/src/tool_runtime.h"
#include "tests/support/migrated_database.h"

namespace omniforge::pg {
const std::vector<Migration>& ExecutorMigrations();
}

namespace omniforge::executor::testing {

struct PlatformRuntime {
  explicit PlatformRuntime(int pool_size)
      : database("executor", pg::ExecutorMigrations(), pool_size) {
    EXPECT_TRUE(catalog.AddProvider(tools).ok());
    tools.SetRunner(&runner);
  }

  omniforge::testing::MigratedDatabase database;
  // The tenants' data keys, under a test master key.
  seal::KeyRing keys{database.pool(), kExecutorKeys, seal::TestMasterKey(), "test"};
  PlatformTools tools{database.pool(), keys};
  ToolCatalog catalog;
  PgInvocationLedger ledger{database.pool(), keys};
  ToolRuntime runtime{catalog, &ledger};
  // run_agent's runtime, local mode (no model).
  PgRunStore run_store{database.pool(), keys};
  AgentRunner runner{run_store, runtime, AgentFactory(), core::SystemClock()};
};

}  // namespace omniforge::executor::testing
