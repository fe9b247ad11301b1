// A fixed set of threads running submitted tasks from a bounded queue, for
// blocking work (database, model calls) that gRPC reactors must not do on
// their own threads. A task runs under its submitter's ambient (trace
// context and log fields, ambient.h). Thread-safe; destruction finishes
// queued tasks.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "libs/core/ambient.h"

namespace omniforge::core {

class ThreadPool final {
 public:
  ThreadPool(int threads, size_t max_queued);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // False when the queue is full or the pool is stopping; the task is dropped
  // and the caller answers for it (e.g. RESOURCE_EXHAUSTED).
  bool Submit(std::function<void()> task);

 private:
  void Run();

  const size_t max_queued_;
  std::mutex mu_;
  std::condition_variable ready_;
  struct Task {
    std::function<void()> run;
    Ambient ambient;  // the submitter's
  };
  std::deque<Task> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace omniforge::core
