#include "libs/mcp/registry.h"

#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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

McpRegistry::McpRegistry(McpConfig config, const TransportFactory& factory) {
  for (McpServerConfig& server_config : config.servers) {
    auto server = std::make_unique<Server>();
    std::unique_ptr<McpTransport> transport = factory(server_config);
    server->endpoint = transport->Describe();
    server->client = std::make_unique<McpClient>(std::move(transport), server_config.session);
    server->client->SetToolsChangedListener([this, name = server_config.name] {
      core::LogInfo("mcp server tool list changed", {{"server", name}});
      stale_ = true;
      absl::MutexLock lock(&listener_mu_);
      if (change_listener_) change_listener_();
    });
    server->config = std::move(server_config);
    servers_.push_back(std::move(server));
  }
  listings_.resize(servers_.size());
}

McpRegistry::~McpRegistry() { Shutdown(); }

void McpRegistry::SetChangeListener(std::function<void()> listener) {
  absl::MutexLock lock(&listener_mu_);
  change_listener_ = std::move(listener);
}

absl::Status McpRegistry::Refresh(const CallOptions& options) {
  absl::MutexLock refresh_lock(&refresh_mu_);
  stale_ = false;
  std::vector<absl::StatusOr<std::vector<Tool>>> listings(servers_.size(),
                                                          absl::UnknownError("not listed"));
  {
    std::vector<std::thread> threads;
    for (size_t i = 0; i < servers_.size(); ++i) {
      threads.emplace_back([this, i, &listings, &options] {
        listings[i] = servers_[i]->client->ListTools(options);
      });
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
  McpClient* client = nullptr;
  std::string tool_name;
  {
    absl::MutexLock lock(&mu_);
    const auto it = by_name_.find(name);
    if (it == by_name_.end()) {
      return absl::NotFoundError(absl::StrCat("no MCP tool named '", Sv(name), "'"));
    }
    const RegisteredTool& entry = catalog_[it->second];
    tool_name = entry.tool.name;
    for (const auto& server : servers_) {
      if (server->config.name == entry.server) client = server->client.get();
    }
  }
  return client->CallTool(tool_name, arguments_json, options);
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
    status.restarts = server->client->restarts();
    status.last_error = listing.last_error;
    statuses.push_back(std::move(status));
  }
  return statuses;
}

void McpRegistry::Shutdown() {
  for (const auto& server : servers_) server->client->Shutdown();
}

}  // namespace omniforge::mcp
