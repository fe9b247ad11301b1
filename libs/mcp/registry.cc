#include "libs/mcp/registry.h"

#include <algorithm>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "libs/core/identity.h"
#include "libs/core/logging.h"
#include "libs/mcp/http_transport.h"
#include "libs/mcp/json_rpc.h"
#include "libs/mcp/stdio_transport.h"

namespace omniforge::mcp {

std::unique_ptr<McpTransport> MakeTransport(const McpServerConfig& config) {
  if (config.transport == TransportKind::kHttp) {
    return std::make_unique<HttpTransport>(config.http);
  }
  return std::make_unique<StdioTransport>(config.stdio);
}

namespace {

// How often the idle reaper looks: a quarter of the shortest idle timeout,
// between a second and a minute.
std::chrono::milliseconds ReapPeriod(std::chrono::seconds idle_timeout) {
  const std::chrono::milliseconds quarter = idle_timeout / 4;
  return std::clamp<std::chrono::milliseconds>(quarter, std::chrono::seconds(1),
                                               std::chrono::seconds(60));
}

// A per_tenant server's endpoint, `{tenant}` left in.
std::string DescribeConfig(const McpServerConfig& config) {
  if (config.transport == TransportKind::kHttp) return config.http.url;
  std::vector<std::string> parts = {config.stdio.command};
  parts.insert(parts.end(), config.stdio.args.begin(), config.stdio.args.end());
  return absl::StrJoin(parts, " ");
}

// The identity headers of one call: the user's always, the tenant's only
// for a shared server (a tenant's own session sends it on every request).
HttpHeaders IdentityHeadersOf(const McpServerConfig& config, const core::Identity& caller) {
  HttpHeaders headers;
  const IdentityHeaders& names = config.identity_headers;
  if (!names.tenant.empty() && !config.per_tenant) {
    headers.emplace_back(names.tenant, caller.tenant_id);
  }
  if (!names.user.empty()) headers.emplace_back(names.user, caller.user_id);
  return headers;
}

bool NeedsCaller(const McpServerConfig& config) {
  return config.per_tenant || !config.identity_headers.tenant.empty() ||
         !config.identity_headers.user.empty();
}

}  // namespace

McpRegistry::McpRegistry(McpConfig config, const TransportFactory& factory,
                         const core::Clock& clock)
    : factory_(factory) {
  std::optional<std::chrono::milliseconds> reap_period;
  for (McpServerConfig& server_config : config.servers) {
    auto server = std::make_unique<Server>();
    server->config = std::move(server_config);
    const McpServerConfig& shared = server->config;
    if (shared.per_tenant) {
      server->endpoint = DescribeConfig(shared);
      server->tenants = std::make_unique<TenantSessions>(
          shared.name, shared.tenant_sessions,
          [this, &shared](const std::string& tenant) {
            return MakeClient(TenantServerConfig(shared, tenant));
          },
          clock);
      const auto period = ReapPeriod(shared.tenant_sessions.idle_timeout);
      reap_period = std::min(reap_period.value_or(period), period);
    } else {
      server->client = MakeClient(shared, &server->endpoint);
    }
    servers_.push_back(std::move(server));
  }
  listings_.resize(servers_.size());
  if (reap_period) reaper_ = std::thread(&McpRegistry::RunIdleReaper, this, *reap_period);
}

std::unique_ptr<McpClient> McpRegistry::MakeClient(const McpServerConfig& config,
                                                   std::string* endpoint) {
  std::unique_ptr<McpTransport> transport = factory_(config);
  if (endpoint != nullptr) *endpoint = transport->Describe();
  auto client = std::make_unique<McpClient>(std::move(transport), config.session);
  client->SetToolsChangedListener([this, name = config.name] {
    core::LogInfo("mcp server tool list changed", {{"server", name}});
    stale_ = true;
    absl::MutexLock lock(&listener_mu_);
    if (change_listener_) change_listener_();
  });
  return client;
}

void McpRegistry::RunIdleReaper(std::chrono::milliseconds period) {
  for (;;) {
    {
      absl::MutexLock lock(&reaper_mu_);
      reaper_cv_.WaitWithTimeout(&reaper_mu_, absl::FromChrono(period));
      if (reaper_stop_) return;
    }
    CloseIdleSessions();
  }
}

size_t McpRegistry::CloseIdleSessions() {
  size_t closed = 0;
  for (const auto& server : servers_) {
    if (server->tenants) closed += server->tenants->CloseIdle();
  }
  return closed;
}

std::vector<std::string> McpRegistry::TenantsOf(std::string_view server) const {
  for (const auto& candidate : servers_) {
    if (candidate->config.name == server && candidate->tenants) {
      return candidate->tenants->Tenants();
    }
  }
  return {};
}

McpRegistry::~McpRegistry() { Shutdown(); }

void McpRegistry::SetChangeListener(std::function<void()> listener) {
  absl::MutexLock lock(&listener_mu_);
  change_listener_ = std::move(listener);
}

absl::StatusOr<std::vector<Tool>> McpRegistry::ListServer(Server& server,
                                                          const CallOptions& options) {
  if (!server.tenants) return server.client->ListTools(options);
  absl::StatusOr<TenantSessions::Lease> lease = server.tenants->AcquireAny();
  if (!lease.ok()) return lease.status();
  return lease->client().ListTools(options);
}

absl::Status McpRegistry::Refresh(const CallOptions& options) {
  absl::MutexLock refresh_lock(&refresh_mu_);
  stale_ = false;
  std::vector<absl::StatusOr<std::vector<Tool>>> listings(servers_.size(),
                                                          absl::UnknownError("not listed"));
  {
    std::vector<std::thread> threads;
    for (size_t i = 0; i < servers_.size(); ++i) {
      threads.emplace_back(
          [this, i, &listings, &options] { listings[i] = ListServer(*servers_[i], options); });
    }
    for (std::thread& thread : threads) thread.join();
  }
  std::vector<std::string> failures;
  absl::StatusCode failure_code = absl::StatusCode::kOk;
  absl::MutexLock lock(&mu_);
  for (size_t i = 0; i < servers_.size(); ++i) {
    const Server& server = *servers_[i];
    Listing& listing = listings_[i];
    if (listings[i].ok()) {
      listing.tools = std::move(*listings[i]);
      listing.last_error.clear();
      continue;
    }
    listing.last_error = std::string(listings[i].status().message());
    failures.push_back(absl::StrCat(server.config.name, ": ", listing.last_error));
    failure_code =
        failures.size() == 1 ? listings[i].status().code() : absl::StatusCode::kUnavailable;
    core::LogWarn("mcp server not listed",
                  {{"server", server.config.name}, {"error", listing.last_error}});
  }
  RebuildCatalogLocked();
  if (failures.empty()) return absl::OkStatus();
  return absl::Status(failure_code,
                      absl::StrCat("MCP servers not listed: ", absl::StrJoin(failures, "; ")));
}

void McpRegistry::RebuildCatalogLocked() {
  catalog_.clear();
  by_name_.clear();
  for (size_t i = 0; i < servers_.size(); ++i) {
    const Server* server = servers_[i].get();
    const std::optional<std::vector<Tool>>& tools = listings_[i].tools;
    if (!tools) continue;
    for (const Tool& tool : *tools) {
      RegisteredTool entry;
      entry.server = server->config.name;
      entry.tool = tool;
      const auto risk = server->config.tool_risk.find(tool.name);
      entry.risk = risk != server->config.tool_risk.end()
                       ? risk->second
                       : RiskFromAnnotations(tool.annotations, server->config.trust);
      entry.name = NamespacedToolName(entry.server, tool.name);
      if (by_name_.contains(entry.name)) {
        entry.name = DisambiguatedToolName(entry.server, tool.name);
      }
      if (by_name_.contains(entry.name)) {
        core::LogWarn("mcp tool skipped: its name is taken",
                      {{"server", entry.server}, {"tool", tool.name}, {"name", entry.name}});
        continue;
      }
      by_name_.emplace(entry.name, catalog_.size());
      catalog_.push_back(std::move(entry));
    }
  }
}

std::vector<RegisteredTool> McpRegistry::Tools() const {
  absl::MutexLock lock(&mu_);
  return catalog_;
}

std::optional<RegisteredTool> McpRegistry::FindTool(std::string_view name) const {
  absl::MutexLock lock(&mu_);
  const auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  return catalog_[it->second];
}

absl::StatusOr<CallToolResult> McpRegistry::CallTool(std::string_view name,
                                                     std::string_view arguments_json,
                                                     const CallOptions& options) {
  Server* server = nullptr;
  std::string tool_name;
  {
    absl::MutexLock lock(&mu_);
    const auto it = by_name_.find(name);
    if (it == by_name_.end()) {
      return absl::NotFoundError(absl::StrCat("no MCP tool named '", Sv(name), "'"));
    }
    const RegisteredTool& entry = catalog_[it->second];
    tool_name = entry.tool.name;
    for (const auto& candidate : servers_) {
      if (candidate->config.name == entry.server) server = candidate.get();
    }
  }
  if (!NeedsCaller(server->config))
    return server->client->CallTool(tool_name, arguments_json, options);
  if (absl::Status valid = core::ValidateIdentity(options.caller); !valid.ok()) {
    return absl::Status(valid.code(),
                        absl::StrCat("MCP server '", server->config.name,
                                     "' needs the caller's identity: ", valid.message()));
  }
  CallOptions with_identity = options;
  const HttpHeaders identity = IdentityHeadersOf(server->config, options.caller);
  with_identity.headers.insert(with_identity.headers.end(), identity.begin(), identity.end());
  if (!server->tenants) return server->client->CallTool(tool_name, arguments_json, with_identity);
  absl::StatusOr<TenantSessions::Lease> lease = server->tenants->Acquire(options.caller.tenant_id);
  if (!lease.ok()) return lease.status();
  return lease->client().CallTool(tool_name, arguments_json, with_identity);
}

std::vector<ServerStatus> McpRegistry::Servers() const {
  std::vector<ServerStatus> statuses;
  absl::MutexLock lock(&mu_);
  for (size_t i = 0; i < servers_.size(); ++i) {
    const Server* server = servers_[i].get();
    const Listing& listing = listings_[i];
    ServerStatus status;
    status.name = server->config.name;
    status.endpoint = server->endpoint;
    status.listed = listing.tools.has_value();
    status.tools = listing.tools ? listing.tools->size() : 0;
    status.restarts = server->tenants ? server->tenants->restarts() : server->client->restarts();
    status.per_tenant = server->tenants != nullptr;
    if (server->tenants) status.tenant_sessions = server->tenants->Tenants().size();
    status.last_error = listing.last_error;
    statuses.push_back(std::move(status));
  }
  return statuses;
}

void McpRegistry::Shutdown() {
  {
    absl::MutexLock lock(&reaper_mu_);
    reaper_stop_ = true;
    reaper_cv_.SignalAll();
  }
  if (reaper_.joinable() && reaper_.get_id() != std::this_thread::get_id()) reaper_.join();
  for (const auto& server : servers_) {
    if (server->tenants) {
      server->tenants->CloseAll();
    } else {
      server->client->Shutdown();
    }
  }
}

}  // namespace omniforge::mcp
