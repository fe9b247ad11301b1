#include "libs/core/thread_pool.h"

namespace omniforge::core {

ThreadPool::ThreadPool(int threads, size_t max_queued) : max_queued_(max_queued) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Run(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (auto& t : threads_) t.join();
}

bool ThreadPool::Submit(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    if (stopping_ || queue_.size() >= max_queued_) return false;
    queue_.push_back(Task{std::move(task), CurrentAmbient()});
  }
  ready_.notify_one();
  return true;
}

void ThreadPool::Run() {
  for (;;) {
    Task task;
    {
      std::unique_lock lock(mu_);
      ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    const ScopedAmbient ambient(std::move(task.ambient));
    task.run();
  }
}

}  // namespace omniforge::core
