// The executor's tools as turns see them: listed with ListTools at most once
// a minute and shared by every turn. No lock is held while the executor is
// asked: one turn lists, the others go on with the list they had (a turn
// with none yet waits for that listing, up to its own deadline). A listing
// that fails keeps the last list for a few seconds before the next try, so
// an executor that cannot be reached costs one call, not one per turn.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "libs/core/call.h"
#include "libs/core/clock.h"
#include "services/orchestrator/downstream/downstream.h"

namespace omniforge::orchestrator {

struct ToolCatalog {
  std::vector<execpb::ToolDescriptor> tools;
  std::map<std::string, execpb::ToolRisk> risk_by_name;
};

class ToolCatalogCache {
 public:
  static constexpr int64_t kRefreshMicros = 60'000'000;
  // After a failed listing, the last list serves this long before a new try.
  static constexpr int64_t kRetryMicros = 5'000'000;

  ToolCatalogCache(Tools& tools, const core::Clock& clock) : tools_(tools), clock_(clock) {}

  // The tools; an empty catalog when none could be listed yet. `call` is
  // the listing's (whom for, deadline, cancel) when this turn lists.
  std::shared_ptr<const ToolCatalog> Get(const core::Call& call) const;

 private:
  // Whether `catalog_` serves as it is at `now` (fresh, or resting after a
  // failed listing).
  bool ServesLocked(int64_t now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::shared_ptr<const ToolCatalog> List(const core::Call& call) const;

  Tools& tools_;
  const core::Clock& clock_;
  mutable absl::Mutex mu_;
  mutable absl::CondVar listed_;
  mutable std::shared_ptr<const ToolCatalog> catalog_ ABSL_GUARDED_BY(mu_);
  mutable int64_t fetched_at_ ABSL_GUARDED_BY(mu_) = 0;
  mutable int64_t retry_at_ ABSL_GUARDED_BY(mu_) = 0;
  mutable bool listing_ ABSL_GUARDED_BY(mu_) = false;
  // Counts finished listings: a waiter takes the outcome of the one it waited for.
  mutable uint64_t listings_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace omniforge::orchestrator
