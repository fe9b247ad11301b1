// Every configured MCP server behind one catalog: tools named
// `<server>__<tool>` with a risk level, calls routed to their server.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "libs/mcp/client.h"
#include "libs/mcp/mcp_config.h"
#include "libs/mcp/tool_naming.h"
#include "libs/mcp/transport.h"
#include "libs/mcp/types.h"

namespace omniforge::mcp {

struct RegisteredTool {
  std::string name;    // namespaced: what a model calls
  std::string server;  // the configured server name
  Tool tool;           // as the server described it; tool.name is the server's own name
  // The config's tool_risk for it, else RiskFromAnnotations with the
  // server's trust.
  ToolRisk risk = ToolRisk::kHigh;
};

struct ServerStatus {
  std::string name;
  std::string endpoint;  // command line or URL
  bool listed = false;   // its tools are in the catalog
  size_t tools = 0;
  int restarts = 0;
  std::string last_error;  // of the latest Refresh; empty when it succeeded
};

// The transport a server's config asks for.
std::unique_ptr<McpTransport> MakeTransport(const McpServerConfig& config);

// Thread-safe: calls run concurrently (also to one server) and alongside
// Refresh.
class McpRegistry final {
 public:
  using TransportFactory = std::function<std::unique_ptr<McpTransport>(const McpServerConfig&)>;

  // Contacts no server yet; `factory` is for tests.
  explicit McpRegistry(McpConfig config, const TransportFactory& factory = MakeTransport);
  ~McpRegistry();  // Shutdown()

  McpRegistry(const McpRegistry&) = delete;
  McpRegistry& operator=(const McpRegistry&) = delete;

  // Connects to every server at once and lists its tools. A server that
  // fails keeps the tools of its last good listing. OK when every server
  // answered; otherwise UNAVAILABLE (or the failure's code when only one
  // server failed) naming each failure, the other servers' tools listed.
  absl::Status Refresh(const CallOptions& options = {});

  // Whether a server reported a changed tool list since the last Refresh.
  bool stale() const { return stale_.load(); }

  // Called (on a transport thread; it must not block) each time a server
  // reports a changed tool list (or an HTTP server forgot the session, see
  // McpClient::SetToolsChangedListener); an empty function stops the calls.
  void SetChangeListener(std::function<void()> listener);

  // The catalog, servers in config order, each server's tools in its order.
  std::vector<RegisteredTool> Tools() const;
  std::optional<RegisteredTool> FindTool(std::string_view name) const;

  // Calls a tool by its namespaced name. NOT_FOUND when the catalog has no
  // such tool; otherwise as McpClient::CallTool.
  absl::StatusOr<CallToolResult> CallTool(std::string_view name, std::string_view arguments_json,
                                          const CallOptions& options = {});

  std::vector<ServerStatus> Servers() const;

  // Shuts every server down; later calls fail with UNAVAILABLE. Idempotent.
  void Shutdown();

 private:
  struct Server {
    McpServerConfig config;
    std::string endpoint;
    std::unique_ptr<McpClient> client;
  };
  // What a server's last listing gave.
  struct Listing {
    std::optional<std::vector<Tool>> tools;  // the last good listing
    std::string last_error;
  };

  void RebuildCatalogLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::vector<std::unique_ptr<Server>> servers_;
  std::atomic<bool> stale_{false};
  absl::Mutex listener_mu_;
  std::function<void()> change_listener_ ABSL_GUARDED_BY(listener_mu_);
  absl::Mutex refresh_mu_;  // one Refresh at a time
  mutable absl::Mutex mu_;
  std::vector<Listing> listings_ ABSL_GUARDED_BY(mu_);  // one per server, in servers_'s order
  std::vector<RegisteredTool> catalog_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, size_t, std::less<>> by_name_ ABSL_GUARDED_BY(mu_);  // index into catalog_
};

}  // namespace omniforge::mcp
