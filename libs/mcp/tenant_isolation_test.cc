// MCP servers and tenants: the per_tenant and identity_headers config,
// TenantServerConfig's {tenant}, one session per tenant in the registry
// (first use, idle close, the cap), and the caller's identity headers
// reaching a Streamable HTTP server over loopback.
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libs/core/clock.h"
#include "libs/core/config.h"
#include "libs/mcp/mcp_config.h"
#include "libs/mcp/registry.h"
#include "libs/mcp/testing/scripted_transport.h"
#include "nlohmann/json.hpp"

namespace omniforge::mcp {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::ScriptedTransport;
using ::testing::SizeIs;

absl::StatusOr<McpConfig> ConfigFrom(const std::string& yaml, absl::Status* finish = nullptr) {
  absl::StatusOr<core::ConfigReader> reader =
      core::ConfigReader::FromString(yaml, [](const std::string&) { return std::nullopt; });
  if (!reader.ok()) return reader.status();
  absl::StatusOr<McpConfig> config = ReadMcpConfig(*reader);
  if (finish != nullptr) *finish = reader->Finish();
  return config;
}

// A clock the test moves.
class ManualClock final : public core::Clock {
 public:
  core::TimePoint Now() const override { return core::TimePointFromMicros(micros_.load()); }
  void Advance(std::chrono::seconds by) {
    micros_ += std::chrono::duration_cast<std::chrono::microseconds>(by).count();
  }

 private:
  std::atomic<int64_t> micros_{1'700'000'000'000'000};
};

core::Identity Caller(const std::string& tenant, const std::string& user = "u1") {
  return core::Identity{tenant, user};
}

CallOptions For(const core::Identity& caller) {
  CallOptions options;
  options.caller = caller;
  return options;
}

TEST(TenantConfigTest, ReadsPerTenantAndIdentityHeaders) {
  absl::Status finish;
  absl::StatusOr<McpConfig> config = ConfigFrom(R"(
mcp:
  servers:
    memory:
      transport: stdio
      command: node
      args: [server.js, "--dir={tenant}"]
      env: {MEMORY_FILE_PATH: "/var/lib/m/{tenant}.json"}
      per_tenant: true
      run_as: {uid: 65534, gid: 65533}
      sandbox: required
      read_paths: [/srv/memory-server]
      write_paths: ["/var/lib/m/{tenant}"]
      tenant_idle_timeout_s: 60
      max_tenant_sessions: 3
    search:
      transport: http
      url: http://127.0.0.1:1/mcp
      identity_headers: {tenant: X-Omniforge-Tenant, user: X-Omniforge-User}
)",
                                                &finish);
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_TRUE(finish.ok()) << finish;
  ASSERT_THAT(config->servers, SizeIs(2));
  const McpServerConfig& memory = config->servers[0];
  EXPECT_TRUE(memory.per_tenant);
  EXPECT_EQ(memory.tenant_sessions.idle_timeout, std::chrono::seconds(60));
  EXPECT_EQ(memory.tenant_sessions.max_sessions, 3u);
  ASSERT_TRUE(memory.stdio.run_as.has_value());
  EXPECT_EQ(memory.stdio.run_as->uid, 65534u);
  EXPECT_EQ(memory.stdio.run_as->gid, 65533u);
  EXPECT_EQ(memory.stdio.sandbox, SandboxMode::kRequired);
  EXPECT_THAT(memory.stdio.read_paths, ElementsAre("/srv/memory-server"));
  const McpServerConfig search = config->servers[1];
  EXPECT_FALSE(search.per_tenant);
  EXPECT_EQ(search.identity_headers.tenant, "X-Omniforge-Tenant");
  EXPECT_EQ(search.identity_headers.user, "X-Omniforge-User");

