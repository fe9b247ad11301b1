// Group commit: concurrent writers hand their items to a queue; committer
// threads each take everything waiting (up to a batch size) and write it in
// one transaction, so N concurrent writes cost about one commit (one WAL
// flush) instead of N. Each item's callback runs only after the batch that
// holds it has committed, or with its error.
//
// Committers take turns: one at a time collects a batch and runs its
// statement. A pipelined commit function hands the turn on as soon as only
// the commit (the wait for the WAL flush) is left, so the next batch runs
// while the previous one is being flushed, and the database never runs two
// batches' statements at once on a machine that has few cores to give.
//
// The queue is bounded: when the database falls behind, new items are
// rejected at once instead of piling up in memory.
// Thread-safe. Destruction stops accepting items and commits what is queued.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"

namespace omniforge::pg {

template <typename Item>
class GroupCommitQueue final {
 public:
  // Writes a batch and completes every item in it (success or error).
  using CommitFn = std::function<void(std::vector<Item>& batch)>;
  // The same, calling `executed` (at most once) when the batch's work is
  // done and only its commit is left: another committer may then start.
  using PipelinedCommitFn =
      std::function<void(std::vector<Item>& batch, const std::function<void()>& executed)>;
  // Completes an item that cannot be queued (full, or stopping).
  using RejectFn = std::function<void(Item& item, absl::Status why)>;

  // `linger`: how long a committer that finds items waiting lets more
  // gather before it takes them. For writes nobody waits on: a batch then
  // holds what arrived in that time rather than the one item that woke the
  // committer, so a steady trickle costs a transaction (and a wake-up) per
  // `linger` instead of one per item. Zero takes them at once.
  GroupCommitQueue(int committers, size_t max_batch, size_t max_queued, CommitFn commit,
                   RejectFn reject, std::chrono::microseconds linger = {})
      : GroupCommitQueue(
            committers, max_batch, max_queued,
            [commit = std::move(commit)](std::vector<Item>& batch, const std::function<void()>&) {
              commit(batch);
            },
            std::move(reject), linger) {}

  GroupCommitQueue(int committers, size_t max_batch, size_t max_queued, PipelinedCommitFn commit,
                   RejectFn reject, std::chrono::microseconds linger = {})
      : max_batch_(max_batch),
        max_queued_(max_queued),
        linger_(linger),
        commit_(std::move(commit)),
        reject_(std::move(reject)) {
    for (int i = 0; i < committers; ++i) threads_.emplace_back([this] { Run(); });
  }

  GroupCommitQueue(const GroupCommitQueue&) = delete;
  GroupCommitQueue& operator=(const GroupCommitQueue&) = delete;

  ~GroupCommitQueue() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    ready_.notify_all();
    for (auto& t : threads_) t.join();
  }

  void Submit(Item item) {
    absl::Status why;
    {
      std::lock_guard lock(mu_);
      if (stopping_) {
        why = absl::UnavailableError("service is shutting down");
      } else if (queue_.size() >= max_queued_) {
        why = absl::ResourceExhaustedError("too many writes waiting for the database; retry");
      } else {
        queue_.push_back(std::move(item));
        ready_.notify_one();
        return;
      }
    }
    reject_(item, why);
  }

 private:
  void Run() {
    std::vector<Item> batch;
    for (;;) {
      std::unique_lock turn(turn_mu_);
      {
        std::unique_lock lock(mu_);
        ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping and drained
        if (linger_.count() > 0 && queue_.size() < max_batch_ && !stopping_) {
          // Asleep rather than waiting on ready_, which every Submit would
          // wake: the point is to wake once for all of them.
          lock.unlock();
          std::this_thread::sleep_for(linger_);
          lock.lock();
        }
        while (!queue_.empty() && batch.size() < max_batch_) {
          batch.push_back(std::move(queue_.front()));
          queue_.pop_front();
        }
      }
      const std::function<void()> executed = [&turn] {
        if (turn.owns_lock()) turn.unlock();
      };
      commit_(batch, executed);
      batch.clear();
    }
  }

  const size_t max_batch_;
  const size_t max_queued_;
  const std::chrono::microseconds linger_;
  PipelinedCommitFn commit_;
  RejectFn reject_;
  std::mutex turn_mu_;  // held by the committer collecting or running a batch
  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<Item> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace omniforge::pg
