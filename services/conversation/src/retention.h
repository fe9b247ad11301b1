// Periodically deletes conversations idle longer than their tenant's
// retention. Runs on its own thread; Stop() (or destruction) ends it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "absl/status/statusor.h"

namespace omniforge::conversation {

class RetentionPurger final {
 public:
  // `purge_batch` deletes up to a batch and returns how many it deleted; the
  // purger repeats it while batches come back full, then sleeps `interval`.
  using PurgeBatch = std::function<absl::StatusOr<int64_t>(int limit)>;

  RetentionPurger(PurgeBatch purge_batch, std::chrono::seconds interval, int batch_size = 500);
  ~RetentionPurger();
  void Stop();

  // One full pass (all full batches, until Stop); returns the total deleted.
  absl::StatusOr<int64_t> RunOnce();

 private:
  PurgeBatch purge_batch_;
  std::chrono::seconds interval_;
  int batch_size_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace omniforge::conversation
