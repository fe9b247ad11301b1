#include "services/executor/src/tool_list_refresher.h"

#include <string>

#include "libs/core/logging.h"

namespace omniforge::executor {

ToolListRefresher::ToolListRefresher(mcp::McpRegistry& registry, ToolCatalog& catalog,
                                     std::vector<ToolProvider*> providers, RefresherOptions options)
    : registry_(registry), catalog_(catalog), providers_(std::move(providers)), options_(options) {
  registry_.SetChangeListener([this] {
    std::lock_guard lock(mu_);
    changed_ = true;
    wake_.notify_one();
  });
  thread_ = std::thread([this] { Run(); });
}

ToolListRefresher::~ToolListRefresher() {
  registry_.SetChangeListener(nullptr);
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    wake_.notify_one();
  }
  thread_.join();
}

int ToolListRefresher::TotalRestarts() const {
  int restarts = 0;
  for (const mcp::ServerStatus& server : registry_.Servers()) restarts += server.restarts;
  return restarts;
}

bool ToolListRefresher::AnyUnlisted() const {
  for (const mcp::ServerStatus& server : registry_.Servers()) {
    if (!server.last_error.empty() || !server.listed) return true;
  }
  return false;
}

absl::Status ToolListRefresher::RefreshNow() {
  mcp::CallOptions within;
  within.deadline = std::chrono::system_clock::now() + options_.refresh_timeout;
  absl::Status listed = registry_.Refresh(within);
  for (ToolProvider* provider : providers_) {
    // A new list the catalog refuses (a name clash) leaves the old one.
    if (absl::Status reloaded = catalog_.Reload(*provider); !reloaded.ok()) {
      core::LogWarn("tool list not reloaded", {{"error", std::string(reloaded.message())}});
    }
  }
  core::LogInfo("mcp tool lists reloaded", {{"tools", std::to_string(catalog_.size())}});
  return listed;
}

void ToolListRefresher::Run() {
  using Clock = std::chrono::steady_clock;
  int restarts_seen = TotalRestarts();
  Clock::time_point next_retry = Clock::now() + options_.retry_unavailable;
  std::unique_lock lock(mu_);
  while (!stopping_) {
    wake_.wait_for(lock, options_.check_interval, [this] { return stopping_ || changed_; });
    if (stopping_) break;
    const bool changed = changed_;
    changed_ = false;
    lock.unlock();
    // A restarted stdio server is a new process: its tools may differ.
    const int restarts = TotalRestarts();
    const bool retry = Clock::now() >= next_retry && AnyUnlisted();
    if (changed || restarts != restarts_seen || retry) {
      if (absl::Status status = RefreshNow(); !status.ok()) {
        core::LogWarn("some MCP servers are unavailable",
                      {{"error", std::string(status.message())}});
      }
      restarts_seen = TotalRestarts();
      next_retry = Clock::now() + options_.retry_unavailable;
    }
    lock.lock();
  }
}

}  // namespace omniforge::executor
