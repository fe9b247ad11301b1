// InvocationLedger on PostgreSQL (platform.tool_invocations), tenant-scoped
// with row-level security. Thread-safe.
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>

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

// Deletes, across tenants, idempotency records finished before `before`
// and claims whose lease ran out before it, at most `limit`; returns how
// many.
absl::StatusOr<int64_t> PurgeInvocations(pg::PgPool& pool,
                                         std::chrono::system_clock::time_point before, int limit);

// Purges records older than `retention` every `interval` on its own thread
// until destroyed.
class InvocationPurger final {
 public:
  InvocationPurger(pg::PgPool& pool, std::chrono::seconds retention, std::chrono::seconds interval);
  ~InvocationPurger();
  InvocationPurger(const InvocationPurger&) = delete;
  InvocationPurger& operator=(const InvocationPurger&) = delete;

 private:
  void Run();

  pg::PgPool& pool_;
  const std::chrono::seconds retention_;
  const std::chrono::seconds interval_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace omniforge::executor
