// Group commit: concurrent writers hand their items to a queue; a few
// committer threads each take everything waiting (up to a batch size) and
// write it in one transaction, so N concurrent writes cost about one commit
// (one WAL flush) instead of N. Each item's callback runs only after the
// batch that holds it has committed, or with its error.
//
// Thread-safe. Destruction stops accepting items and commits what is queued.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace omniforge::pg {

template <typename Item>
class GroupCommitQueue final {
 public:
  // Writes a batch and completes every item in it (success or error).
  using CommitFn = std::function<void(std::vector<Item>& batch)>;
  // Completes an item that cannot be queued because the queue is stopping.
  using RejectFn = std::function<void(Item& item)>;

  GroupCommitQueue(int committers, size_t max_batch, CommitFn commit, RejectFn reject)
      : max_batch_(max_batch), commit_(std::move(commit)), reject_(std::move(reject)) {
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
    {
      std::lock_guard lock(mu_);
      if (!stopping_) {
        queue_.push_back(std::move(item));
        ready_.notify_one();
        return;
      }
    }
    reject_(item);
  }

 private:
  void Run() {
    std::vector<Item> batch;
    for (;;) {
      {
        std::unique_lock lock(mu_);
        ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping and drained
        while (!queue_.empty() && batch.size() < max_batch_) {
          batch.push_back(std::move(queue_.front()));
          queue_.pop_front();
        }
        // Another committer can start on what is left while this one writes.
        if (!queue_.empty()) ready_.notify_one();
      }
      commit_(batch);
      batch.clear();
    }
  }

  const size_t max_batch_;
  CommitFn commit_;
  RejectFn reject_;
  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<Item> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace omniforge::pg