  // Each tenant's process gets its own file; a tenant id cannot climb out.
  const McpServerConfig acme = TenantServerConfig(memory, "acme.eu");
  EXPECT_EQ(acme.stdio.env.at("MEMORY_FILE_PATH"), "/var/lib/m/acme_2eeu.json");
  EXPECT_THAT(acme.stdio.args, ElementsAre("server.js", "--dir=acme_2eeu"));
  EXPECT_THAT(acme.stdio.write_paths, ElementsAre("/var/lib/m/acme_2eeu"));
  EXPECT_EQ(TenantServerConfig(memory, "..").stdio.env.at("MEMORY_FILE_PATH"),
            "/var/lib/m/_2e_2e.json");
  EXPECT_EQ(TenantServerConfig(memory, kCatalogTenant).stdio.env.at("MEMORY_FILE_PATH"),
            "/var/lib/m/_catalog.json");
  EXPECT_NE(TenantToken("a.b"), TenantToken("a:b"));
}

TEST(TenantConfigTest, RefusesWhatCannotIsolate) {
  absl::Status finish;
  absl::StatusOr<McpConfig> config = ConfigFrom(R"(
mcp:
  servers:
    shared:
      transport: stdio
      command: node
      env: {MEMORY_FILE_PATH: "/var/lib/m/{tenant}.json"}
    web:
      transport: http
      url: http://127.0.0.1:1/mcp
      identity_headers: {tenant: "X Tenant", org: X-Org}
    unpinned:
      transport: stdio
      command: npx
      args: [-y, "@modelcontextprotocol/server-memory"]
    halfuser:
      transport: stdio
      command: node
      run_as: {uid: 1000}
    loose:
      transport: stdio
      command: node
      sandbox: sometimes
      write_paths: [data]
    tenantpath:
      transport: stdio
      command: node
      write_paths: ["/var/lib/m/{tenant}"]
)");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string unpinned =
      "mcp.servers.unpinned.args: the npm package '@modelcontextprotocol/server-memory' has no "
      "exact version";
  for (const std::string& part :
       {std::string("mcp.servers.shared.per_tenant: {tenant} is used"),
        std::string("identity_headers.tenant: 'X Tenant'"),
        std::string("identity_headers.org: only tenant and user"),
        std::string("mcp.servers.halfuser.run_as: both uid and gid"),
        std::string("mcp.servers.loose.sandbox: 'sometimes' is not best_effort, required or off"),
        std::string("mcp.servers.loose.write_paths: 'data' is not an absolute path"),
        std::string("mcp.servers.tenantpath.per_tenant: {tenant} is used"), unpinned}) {
    EXPECT_THAT(config.status().message(), HasSubstr(part));
  }
}

TEST(TenantConfigTest, TenantKeysOfASharedServerAreUnknown) {
  absl::Status finish;
  absl::StatusOr<McpConfig> config = ConfigFrom(R"(
mcp:
  servers:
    calc:
      transport: stdio
      command: node
      max_tenant_sessions: 4
)",
                                                &finish);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT(finish.message(), HasSubstr("mcp.servers.calc.max_tenant_sessions"));
}

// A scripted memory-style server: `remember` stores its text argument,
// `recall` answers what this process stored. `opens` counts processes.
struct MemoryServers {
  std::mutex mu;
  std::vector<ScriptedTransport*> transports;
  std::vector<std::string> tenant_tokens;  // from each process's env

  McpRegistry::TransportFactory Factory() {
    return [this](const McpServerConfig& config) -> std::unique_ptr<McpTransport> {
      auto stored = std::make_shared<std::vector<std::string>>();
      auto transport = std::make_unique<
          ScriptedTransport>(ScriptedTransport::Server([stored](const json& m,
                                                                ScriptedTransport& t) {
        json result;
        if (m["method"] == "tools/list") {
          result = {{"tools", json::array({{{"name", "remember"}}, {{"name", "recall"}}})}};
        } else if (m["params"]["name"] == "remember") {
          stored->push_back(m["params"]["arguments"]["text"].get<std::string>());
          result = {{"content", json::array()}};
        } else {
          result = {{"content", json::array({{{"type", "text"}, {"text", json(*stored).dump()}}})}};
        }
        t.Deliver({{"jsonrpc", "2.0"}, {"id", m["id"]}, {"result", result}});
        return absl::OkStatus();
      }));
      std::lock_guard lock(mu);
      transports.push_back(transport.get());
      const auto token = config.stdio.env.find("TENANT");
      tenant_tokens.push_back(token == config.stdio.env.end() ? "" : token->second);
      return transport;
    };
  }
};

