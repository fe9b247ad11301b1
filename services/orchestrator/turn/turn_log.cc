#include "services/orchestrator/turn/turn_log.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "libs/core/error_catalog.h"
#include "libs/core/error_reason.h"

namespace omniforge::orchestrator {
namespace {

constexpr size_t kDequeBlockBytes = 512;

}  // namespace

void TurnLog::Append(pb::ChatEvent event) {
  {
    absl::MutexLock lock(&mu_);
    while (!status_.has_value() && MustWait()) taken_.Wait(&mu_);
    if (status_.has_value()) return;
    if (event.has_text() && !events_.empty() && events_.back().has_text() &&
        last_seq_ > sealed_seq_) {
      // Text no reader has taken yet joins the last piece; a restart
      // replaces it (and keeps saying so: earlier pieces were taken).
      pb::ChatEvent& last = events_.back();
      bytes_ -= last.ByteSizeLong();
      if (event.text().restart()) {
        *last.mutable_text() = std::move(*event.mutable_text());
      } else {
        last.mutable_text()->mutable_delta()->append(event.text().delta());
      }
      bytes_ += last.ByteSizeLong();
    } else {
      event.set_seq(++last_seq_);
      bytes_ += event.ByteSizeLong();
      events_.push_back(std::move(event));
    }
    Trim();
  }
  WakeAll();
}

void TurnLog::End(const absl::Status& status) {
  {
    absl::MutexLock lock(&mu_);
    if (status_.has_value()) return;
    status_ = status;
    taken_.SignalAll();
  }
  WakeAll();
}

absl::StatusOr<TurnLog::ReaderId> TurnLog::Attach(int after_seq, std::shared_ptr<Waker> waker) {
  ReaderId id = 0;
  {
    absl::MutexLock lock(&mu_);
    if (after_seq > last_seq_) {
      return core::WithReason(absl::OutOfRangeError(absl::StrCat(
                                  "resume_after_seq: ", after_seq,
                                  " is beyond the last event of the turn (", last_seq_, ")")),
                              core::kReasonResumeSeqOutOfRange,
                              {{"last_seq", std::to_string(last_seq_)}});
    }
    if (after_seq < first_seq_ - 1) {
      return core::WithReason(
          absl::FailedPreconditionError(absl::StrCat(
              "resume_after_seq: the events after ", after_seq,
              " are no longer kept; reattach once the turn has ended for its stored outcome")),
          core::kReasonResumeEventsDropped);
    }
    id = next_reader_++;
    readers_[id] = Reader{after_seq, std::move(waker)};
    // What the reader has seen no longer changes (text is not joined to it).
    sealed_seq_ = std::max(sealed_seq_, after_seq);
  }
  WakeAll();
  return id;
}

void TurnLog::Detach(ReaderId reader) {
  absl::MutexLock lock(&mu_);
  readers_.erase(reader);
  Trim();
  taken_.SignalAll();
}

TurnLog::Next TurnLog::Take(ReaderId reader) {
  absl::MutexLock lock(&mu_);
  auto it = readers_.find(reader);
  if (it == readers_.end()) return {};
  int& position = it->second.position;
  if (position < last_seq_) {
    const size_t index = static_cast<size_t>(position + 1 - first_seq_);
    pb::ChatEvent event = events_[index];
    position = event.seq();
    sealed_seq_ = std::max(sealed_seq_, position);
    taken_.SignalAll();
    return {std::move(event), std::nullopt};
  }
  return {std::nullopt, status_};
}

int TurnLog::last_seq() const {
  absl::MutexLock lock(&mu_);
  return last_seq_;
}

bool TurnLog::ended() const {
  absl::MutexLock lock(&mu_);
  return status_.has_value();
}

size_t TurnLog::bytes() const {
  absl::MutexLock lock(&mu_);
  return bytes_;
}

void TurnLog::WakeAll() {
  std::vector<std::shared_ptr<Waker>> wakers;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, reader] : readers_) wakers.push_back(reader.waker);
  }
  for (const auto& waker : wakers) waker->Wake();
}

// Over the turn's bound, the oldest events go, but never one an attached
// reader has yet to take.
void TurnLog::Trim() {
  int slowest = last_seq_;
  for (const auto& [id, reader] : readers_) slowest = std::min(slowest, reader.position);
  while (bytes_ > options_.max_turn_bytes && !events_.empty() && first_seq_ <= slowest) {
    bytes_ -= events_.front().ByteSizeLong();
    events_.pop_front();
    ++first_seq_;
  }
}

bool TurnLog::MustWait() const {
  for (const auto& [id, reader] : readers_) {
    if (static_cast<size_t>(last_seq_ - reader.position) >= options_.max_unread) return true;
  }
  return false;
}

void TurnLogs::Register(const std::string& key, const std::string& turn_id,
                        std::shared_ptr<TurnLog> log) {
  absl::MutexLock lock(&mu_);
  logs_[absl::StrCat(key, "/", turn_id)] = std::move(log);
}

void TurnLogs::End(const std::string& key, const std::string& turn_id,
                   const std::shared_ptr<TurnLog>& log, const absl::Status& status) {
  log->End(status);
  std::string name = absl::StrCat(key, "/", turn_id);
  // What keeping the turn costs besides its events: the log itself, its
  // first block of events and its entries here.
  const size_t bytes =
      log->bytes() + sizeof(TurnLog) + kDequeBlockBytes + sizeof(Ended) + 2 * name.size();
  absl::MutexLock lock(&mu_);
  auto it = logs_.find(name);
  if (it != logs_.end() && it->second == log) {
    ended_.push_back(Ended{clock_.NowMicros(), std::move(name), log, bytes});
    ended_bytes_ += bytes;
  }
  Evict();
}

std::shared_ptr<TurnLog> TurnLogs::Find(const std::string& key, const std::string& turn_id) {
  absl::MutexLock lock(&mu_);
  Evict();
  auto it = logs_.find(absl::StrCat(key, "/", turn_id));
  return it == logs_.end() ? nullptr : it->second;
}

void TurnLogs::Forget(const std::string& key) {
  const std::string prefix = absl::StrCat(key, "/");
  absl::MutexLock lock(&mu_);
  absl::erase_if(logs_, [&prefix](const auto& entry) { return entry.first.starts_with(prefix); });
  for (const Ended& ended : ended_) {
    if (ended.name.starts_with(prefix)) ended_bytes_ -= ended.bytes;
  }
  std::erase_if(ended_, [&prefix](const Ended& ended) { return ended.name.starts_with(prefix); });
}

void TurnLogs::Evict() {
  const int64_t oldest_kept =
      clock_.NowMicros() -
      std::chrono::duration_cast<std::chrono::microseconds>(options_.keep_after_end).count();
  while (!ended_.empty() &&
         (ended_.front().micros <= oldest_kept || ended_bytes_ > options_.max_total_bytes)) {
    const Ended& gone = ended_.front();
    auto it = logs_.find(gone.name);
    if (it != logs_.end() && it->second == gone.log.lock()) logs_.erase(it);
    ended_bytes_ -= gone.bytes;
    ended_.pop_front();
  }
}

}  // namespace omniforge::orchestrator
