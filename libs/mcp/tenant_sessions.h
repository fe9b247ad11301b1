// The sessions of one per-tenant MCP server (`per_tenant: true`): one
// client, hence one server process (stdio) or one MCP session (HTTP), per
// tenant, so that a server that keeps state never shows one tenant's state
// to another. A tenant's session starts with its first call, closes after
// `idle_timeout` without one, and at most `max_sessions` are open at once.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "libs/core/clock.h"
#include "libs/mcp/client.h"

namespace omniforge::mcp {

// Keys mcp.servers.<name>.tenant_idle_timeout_s and max_tenant_sessions.
struct TenantSessionLimits {
  std::chrono::seconds idle_timeout{300};
  size_t max_sessions = 32;
};

// The session used to list a per-tenant server's tools when no tenant's
// session is open. Tenant ids never hold '_' (core::ValidateIdentity), so
// it is nobody's.
inline constexpr char kCatalogTenant[] = "_catalog";

// Thread-safe. Leases must be released before the TenantSessions is
// destroyed.
class TenantSessions final {
  struct Entry;

 public:
  // Makes the (not yet connected) client of `tenant`'s session.
  using ClientFactory = std::function<std::unique_ptr<McpClient>(const std::string& tenant)>;

  // `clock` must outlive this.
  TenantSessions(std::string server_name, TenantSessionLimits limits, ClientFactory factory,
                 const core::Clock& clock);
  ~TenantSessions();  // CloseAll()

  TenantSessions(const TenantSessions&) = delete;
  TenantSessions& operator=(const TenantSessions&) = delete;

  // A session in use: it is not closed for idling, nor to make room, while
  // a lease on it lives. Releasing it (destruction) counts as its last use.
  class Lease final {
   public:
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();
    McpClient& client() const;
    const std::string& tenant() const;

   private:
    friend class TenantSessions;
    Lease(TenantSessions* owner, std::shared_ptr<Entry> entry);
    TenantSessions* owner_;
    std::shared_ptr<Entry> entry_;
  };

  // `tenant`'s session, made when it has none. When max_sessions are open,
  // the least recently used one without a call under way is closed first;
  // RESOURCE_EXHAUSTED, at once, when every open session has a call under
  // way (the operator raises max_tenant_sessions, or the caller retries).
  // UNAVAILABLE after CloseAll.
  absl::StatusOr<Lease> Acquire(const std::string& tenant);

  // The most recently used open session; when none is open,
  // Acquire(kCatalogTenant). For listing the server's tools.
  absl::StatusOr<Lease> AcquireAny();

  // Closes the sessions without a call under way whose last use is
  // `idle_timeout` or longer ago. Returns how many it closed.
  size_t CloseIdle();

  // Closes every session (calls under way fail with UNAVAILABLE); later
  // Acquires fail with UNAVAILABLE. Idempotent.
  void CloseAll();

  // The tenants with an open session, in id order.
  std::vector<std::string> Tenants() const;
  // Restarts of server processes of every session so far, closed ones too.
  int restarts() const;

 private:
  void Release(Entry& entry);
  // Closes `closing` (already out of the map) without mu_ held.
  void Close(const std::vector<std::shared_ptr<Entry>>& closing, const char* why);
  // Takes the least recently used idle session out to make room; false
  // when every session is busy.
  bool EvictOneLocked(std::vector<std::shared_ptr<Entry>>& closing)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string server_name_;
  const TenantSessionLimits limits_;
  const ClientFactory factory_;
  const core::Clock& clock_;

  mutable absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, std::shared_ptr<Entry>> sessions_ ABSL_GUARDED_BY(mu_);
  int closed_restarts_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace omniforge::mcp