McpConfig PerTenantMemory(size_t max_sessions = 8) {
  McpConfig config;
  McpServerConfig server;
  server.name = "memory";
  server.session.server_name = "memory";
  server.per_tenant = true;
  server.stdio.env = {{"TENANT", "{tenant}"}};
  server.tenant_sessions.idle_timeout = std::chrono::seconds(300);
  server.tenant_sessions.max_sessions = max_sessions;
  config.servers.push_back(server);
  return config;
}

std::string Recall(McpRegistry& registry, const std::string& tenant) {
  absl::StatusOr<CallToolResult> result =
      registry.CallTool("memory__recall", "{}", For(Caller(tenant)));
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? result->content.at(0).text : "";
}

TEST(PerTenantRegistryTest, EachTenantHasItsOwnSessionStartedOnFirstUse) {
  MemoryServers servers;
  ManualClock clock;
  McpRegistry registry(PerTenantMemory(), servers.Factory(), clock);
  ASSERT_TRUE(registry.Refresh().ok());
  EXPECT_THAT(registry.Tools(), SizeIs(2));  // listed once, from a catalog session
  EXPECT_THAT(registry.TenantsOf("memory"), ElementsAre(kCatalogTenant));

  ASSERT_TRUE(
      registry.CallTool("memory__remember", R"({"text":"acme secret"})", For(Caller("acme"))).ok());
  EXPECT_EQ(Recall(registry, "acme"), R"(["acme secret"])");
  EXPECT_EQ(Recall(registry, "globex"), "[]");
  EXPECT_THAT(registry.TenantsOf("memory"), ElementsAre(kCatalogTenant, "acme", "globex"));
  EXPECT_THAT(servers.tenant_tokens, ElementsAre("_catalog", "acme", "globex"));

  // No tenant, no call: a per-tenant server never guesses whose session.
  absl::StatusOr<CallToolResult> anonymous = registry.CallTool("memory__recall", "{}");
  EXPECT_EQ(anonymous.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(anonymous.status().message(), HasSubstr("memory"));

  // A later listing reuses a tenant's open session: no process more.
  ASSERT_TRUE(registry.Refresh().ok());
  EXPECT_THAT(servers.transports, SizeIs(3));
  const std::vector<ServerStatus> status = registry.Servers();
  EXPECT_TRUE(status[0].per_tenant);
  EXPECT_EQ(status[0].tenant_sessions, 3u);
}

TEST(PerTenantRegistryTest, IdleSessionsCloseAndComeBackEmptyOnlyForTheirTenant) {
  MemoryServers servers;
  ManualClock clock;
  McpRegistry registry(PerTenantMemory(), servers.Factory(), clock);
  ASSERT_TRUE(registry.Refresh().ok());
  ASSERT_TRUE(registry.CallTool("memory__remember", R"({"text":"a"})", For(Caller("acme"))).ok());
  clock.Advance(std::chrono::seconds(200));
  ASSERT_TRUE(registry.CallTool("memory__remember", R"({"text":"g"})", For(Caller("globex"))).ok());
  EXPECT_EQ(registry.CloseIdleSessions(), 0u);  // nobody idle for 300 s yet

  clock.Advance(std::chrono::seconds(150));  // acme and the catalog idle 350 s, globex 150 s
  EXPECT_EQ(registry.CloseIdleSessions(), 2u);
  EXPECT_THAT(registry.TenantsOf("memory"), ElementsAre("globex"));
  EXPECT_EQ(Recall(registry, "globex"), R"(["g"])");
  EXPECT_EQ(Recall(registry, "acme"), "[]");  // a new process for acme
  EXPECT_THAT(servers.transports, SizeIs(4));
}

TEST(PerTenantRegistryTest, OverTheCapTheLeastRecentlyUsedIdleSessionCloses) {
  MemoryServers servers;
  ManualClock clock;
  McpRegistry registry(PerTenantMemory(2), servers.Factory(), clock);
  ASSERT_TRUE(registry.Refresh().ok());  // the catalog session is one of the two
  clock.Advance(std::chrono::seconds(1));
  EXPECT_EQ(Recall(registry, "acme"), "[]");
  clock.Advance(std::chrono::seconds(1));
  EXPECT_EQ(Recall(registry, "globex"), "[]");  // the catalog session made room
  EXPECT_THAT(registry.TenantsOf("memory"), ElementsAre("acme", "globex"));
  clock.Advance(std::chrono::seconds(1));
  EXPECT_EQ(Recall(registry, "acme"), "[]");  // acme is now the most recent
  clock.Advance(std::chrono::seconds(1));
  EXPECT_EQ(Recall(registry, "initech"), "[]");
  EXPECT_THAT(registry.TenantsOf("memory"), ElementsAre("acme", "initech"));
}

TEST(PerTenantRegistryTest, WhenEverySessionIsBusyANewTenantIsRefusedAtOnce) {
  std::atomic<bool> release{false};
  std::atomic<bool> started{false};
  std::thread answerer;  // answers acme's call when released
  ManualClock clock;
  McpRegistry registry(
      PerTenantMemory(1),
      [&](const McpServerConfig&) -> std::unique_ptr<McpTransport> {
        return std::make_unique<ScriptedTransport>(
            ScriptedTransport::Server([&](const json& m, ScriptedTransport& t) {
              const json answer = {
                  {"jsonrpc", "2.0"},
                  {"id", m["id"]},
                  {"result", m["method"] == "tools/list"
                                 ? json{{"tools", json::array({{{"name", "slow"}}})}}
                                 : json{{"content", json::array()}}}};
              if (m["method"] == "tools/list" || release) {
                t.Deliver(answer);
                return absl::OkStatus();
              }
              answerer = std::thread([&release, &started, &t, answer] {
                started = true;
                while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
                t.Deliver(answer);
              });
              return absl::OkStatus();
            }));
      },
      clock);
  ASSERT_TRUE(registry.Refresh().ok());
  std::thread busy(
      [&] { EXPECT_TRUE(registry.CallTool("memory__slow", "{}", For(Caller("acme"))).ok()); });
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  absl::StatusOr<CallToolResult> refused =
      registry.CallTool("memory__slow", "{}", For(Caller("globex")));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.status().message(), HasSubstr("max_tenant_sessions"));
  release = true;
  busy.join();
  answerer.join();
  // Once acme's call is over its session may make room.
  EXPECT_TRUE(registry.CallTool("memory__slow", "{}", For(Caller("globex"))).ok());
  EXPECT_THAT(registry.TenantsOf("memory"), ElementsAre("globex"));
}

