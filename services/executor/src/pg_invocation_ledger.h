// InvocationLedger on PostgreSQL (platform.tool_invocations), tenant-scoped
// with row-level security. A result (whatever the tool returned: the
// user's and the model's words among it) is sealed with the tenant's key
// (`keys`, platform.tenant_keys); the tool's name, the arguments' hash,
// the status and the times stay readable. Thread-safe.
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>

#include "libs/pg/pool.h"
#include "libs/seal/key_ring.h"
#include "services/executor/src/invocation_ledger.h"

namespace omniforge::executor {

class PgInvocationLedger final : public InvocationLedger {
 public:
  // `pool` and `keys` must outlive the ledger.
  PgInvocationLedger(pg::PgPool& pool, seal::KeyRing& keys) : pool_(pool), keys_(keys) {}

  absl::StatusOr<std::optional<RecordedResult>> Claim(
      const InvocationKey& key, std::chrono::system_clock::time_point lease_until) override;
  absl::Status Complete(const InvocationKey& key, const RecordedResult& result) override;
  absl::Status Release(const InvocationKey& key) override;

 private:
  pg::PgPool& pool_;
  seal::KeyRing& keys_;
};

// The table of the tenants' data keys in schema platform (migration 0007).
inline constexpr char kExecutorKeys[] = "platform.tenant_keys";

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
