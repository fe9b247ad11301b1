// Every configured MCP server behind one catalog: tools named
// `<server>__<tool>` with a risk level, calls routed to their server (to
// the caller's tenant's session of a per_tenant server).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "libs/core/clock.h"
#include "libs/mcp/client.h"
#include "libs/mcp/mcp_config.h"
#include "libs/mcp/tenant_sessions.h"
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
  bool per_tenant = false;
  size_t tenant_sessions = 0;  // open now (per_tenant)
};

// The transport a server's config asks for.
std::unique_ptr<McpTransport> MakeTransport(const McpServerConfig& config);

// Thread-safe: calls run concurrently (also to one server) and alongside
// Refresh. A per_tenant server's sessions idle for its tenant_idle_timeout_s
// are closed by a thread of the registry's (CloseIdleSessions).
class McpRegistry final {
 public:
  // Gets a per_tenant server's config for one tenant (TenantServerConfig).
  using TransportFactory = std::function<std::unique_ptr<McpTransport>(const McpServerConfig&)>;

  // Contacts no server yet; `factory` and `clock` (which must outlive the
  // registry; it times idle sessions) are for tests.
  explicit McpRegistry(McpConfig config, const TransportFactory& factory = MakeTransport,
                       const core::Clock& clock = core::SystemClock());
  ~McpRegistry();  // Shutdown()

  McpRegistry(const McpRegistry&) = delete;
  McpRegistry& operator=(const McpRegistry&) = delete;

  // Connects to every server at once and lists its tools (a per_tenant
  // server's from its most recently used session, or a session of its own,
  // kCatalogTenant, when none is open). A server that fails keeps the tools
  // of its last good listing. OK when every server
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

  // Calls a tool by its namespaced name, for options.caller: on the
  // caller's tenant's session of a per_tenant server (TenantSessions::Acquire),
  // with the caller's tenant and user in the server's identity_headers.
  // NOT_FOUND when the catalog has no such tool; UNAUTHENTICATED or
  // INVALID_ARGUMENT (core::ValidateIdentity) when the server is per_tenant
  // or has identity_headers and options.caller is incomplete;
  // RESOURCE_EXHAUSTED when the server's tenant sessions are all busy;
  // otherwise as McpClient::CallTool.
  absl::StatusOr<CallToolResult> CallTool(std::string_view name, std::string_view arguments_json,
                                          const CallOptions& options = {});

  std::vector<ServerStatus> Servers() const;

  // Closes the per_tenant servers' sessions that idled for their
  // tenant_idle_timeout_s; returns how many. The registry's thread calls it
  // every few seconds; tests call it after moving their clock.
  size_t CloseIdleSessions();

  // The tenants with a session open on per_tenant server `server` (tests).
  std::vector<std::string> TenantsOf(std::string_view server) const;

  // Shuts every server down; later calls fail with UNAVAILABLE. Idempotent.
  void Shutdown();

 private:
  struct Server {
    McpServerConfig config;
    std::string endpoint;
    std::unique_ptr<McpClient> client;        // shared servers
    std::unique_ptr<TenantSessions> tenants;  // per_tenant servers
  };
  // What a server's last listing gave.
  struct Listing {
    std::optional<std::vector<Tool>> tools;  // the last good listing
    std::string last_error;
  };

  void RebuildCatalogLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A client made for `config`, whose tool-list changes mark the catalog
  // stale; `endpoint` (when given) gets its transport's description.
  std::unique_ptr<McpClient> MakeClient(const McpServerConfig& config,
                                        std::string* endpoint = nullptr);
  absl::StatusOr<std::vector<Tool>> ListServer(Server& server, const CallOptions& options);
  void RunIdleReaper(std::chrono::milliseconds period);

  TransportFactory factory_;

  std::vector<std::unique_ptr<Server>> servers_;
  std::atomic<bool> stale_{false};
  absl::Mutex listener_mu_;
  std::function<void()> change_listener_ ABSL_GUARDED_BY(listener_mu_);
  absl::Mutex refresh_mu_;  // one Refresh at a time
  mutable absl::Mutex mu_;
  std::vector<Listing> listings_ ABSL_GUARDED_BY(mu_);  // one per server, in servers_'s order
  std::vector<RegisteredTool> catalog_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, size_t, std::less<>> by_name_ ABSL_GUARDED_BY(mu_);  // index into catalog_

  // The thread that closes idle tenant sessions (only with per_tenant servers).
  absl::Mutex reaper_mu_;
  absl::CondVar reaper_cv_;
  bool reaper_stop_ ABSL_GUARDED_BY(reaper_mu_) = false;
  std::thread reaper_;
};

}  // namespace omniforge::mcp