// A Streamable HTTP endpoint on loopback that keeps one MCP session per
// initialize and records, per JSON-RPC method, the identity headers seen.
class IdentityEndpoint {
 public:
  struct Seen {
    std::string method;
    std::string session;
    std::string tenant;
    std::string user;
  };

  IdentityEndpoint() {
    server_.Post("/mcp", [this](const httplib::Request& req, httplib::Response& res) {
      const json message = json::parse(req.body);
      const std::string method = message.value("method", "");
      std::string session = req.get_header_value("Mcp-Session-Id");
      if (method == "initialize") session = "s" + std::to_string(++sessions_);
      {
        std::lock_guard lock(mu_);
        seen_.push_back({method, session, req.get_header_value("X-Omniforge-Tenant"),
                         req.get_header_value("X-Omniforge-User")});
      }
      if (!message.contains("id")) {
        res.status = 202;
        return;
      }
      json result = {{"content", json::array({{{"type", "text"}, {"text", "ok"}}})}};
      if (method == "initialize") {
        res.set_header("Mcp-Session-Id", session);
        result = {{"protocolVersion", "2025-06-18"},
                  {"capabilities", {{"tools", json::object()}}},
                  {"serverInfo", {{"name", "identity"}, {"version", "1"}}}};
      } else if (method == "tools/list") {
        result = {{"tools", json::array({{{"name", "whoami"}}})}};
      }
      res.set_content(json{{"jsonrpc", "2.0"}, {"id", message["id"]}, {"result", result}}.dump(),
                      "application/json");
    });
    server_.Get("/mcp", [](const httplib::Request&, httplib::Response& res) { res.status = 405; });
    server_.Delete("/mcp",
                   [](const httplib::Request&, httplib::Response& res) { res.status = 200; });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~IdentityEndpoint() {
    // stop() is a no-op until the accept loop runs; httplib offers no signal for that.
    while (!server_.is_running()) std::this_thread::yield();
    server_.stop();
    thread_.join();
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/mcp"; }
  std::vector<Seen> Calls() {
    std::lock_guard lock(mu_);
    std::vector<Seen> calls;
    for (const Seen& seen : seen_) {
      if (seen.method == "tools/call" || seen.method == "initialize") calls.push_back(seen);
    }
    return calls;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<int> sessions_{0};
  std::mutex mu_;
  std::vector<Seen> seen_;
};

McpConfig IdentityServer(const std::string& url, bool per_tenant) {
  McpConfig config;
  McpServerConfig server;
  server.name = "web";
  server.session.server_name = "web";
  server.transport = TransportKind::kHttp;
  server.http.server_name = "web";
  server.http.url = url;
  server.identity_headers = {"X-Omniforge-Tenant", "X-Omniforge-User"};
  server.per_tenant = per_tenant;
  config.servers.push_back(server);
  return config;
}

TEST(IdentityHeadersTest, EachCallCarriesItsCallersTenantAndUser) {
  IdentityEndpoint endpoint;
  McpRegistry registry(IdentityServer(endpoint.url(), /*per_tenant=*/false));
  ASSERT_TRUE(registry.Refresh().ok());
  ASSERT_TRUE(registry.CallTool("web__whoami", "{}", For(Caller("acme", "alice"))).ok());
  ASSERT_TRUE(registry.CallTool("web__whoami", "{}", For(Caller("globex", "bob"))).ok());
  EXPECT_EQ(registry.CallTool("web__whoami", "{}").status().code(),
            absl::StatusCode::kUnauthenticated);
  const std::vector<IdentityEndpoint::Seen> calls = endpoint.Calls();
  ASSERT_THAT(calls, SizeIs(3));
  EXPECT_EQ(calls[0].method, "initialize");
  EXPECT_EQ(calls[0].tenant, "");  // a shared session belongs to no tenant
  EXPECT_EQ(calls[1].tenant, "acme");
  EXPECT_EQ(calls[1].user, "alice");
  EXPECT_EQ(calls[2].tenant, "globex");
  EXPECT_EQ(calls[2].user, "bob");
  EXPECT_EQ(calls[1].session, calls[2].session);
}

TEST(IdentityHeadersTest, PerTenantHttpSessionsAreOpenedUnderTheirTenant) {
  IdentityEndpoint endpoint;
  McpRegistry registry(IdentityServer(endpoint.url(), /*per_tenant=*/true));
  ASSERT_TRUE(registry.Refresh().ok());
  ASSERT_TRUE(registry.CallTool("web__whoami", "{}", For(Caller("acme", "alice"))).ok());
  ASSERT_TRUE(registry.CallTool("web__whoami", "{}", For(Caller("globex", "bob"))).ok());
  ASSERT_TRUE(registry.CallTool("web__whoami", "{}", For(Caller("acme", "carol"))).ok());
  std::map<std::string, std::string> session_of_tenant;
  std::vector<std::string> users;
  for (const IdentityEndpoint::Seen& seen : endpoint.Calls()) {
    if (seen.method == "initialize") {
      EXPECT_TRUE(session_of_tenant.emplace(seen.tenant, seen.session).second) << seen.tenant;
      continue;
    }
    EXPECT_EQ(session_of_tenant.at(seen.tenant), seen.session);
    users.push_back(seen.tenant + "/" + seen.user);
  }
  EXPECT_THAT(session_of_tenant, SizeIs(3));  // the catalog's (no tenant), acme's, globex's
  EXPECT_TRUE(session_of_tenant.contains(""));
  EXPECT_NE(session_of_tenant.at("acme"), session_of_tenant.at("globex"));
  EXPECT_THAT(users, ElementsAre("acme/alice", "globex/bob", "acme/carol"));
}

}  // namespace
}  // namespace omniforge::mcp
