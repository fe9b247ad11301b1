#include "libs/mcp/tenant_sessions.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/core/logging.h"

namespace omniforge::mcp {

// in_use and last_used are guarded by the owner's mu_.
struct TenantSessions::Entry {
  std::string tenant;
  std::unique_ptr<McpClient> client;
  int in_use = 0;  // leases alive
  core::TimePoint last_used;
};

TenantSessions::Lease::Lease(TenantSessions* owner, std::shared_ptr<Entry> entry)
    : owner_(owner), entry_(std::move(entry)) {}

TenantSessions::Lease::Lease(Lease&& other) noexcept
    : owner_(other.owner_), entry_(std::move(other.entry_)) {}

TenantSessions::Lease::~Lease() {
  if (entry_ != nullptr) owner_->Release(*entry_);
}

McpClient& TenantSessions::Lease::client() const { return *entry_->client; }

const std::string& TenantSessions::Lease::tenant() const { return entry_->tenant; }

TenantSessions::TenantSessions(std::string server_name, TenantSessionLimits limits,
                               ClientFactory factory, const core::Clock& clock)
    : server_name_(std::move(server_name)),
      limits_(limits),
      factory_(std::move(factory)),
      clock_(clock) {}

TenantSessions::~TenantSessions() { CloseAll(); }

void TenantSessions::Release(Entry& entry) {
  absl::MutexLock lock(&mu_);
  --entry.in_use;
  entry.last_used = clock_.Now();
}

bool TenantSessions::EvictOneLocked(std::vector<std::shared_ptr<Entry>>& closing) {
  auto oldest = sessions_.end();
  for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
    if (it->second->in_use > 0) continue;
    if (oldest == sessions_.end() || it->second->last_used < oldest->second->last_used) {
      oldest = it;
    }
  }
  if (oldest == sessions_.end()) return false;
  closing.push_back(std::move(oldest->second));
  sessions_.erase(oldest);
  return true;
}

absl::StatusOr<TenantSessions::Lease> TenantSessions::Acquire(const std::string& tenant) {
  std::vector<std::shared_ptr<Entry>> closing;
  std::shared_ptr<Entry> entry;
  {
    absl::MutexLock lock(&mu_);
    if (closed_) {
      return absl::UnavailableError(absl::StrCat("MCP server '", server_name_, "' is shut down"));
    }
    auto it = sessions_.find(tenant);
    if (it == sessions_.end()) {
      while (sessions_.size() >= limits_.max_sessions) {
        if (!EvictOneLocked(closing)) {
          return absl::ResourceExhaustedError(absl::StrCat(
              "MCP server '", server_name_, "' has ", sessions_.size(),
              " tenant sessions open (max_tenant_sessions), each with a call under way; "
              "try again shortly"));
        }
      }
      auto made = std::make_shared<Entry>();
      made->tenant = tenant;
      made->client = factory_(tenant);
      it = sessions_.emplace(tenant, std::move(made)).first;
    }
    entry = it->second;
    ++entry->in_use;
    entry->last_used = clock_.Now();
  }
  Close(closing, "to make room (max_tenant_sessions)");
  return Lease(this, std::move(entry));
}

absl::StatusOr<TenantSessions::Lease> TenantSessions::AcquireAny() {
  std::string tenant = kCatalogTenant;
  {
    absl::MutexLock lock(&mu_);
    const Entry* latest = nullptr;
    for (const auto& [name, entry] : sessions_) {
      if (latest == nullptr || entry->last_used > latest->last_used) latest = entry.get();
    }
    if (latest != nullptr) tenant = latest->tenant;
  }
  return Acquire(tenant);
}

size_t TenantSessions::CloseIdle() {
  std::vector<std::shared_ptr<Entry>> closing;
  {
    absl::MutexLock lock(&mu_);
    const core::TimePoint now = clock_.Now();
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      const Entry& entry = *it->second;
      if (entry.in_use == 0 && now - entry.last_used >= limits_.idle_timeout) {
        closing.push_back(std::move(it->second));
        it = sessions_.erase(it);
      } else {
        ++it;
      }
    }
  }
  const size_t closed = closing.size();
  Close(closing, "idle (tenant_idle_timeout_s)");
  return closed;
}

void TenantSessions::CloseAll() {
  std::vector<std::shared_ptr<Entry>> closing;
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    for (auto& [tenant, entry] : sessions_) closing.push_back(std::move(entry));
    sessions_.clear();
  }
  Close(closing, "shutting down");
}

void TenantSessions::Close(const std::vector<std::shared_ptr<Entry>>& closing, const char* why) {
  for (const std::shared_ptr<Entry>& entry : closing) {
    core::LogInfo("mcp tenant session closed",
                  {{"server", server_name_}, {"tenant", entry->tenant}, {"why", why}});
    entry->client->Shutdown();
    absl::MutexLock lock(&mu_);
    closed_restarts_ += entry->client->restarts();
  }
}

std::vector<std::string> TenantSessions::Tenants() const {
  std::vector<std::string> tenants;
  absl::MutexLock lock(&mu_);
  for (const auto& [tenant, entry] : sessions_) tenants.push_back(tenant);
  return tenants;
}

int TenantSessions::restarts() const {
  absl::MutexLock lock(&mu_);
  int restarts = closed_restarts_;
  for (const auto& [tenant, entry] : sessions_) restarts += entry->client->restarts();
  return restarts;
}

}  // namespace omniforge::mcp
