#include "services/orchestrator/testing/fake_plan_store.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "libs/core/ids.h"

namespace omniforge::orchestrator::testing {

absl::Status FakePlanStore::Create(const Plan& plan) {
  absl::MutexLock lock(&mu_);
  if (plans_.count(plan.id) > 0) return absl::AlreadyExistsError("plan " + plan.id + " exists");
  plans_[plan.id] = plan;
  created_[plan.id] = next_++;
  return absl::OkStatus();
}

absl::StatusOr<Plan> FakePlanStore::Get(const core::Identity& who, const std::string& plan_id) {
  absl::MutexLock lock(&mu_);
  auto it = plans_.find(plan_id);
  if (!core::IsUuid(plan_id) || it == plans_.end() || it->second.tenant_id != who.tenant_id ||
      it->second.user_id != who.user_id) {
    return absl::NotFoundError("no plan " + plan_id);
  }
  return it->second;
}

absl::StatusOr<std::optional<std::string>> FakePlanStore::LatestUnfinished(
    const core::Identity& who, const std::string& conversation_id) {
  absl::MutexLock lock(&mu_);
  std::optional<std::string> newest;
  int newest_order = -1;
  for (const auto& [id, plan] : plans_) {
    const bool unfinished =
        plan.status == PlanStatus::kApproved || plan.status == PlanStatus::kRunning;
    if (unfinished && plan.tenant_id == who.tenant_id && plan.user_id == who.user_id &&
        plan.conversation_id == conversation_id && created_[id] > newest_order) {
      newest = id;
      newest_order = created_[id];
    }
  }
  return newest;
}

absl::Status FakePlanStore::Update(const Plan& plan, std::initializer_list<PlanStatus> from,
                                   bool replace_steps) {
  absl::MutexLock lock(&mu_);
  auto it = plans_.find(plan.id);
  if (it == plans_.end() || it->second.tenant_id != plan.tenant_id ||
      it->second.user_id != plan.user_id) {
    return absl::NotFoundError("no plan " + plan.id);
  }
  Plan& stored = it->second;
  if (std::find(from.begin(), from.end(), stored.status) == from.end()) {
    return absl::FailedPreconditionError(
        absl::StrCat("plan ", plan.id, " is ", PlanStatusName(stored.status)));
  }
  stored.status = plan.status;
  stored.writes_approved = plan.writes_approved;
  stored.review_verdict = plan.review_verdict;
  stored.review_notes = plan.review_notes;
  stored.pending_question = plan.pending_question;
  stored.summary = plan.summary;
  if (replace_steps) stored.steps = plan.steps;
  return absl::OkStatus();
}

absl::StatusOr<int> FakePlanStore::Forget(const core::Identity& who,
                                          const std::string& conversation_id) {
  absl::MutexLock lock(&mu_);
  int forgotten = 0;
  for (auto it = plans_.begin(); it != plans_.end();) {
    const Plan& plan = it->second;
    if (plan.tenant_id == who.tenant_id && plan.user_id == who.user_id &&
        plan.conversation_id == conversation_id) {
      created_.erase(it->first);
      it = plans_.erase(it);
      ++forgotten;
    } else {
      ++it;
    }
  }
  return forgotten;
}

absl::Status FakePlanStore::UpdateStep(const Plan& plan, const PlanStep& step) {
  absl::MutexLock lock(&mu_);
  auto it = plans_.find(plan.id);
  PlanStep* stored = nullptr;
  if (it != plans_.end() && it->second.tenant_id == plan.tenant_id) {
    stored = it->second.FindStep(step.id);
  }
  if (stored == nullptr) return absl::NotFoundError("no step " + step.id + " in plan " + plan.id);
  stored->status = step.status;
  stored->result_summary = step.result_summary;
  stored->result = step.result;
  stored->error = step.error;
  stored->answers = step.answers;
  stored->dialogue_conversation_id = step.dialogue_conversation_id;
  stored->attempts = step.attempts;
  stored->started_micros = step.started_micros;
  stored->finished_micros = step.finished_micros;
  stored->assessment = step.assessment;
  return absl::OkStatus();
}

std::optional<Plan> FakePlanStore::Stored(const std::string& plan_id) const {
  absl::MutexLock lock(&mu_);
  auto it = plans_.find(plan_id);
  if (it == plans_.end()) return std::nullopt;
  return it->second;
}

}  // namespace omniforge::orchestrator::testing
