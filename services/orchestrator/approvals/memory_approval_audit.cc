#include "services/orchestrator/approvals/memory_approval_audit.h"

#include <algorithm>
#include <utility>

namespace omniforge::orchestrator {

MemoryApprovalAudit::MemoryApprovalAudit(size_t max_records, std::function<int64_t()> now)
    : max_records_(std::max<size_t>(max_records, 1)), now_(std::move(now)) {}

absl::Status MemoryApprovalAudit::Record(const ActionDecisionRecord& record) {
  if (absl::Status status = ValidateActionDecision(record); !status.ok()) return status;
  ActionDecisionRecord stored = record;
  stored.summary = StoredDecisionSummary(record.summary);
  if (stored.decided_at_micros == 0) stored.decided_at_micros = now_();
  Key key{record.tenant_id, record.user_id, record.conversation_id};
  absl::MutexLock lock(&mu_);
  decisions_[key].push_back(std::move(stored));
  recorded_.push_back(std::move(key));
  while (recorded_.size() > max_records_) {
    // A conversation's decisions are recorded in order, so the oldest
    // recorded anywhere is the first of its conversation.
    auto oldest = decisions_.find(recorded_.front());
    oldest->second.pop_front();
    if (oldest->second.empty()) decisions_.erase(oldest);
    recorded_.pop_front();
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ActionDecisionRecord>> MemoryApprovalAudit::List(
    const core::Identity& who, const std::string& conversation_id, int limit) {
  if (absl::Status status = ValidateDecisionQuery(conversation_id, limit); !status.ok()) {
    return status;
  }
  std::vector<ActionDecisionRecord> newest_first;
  {
    absl::MutexLock lock(&mu_);
    auto found = decisions_.find(Key{who.tenant_id, who.user_id, conversation_id});
    if (found == decisions_.end()) return newest_first;
    // Latest recorded first, so equal times keep the later decision ahead.
    newest_first.assign(found->second.rbegin(), found->second.rend());
  }
  std::stable_sort(newest_first.begin(), newest_first.end(),
                   [](const ActionDecisionRecord& a, const ActionDecisionRecord& b) {
                     return a.decided_at_micros > b.decided_at_micros;
                   });
  if (newest_first.size() > static_cast<size_t>(limit)) newest_first.resize(limit);
  return newest_first;
}

size_t MemoryApprovalAudit::size() {
  absl::MutexLock lock(&mu_);
  return recorded_.size();
}

}  // namespace omniforge::orchestrator
