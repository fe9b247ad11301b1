#include "services/orchestrator/turn/tool_catalog.h"

#include <utility>

#include "absl/time/time.h"

namespace omniforge::orchestrator {

namespace {

std::shared_ptr<const ToolCatalog> Empty() { return std::make_shared<const ToolCatalog>(); }

}  // namespace

bool ToolCatalogCache::ServesLocked(int64_t now) const {
  return catalog_ != nullptr && (now - fetched_at_ <= kRefreshMicros || now < retry_at_);
}

std::shared_ptr<const ToolCatalog> ToolCatalogCache::Get(const core::Call& call) const {
  {
    absl::MutexLock lock(&mu_);
    if (ServesLocked(clock_.NowMicros())) return catalog_;
    if (listing_) {
      // Another turn is listing: the last list serves meanwhile.
      if (catalog_ != nullptr) return catalog_;
      const uint64_t waited_for = listings_;
      const absl::Time deadline = absl::FromChrono(call.deadline);
      while (listings_ == waited_for) {
        if (listed_.WaitWithDeadline(&mu_, deadline)) break;
      }
      return catalog_ != nullptr ? catalog_ : Empty();
    }
    listing_ = true;
  }
  return List(call);
}

std::shared_ptr<const ToolCatalog> ToolCatalogCache::List(const core::Call& call) const {
  // Asked with no lock held: turns that have a list do not wait for this.
  absl::StatusOr<execpb::ListToolsResponse> listed =
      tools_.ListTools(call, execpb::ListToolsRequest());
  std::shared_ptr<ToolCatalog> fresh;
  if (listed.ok()) {
    fresh = std::make_shared<ToolCatalog>();
    fresh->tools.assign(listed->tools().begin(), listed->tools().end());
    for (const execpb::ToolDescriptor& d : fresh->tools) fresh->risk_by_name[d.name()] = d.risk();
  }
  absl::MutexLock lock(&mu_);
  const int64_t now = clock_.NowMicros();
  if (fresh != nullptr) {
    catalog_ = std::move(fresh);
    fetched_at_ = now;
  } else {
    retry_at_ = now + kRetryMicros;
  }
  listing_ = false;
  ++listings_;
  listed_.SignalAll();
  return catalog_ != nullptr ? catalog_ : Empty();
}

}  // namespace omniforge::orchestrator
