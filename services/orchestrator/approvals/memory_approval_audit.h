// The approval audit trail held in memory: the same contract as the
// PostgreSQL store, for local mode without a database and for tests. It is
// bounded: past `max_records` decisions the oldest recorded is forgotten,
// so a long-running local process keeps the recent trail, not all of it.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "libs/core/clock.h"
#include "services/orchestrator/approvals/approval_audit.h"

namespace omniforge::orchestrator {

// Thread-safe.
class MemoryApprovalAudit final : public ApprovalAudit {
 public:
  // Keeps at most `max_records` (at least 1) decisions across tenants.
  // `now` (microseconds since the epoch) stamps records without
  // decided_at_micros.
  explicit MemoryApprovalAudit(size_t max_records = 10000,
                               std::function<int64_t()> now = core::NowMicros);

  absl::Status Record(const ActionDecisionRecord& record) override;
  absl::StatusOr<std::vector<ActionDecisionRecord>> List(const core::Identity& who,
                                                         const std::string& conversation_id,
                                                         int limit) override;

  // Decisions held now.
  size_t size();

 private:
  // (tenant, user, conversation).
  using Key = std::tuple<std::string, std::string, std::string>;

  const size_t max_records_;
  const std::function<int64_t()> now_;
  absl::Mutex mu_;
  // Each conversation's decisions in the order they were recorded.
  std::map<Key, std::deque<ActionDecisionRecord>> decisions_ ABSL_GUARDED_BY(mu_);
  // The conversation of every decision held, in the order recorded: the
  // front is the one forgotten first.
  std::deque<Key> recorded_ ABSL_GUARDED_BY(mu_);
};

}  // namespace omniforge::orchestrator
