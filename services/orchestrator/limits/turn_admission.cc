#include "services/orchestrator/limits/turn_admission.h"

#include <chrono>
#include <utility>

#include "absl/random/distributions.h"
#include "absl/strings/str_cat.h"
#include "libs/core/error_catalog.h"
#include "libs/core/error_reason.h"
#include "libs/core/metrics.h"
#include "libs/core/retry_hint.h"

namespace omniforge::orchestrator {
namespace {

// A refused turn is told to come back in 0.5 to 1.5 s, at random, so that a
// refused burst does not return all at once.
constexpr int64_t kRetryMinMillis = 500;
constexpr int64_t kRetrySpreadMillis = 1000;

// The same series as the per-tenant limits' refusals, under limits of its own.
core::Counter& Refusals(const std::string& tenant, const char* limit) {
  return core::MetricsRegistry::Global().GetCounter(
      "omniforge_orchestrator_limit_refusals_total",
      "Public calls and turns refused by a per-tenant limit, by tenant and limit "
      "(key_rate, tenant_rate, user_turns, tenant_turns, budget).",
      {{"tenant", tenant}, {"limit", limit}});
}

}  // namespace

AdmissionTicket::AdmissionTicket(AdmissionTicket&& other) noexcept
    : admission_(std::exchange(other.admission_, nullptr)),
      user_(std::move(other.user_)),
      conversation_(std::move(other.conversation_)) {}

AdmissionTicket& AdmissionTicket::operator=(AdmissionTicket&& other) noexcept {
  if (this != &other) {
    Release();
    admission_ = std::exchange(other.admission_, nullptr);
    user_ = std::move(other.user_);
    conversation_ = std::move(other.conversation_);
  }
  return *this;
}

AdmissionTicket::~AdmissionTicket() { Release(); }

void AdmissionTicket::Release() {
  if (admission_ != nullptr) std::exchange(admission_, nullptr)->Release(user_, conversation_);
}

std::string TurnAdmission::UserKey(const core::Identity& who) {
  return absl::StrCat(who.tenant_id, "/", who.user_id);
}

absl::StatusOr<AdmissionTicket> TurnAdmission::Admit(const core::Identity& who,
                                                     const std::string& conversation_key) {
  std::string user = UserKey(who);
  absl::MutexLock lock(&mu_);
  const int on_conversation = conversation_key.empty() ? 0 : conversations_[conversation_key];
  const int of_user = users_[user];
  const char* limit = nullptr;
  std::string message;
  if (on_conversation > bounds_.max_queued_per_conversation) {
    limit = "conversation_queue";
    message = absl::StrCat("this conversation already has ", on_conversation,
                           " turns in flight: one running and turn.max_queued_per_conversation (",
                           bounds_.max_queued_per_conversation,
                           ") waiting behind it; wait for its turns to end");
  } else if (of_user >= bounds_.max_in_flight_per_user) {
    limit = "user_in_flight";
    message = absl::StrCat("user ", who.user_id, " already has ", of_user,
                           " turns in flight, the most turn.max_in_flight_per_user (",
                           bounds_.max_in_flight_per_user, ") allows; wait for one to end");
  }
  if (limit != nullptr) {
    if (on_conversation == 0 && !conversation_key.empty()) conversations_.erase(conversation_key);
    if (of_user == 0) users_.erase(user);
    Refusals(who.tenant_id, limit).Inc();
    const std::chrono::milliseconds after(kRetryMinMillis +
                                          absl::Uniform<int64_t>(random_, 0, kRetrySpreadMillis));
    return core::WithReason(
        core::WithRetryAfter(
            absl::ResourceExhaustedError(absl::StrCat(
                message, "; retry in ", absl::SixDigits(after.count() / 1000.0), " s")),
            after),
        core::kReasonTooManyTurns, {{"limit", limit}});
  }
  if (!conversation_key.empty()) ++conversations_[conversation_key];
  ++users_[user];
  return AdmissionTicket(this, std::move(user), conversation_key);
}

void TurnAdmission::Release(const std::string& user, const std::string& conversation) {
  absl::MutexLock lock(&mu_);
  if (!conversation.empty()) {
    auto it = conversations_.find(conversation);
    if (it != conversations_.end() && --it->second <= 0) conversations_.erase(it);
  }
  auto it = users_.find(user);
  if (it != users_.end() && --it->second <= 0) users_.erase(it);
}

int TurnAdmission::InFlightOnConversation(const std::string& conversation_key) const {
  absl::MutexLock lock(&mu_);
  auto it = conversations_.find(conversation_key);
  return it == conversations_.end() ? 0 : it->second;
}

int TurnAdmission::InFlightOfUser(const core::Identity& who) const {
  absl::MutexLock lock(&mu_);
  auto it = users_.find(UserKey(who));
  return it == users_.end() ? 0 : it->second;
}

}  // namespace omniforge::orchestrator
