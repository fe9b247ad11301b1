// The events of each turn as it streams them, kept so that a client whose
// stream broke can reattach by turn_id and read on after the last seq it
// saw: while the turn runs, and for a short window after it ended. Events
// are numbered here, from 1, as they are appended; every reader of a turn
// sees the same numbering. Bounded: a turn keeps at most
// `max_turn_bytes` of events (its oldest go first, never ones an attached
// reader has yet to read), the turns that ended keep at most
// `max_total_bytes` together, their logs counted with their events (the
// oldest ended go first), and an ended
// turn's events go after `keep_after_end`.
//
// No gRPC here: readers are woken through TurnLog::Waker.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "libs/core/clock.h"
#include "omniforge/orchestrator/v1/chat_service.pb.h"

namespace omniforge::orchestrator {

namespace pb = ::omniforge::orchestrator::v1;

struct TurnLogOptions {
  // How long an ended turn's events are kept for a reattach.
  std::chrono::milliseconds keep_after_end{60000};
  // The events one turn keeps (serialized bytes).
  size_t max_turn_bytes = size_t{1} << 20;
  // What all ended turns keep together: their events and their logs.
  size_t max_total_bytes = size_t{64} << 20;
  // The turn's thread waits (backpressure) while a reader is this many
  // events behind.
  size_t max_unread = 256;
};

// One turn's events. Thread-safe.
class TurnLog final {
 public:
  // Told (with no lock of the log held) that a reader may have more to read.
  class Waker {
   public:
    virtual ~Waker() = default;
    virtual void Wake() = 0;
  };
  using ReaderId = int;

  explicit TurnLog(TurnLogOptions options) : options_(options) {}

  // Numbers the event and keeps it. A text event joins the last event when
  // that is text no reader has taken yet (the seq stays the same); a
  // restart replaces that text, restart flag and all. Blocks
  // while an attached reader is max_unread events behind; an ended log
  // drops the event.
  void Append(pb::ChatEvent event);
  // The turn returned with `status` (the call's status for every reader).
  // Only the first call counts.
  void End(const absl::Status& status);

  // A reader that has seen the events up to `after_seq`: OUT_OF_RANGE
  // (RESUME_SEQ_OUT_OF_RANGE) when that is beyond the last event appended,
  // FAILED_PRECONDITION (RESUME_EVENTS_DROPPED) when events after it are no
  // longer kept.
  absl::StatusOr<ReaderId> Attach(int after_seq, std::shared_ptr<Waker> waker);
  // The reader reads no more; the turn no longer waits for it.
  void Detach(ReaderId reader);

  // The reader's next event (nullopt: none yet), or, when it has read all
  // and the turn ended, the turn's status.
  struct Next {
    std::optional<pb::ChatEvent> event;
    std::optional<absl::Status> ended;
  };
  Next Take(ReaderId reader);

  // The seq of the last event appended (0: none).
  int last_seq() const;
  bool ended() const;
  // The bytes of the events kept.
  size_t bytes() const;

 private:
  struct Reader {
    int position = 0;  // the last seq it took
    std::shared_ptr<Waker> waker;
  };
  void WakeAll() ABSL_LOCKS_EXCLUDED(mu_);
  void Trim() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool MustWait() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const TurnLogOptions options_;
  mutable absl::Mutex mu_;
  absl::CondVar taken_;
  std::deque<pb::ChatEvent> events_ ABSL_GUARDED_BY(mu_);
  size_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int first_seq_ ABSL_GUARDED_BY(mu_) = 1;  // of events_.front()
  int last_seq_ ABSL_GUARDED_BY(mu_) = 0;
  int sealed_seq_ ABSL_GUARDED_BY(mu_) = 0;  // the highest seq any reader took
  std::map<ReaderId, Reader> readers_ ABSL_GUARDED_BY(mu_);
  ReaderId next_reader_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<absl::Status> status_ ABSL_GUARDED_BY(mu_);
};

// The logs of the turns running or recently ended, by the conversation's
// key (RunningTurns::Key: tenant, user and conversation) and turn_id, so
// that another tenant's or user's turn is never found. Thread-safe.
class TurnLogs final {
 public:
  // `clock` must outlive this.
  TurnLogs(TurnLogOptions options, const core::Clock& clock) : options_(options), clock_(clock) {}

  std::shared_ptr<TurnLog> NewLog() const { return std::make_shared<TurnLog>(options_); }
  // Makes `log` findable under the turn (a later one under the same name
  // replaces it).
  void Register(const std::string& key, const std::string& turn_id, std::shared_ptr<TurnLog> log);
  // Ends the turn's log (TurnLog::End) and starts its window.
  void End(const std::string& key, const std::string& turn_id, const std::shared_ptr<TurnLog>& log,
           const absl::Status& status);
  // The turn's log while it runs or within its window; null otherwise.
  std::shared_ptr<TurnLog> Find(const std::string& key, const std::string& turn_id);
  // Forgets the logs of every turn of the conversation (it was deleted):
  // no reattach finds them; streams reading one read on.
  void Forget(const std::string& key);

 private:
  // An ended turn, in the order turns ended (the oldest first).
  struct Ended {
    int64_t micros;
    std::string name;            // its key in logs_
    std::weak_ptr<TurnLog> log;  // to tell it from a later log under the same name
    size_t bytes;                // what keeping it costs, from when it ended
  };
  // Ended turns past their window go, then the oldest ended while over the
  // total: the oldest are at the front, so each turn is looked at once.
  void Evict() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const TurnLogOptions options_;
  const core::Clock& clock_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<TurnLog>> logs_ ABSL_GUARDED_BY(mu_);
  std::deque<Ended> ended_ ABSL_GUARDED_BY(mu_);
  size_t ended_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace omniforge::orchestrator
