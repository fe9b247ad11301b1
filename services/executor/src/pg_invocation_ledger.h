// InvocationLedger on PostgreSQL (platform.tool_invocations), tenant-scoped
// with row-level security. Thread-safe.
#pragma once

#include "libs/pg/pool.h"
#include "services/executor/src/invocation_ledger.h"

namespace omniforge::executor {

class PgInvocationLedger final : public InvocationLedger {
 public:
  explicit PgInvocationLedger(pg::PgPool& pool) : pool_(pool) {}

  absl::StatusOr<std::optional<RecordedResult>> Claim(
      const InvocationKey& key, std::chrono::system_clock::time_point lease_until) override;
  absl::Status Complete(const InvocationKey& key, const RecordedResult& result) override;
  absl::Status Release(const InvocationKey& key) override;

 private:
  pg::PgPool& pool_;
};

}  // namespace omniforge::executor
