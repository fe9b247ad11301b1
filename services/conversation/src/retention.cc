#include "services/conversation/src/retention.h"

#include <string>

#include "libs/core/logging.h"
#include "libs/core/metrics.h"

namespace omniforge::conversation {

RetentionPurger::RetentionPurger(PurgeBatch purge_batch, std::chrono::seconds interval,
                                 int batch_size)
    : purge_batch_(std::move(purge_batch)), interval_(interval), batch_size_(batch_size) {
  thread_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      lock.unlock();
      auto purged = RunOnce();
      if (!purged.ok()) {
        core::LogWarn("retention purge failed",
                      {{"error", std::string(purged.status().message())}});
      } else if (*purged > 0) {
        core::LogInfo("retention purge", {{"conversations_deleted", std::to_string(*purged)}});
      }
      lock.lock();
      wake_.wait_for(lock, interval_, [this] { return stopping_.load(); });
    }
  });
}

RetentionPurger::~RetentionPurger() { Stop(); }

void RetentionPurger::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

absl::StatusOr<int64_t> RetentionPurger::RunOnce() {
  static core::Counter& deleted_total =
      core::MetricsRegistry::Global().GetCounter("omniforge_conversation_retention_deleted_total",
                                                 "Conversations deleted by the retention purge.");
  int64_t total = 0;
  for (;;) {
    auto deleted = purge_batch_(batch_size_);
    if (!deleted.ok()) return deleted.status();
    total += *deleted;
    deleted_total.Inc(static_cast<double>(*deleted));
    if (*deleted < batch_size_ || stopping_) return total;
  }
}

}  // namespace omniforge::conversation
