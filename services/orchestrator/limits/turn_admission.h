// Fairness at the door of StreamChat: bounds on the turns in flight on this
// replica, per conversation and per user, so that one conversation's burst
// (or one user's) cannot hold the workers, database connections and
// downstream calls every other caller shares.
//
// A newer turn on a conversation waits for the one running there to stop
// at a safe point; a burst of turns on one conversation therefore forms a
// chain, each holding a worker while it waits. The conversation's bound
// keeps that chain short: one turn running and at most
// `max_queued_per_conversation` behind it. The user's bound caps what one
// user's turns over all their conversations hold. A turn beyond either is
// refused at once with RESOURCE_EXHAUSTED (reason TOO_MANY_TURNS, `limit`
// conversation_queue or user_in_flight, a retry hint), before it takes
// anything shared, and counted in omniforge_orchestrator_limit_refusals_total.
//
// These are the process's own protection, on by default, apart from the
// operator's per-tenant caps (tenant_limits.h, off unless set); both apply.
// Counts are per replica. No gRPC here. Thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>

#include "absl/base/thread_annotations.h"
#include "absl/random/random.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "libs/core/identity.h"

namespace omniforge::orchestrator {

struct TurnAdmissionBounds {
  // Turns of one conversation admitted while another of it is in flight
  // (turn.max_queued_per_conversation): at most 1 + this at once.
  int max_queued_per_conversation = 8;
  // Turns of one user in flight at once, over all their conversations
  // (turn.max_in_flight_per_user); keep it below server.worker_threads.
  int max_in_flight_per_user = 32;
};

class TurnAdmission;

// An admitted turn's place under the bounds; given back when destroyed or
// released (once). Move-only.
class AdmissionTicket final {
 public:
  AdmissionTicket() = default;
  AdmissionTicket(AdmissionTicket&& other) noexcept;
  AdmissionTicket& operator=(AdmissionTicket&& other) noexcept;
  ~AdmissionTicket();
  void Release();

 private:
  friend class TurnAdmission;
  AdmissionTicket(TurnAdmission* admission, std::string user, std::string conversation)
      : admission_(admission), user_(std::move(user)), conversation_(std::move(conversation)) {}
  TurnAdmission* admission_ = nullptr;
  std::string user_;
  std::string conversation_;
};

class TurnAdmission final {
 public:
  explicit TurnAdmission(TurnAdmissionBounds bounds) : bounds_(bounds) {}
  TurnAdmission(const TurnAdmission&) = delete;
  TurnAdmission& operator=(const TurnAdmission&) = delete;

  // A place for a new turn of `who` on the conversation `conversation_key`
  // (RunningTurns::Key; empty for a turn that starts a conversation: the
  // user's bound only), or RESOURCE_EXHAUSTED naming the bound reached,
  // with a retry hint of 0.5 to 1.5 s. The caller asks once per turn it
  // runs: a retry of a turn still in flight is answered before this
  // (TURN_IN_PROGRESS) and never counts again. Tickets must not outlive
  // this.
  absl::StatusOr<AdmissionTicket> Admit(const core::Identity& who,
                                        const std::string& conversation_key);

  // Turns in flight now, for one conversation key and one user.
  int InFlightOnConversation(const std::string& conversation_key) const;
  int InFlightOfUser(const core::Identity& who) const;

  const TurnAdmissionBounds& bounds() const { return bounds_; }

 private:
  friend class AdmissionTicket;
  void Release(const std::string& user, const std::string& conversation);
  static std::string UserKey(const core::Identity& who);

  const TurnAdmissionBounds bounds_;
  mutable absl::Mutex mu_;
  std::unordered_map<std::string, int> conversations_ ABSL_GUARDED_BY(mu_);
  std::unordered_map<std::string, int> users_ ABSL_GUARDED_BY(mu_);
  absl::BitGen random_ ABSL_GUARDED_BY(mu_);  // spreads the retry hints
};

}  // namespace omniforge::orchestrator
