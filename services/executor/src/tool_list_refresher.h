// Keeps the executor's catalog in step with its MCP servers while it runs:
// a server that sends notifications/tools/list_changed (a Streamable HTTP
// server on its GET stream), an HTTP server that forgot the session, or a
// stdio server that was restarted (its new process may offer other tools),
// is listed again and the MCP and domain tools in the catalog are replaced
// with what the servers offer now. Servers that could not be listed are retried every
// `retry_unavailable`. No restart of the executor is needed.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "libs/mcp/registry.h"
#include "services/executor/src/tool_catalog.h"

namespace omniforge::executor {

struct RefresherOptions {
  // How often restarts are looked for (no server is contacted for that).
  std::chrono::milliseconds check_interval{1000};
  // How often servers whose last listing failed are tried again.
  std::chrono::milliseconds retry_unavailable{30'000};
  // The time one re-listing of every server may take.
  std::chrono::milliseconds refresh_timeout{30'000};
};

class ToolListRefresher final {
 public:
  // Starts watching. `registry`, `catalog` and each provider (already added
  // to `catalog`, listing from `registry`) must outlive the refresher.
  ToolListRefresher(mcp::McpRegistry& registry, ToolCatalog& catalog,
                    std::vector<ToolProvider*> providers, RefresherOptions options = {});
  ~ToolListRefresher();  // stops watching; a re-listing under way finishes first

  ToolListRefresher(const ToolListRefresher&) = delete;
  ToolListRefresher& operator=(const ToolListRefresher&) = delete;

  // Lists every server again and reloads the providers, on this thread.
  // The registry's error when a server could not be listed (the others'
  // tools are reloaded all the same).
  absl::Status RefreshNow();

 private:
  void Run();
  int TotalRestarts() const;
  bool AnyUnlisted() const;

  mcp::McpRegistry& registry_;
  ToolCatalog& catalog_;
  const std::vector<ToolProvider*> providers_;
  const RefresherOptions options_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool changed_ = false;  // a server reported a new tool list
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace omniforge::executor
