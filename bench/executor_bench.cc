// Executor InvokeTool latency over gRPC (loopback) against the real service
// stack and a real PostgreSQL (synchronous_commit on), one client calling
// one after another as the orchestrator's planner does:
//   invoke_p50/p99_ms        get_agent (a built-in read tool, one indexed
//                            lookup and the agent's latest runs) on a user
//                            with 50 agents
//   list_p50/p99_ms          list_agents of those 50 agents
//   keyed_write_p50/p99_ms   run_agent with an idempotency key: claim the
//                            key, load the agent, record the run, run its
//                            step (get_agent), store the run, record the
//                            result
//   mcp_invoke_p50/p99_ms    everything__echo: the echo tool of
//                            @modelcontextprotocol/server-everything over
//                            stdio (tests/node), when node is installed
// A DIAG line gives get_agent through the ToolRuntime without gRPC.
// Prints a final line: RESULT invoke_p50_ms=... invoke_p99_ms=...
#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <vector>

#include "libs/core/grpc_identity.h"
#include "libs/core/ids.h"
#include "libs/core/logging.h"
#include "libs/core/server.h"
#include "libs/core/thread_pool.h"
#include "libs/mcp/registry.h"
#include "libs/pg/migrate.h"
#include "libs/pg/pool.h"
#include "libs/seal/test_keys.h"
#include "omniforge/executor/v1/executor_service.grpc.pb.h"
#include "services/executor/src/grpc_service.h"
#include "services/executor/src/mcp_tools.h"
#include "services/executor/src/pg_invocation_ledger.h"
#include "services/executor/src/pg_run_store.h"
#include "services/executor/src/platform_tools.h"
#include "tests/support/test_database.h"

namespace omniforge::pg {
const std::vector<Migration>& ExecutorMigrations();
}

namespace omniforge::executor {
namespace {

using Clock = std::chrono::steady_clock;

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[i];
}

class Bench {
 public:
  explicit Bench(const omniforge::testing::TestDatabase& db) {
    if (!pg::ApplyMigrations(db.owner_dsn(), "executor", pg::ExecutorMigrations()).ok()) {
      std::abort();
    }
    pool_ = *pg::PgPool::Create({.dsn = db.service_dsn("executor"), .pool_size = 16});
    keys_ = std::make_unique<seal::KeyRing>(*pool_, kExecutorKeys, seal::TestMasterKey(), "bench");
    tools_ = std::make_unique<PlatformTools>(*pool_, *keys_);
    if (!catalog_.AddProvider(*tools_).ok()) std::abort();
    AddEverythingServer();
    ledger_ = std::make_unique<PgInvocationLedger>(*pool_, *keys_);
    runtime_ = std::make_unique<ToolRuntime>(catalog_, ledger_.get());
    // run_agent runs the agent (local mode: its steps).
    run_store_ = std::make_unique<PgRunStore>(*pool_, *keys_);
    runner_ =
        std::make_unique<AgentRunner>(*run_store_, *runtime_, AgentFactory(), core::SystemClock());
    tools_->SetRunner(runner_.get());
    workers_ = std::make_unique<core::ThreadPool>(16, 4096);
    service_ = std::make_unique<ExecutorGrpcService>(*runtime_, *workers_);
    core::ServerOptions options;
    options.host = "127.0.0.1";
    server_ = std::make_unique<core::ServiceServer>(options);
    server_->AddService(service_.get());
    if (!server_->Start().ok()) std::abort();
    // One long-lived channel, as the orchestrator keeps.
    stub_ = pb::ExecutorService::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(server_->port()), grpc::InsecureChannelCredentials()));
  }
  ~Bench() { server_->Shutdown(); }

  // Milliseconds per call of `calls` calls after `warmup` unmeasured ones.
  std::vector<double> Measure(const std::string& tool, const std::string& args, int calls,
                              int warmup, bool keyed) {
    std::vector<double> ms;
    ms.reserve(static_cast<size_t>(calls));
    for (int i = 0; i < warmup + calls; ++i) {
      pb::InvokeToolRequest request;
      request.set_tool_name(tool);
      request.set_arguments_json(args);
      if (keyed) request.set_idempotency_key(core::NewUuid());
      grpc::ClientContext context;
      core::AttachIdentity(context, who_, core::kExecutorAudience);
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
      pb::InvokeToolResponse response;
      const auto start = Clock::now();
      const grpc::Status status = stub_->InvokeTool(&context, request, &response);
      const double elapsed =
          std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      if (!status.ok() || response.is_error()) {
        std::fprintf(stderr, "%s failed: %s %s\n", tool.c_str(), status.error_message().c_str(),
                     response.result_json().c_str());
        std::abort();
      }
      if (i >= warmup) ms.push_back(elapsed);
    }
    return ms;
  }

  // The same calls straight into the ToolRuntime (no gRPC, no thread hop):
  // how much of the latency is the tool and its database round trip.
  std::vector<double> MeasureDirect(const std::string& tool, const std::string& args, int calls,
                                    int warmup) {
    std::vector<double> ms;
    for (int i = 0; i < warmup + calls; ++i) {
      const auto start = Clock::now();
      auto out = runtime_->Invoke(who_, {tool, args, ""},
                                  std::chrono::system_clock::now() + std::chrono::seconds(5));
      const double elapsed =
          std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      if (!out.ok() || out->is_error) std::abort();
      if (i >= warmup) ms.push_back(elapsed);
    }
    return ms;
  }

  bool has_mcp() const { return mcp_tools_ != nullptr; }

  void Seed(int agents) {
    for (int i = 0; i < agents; ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "agent-%03d", i);
      const std::string args =
          std::string(R"({"name": ")") + name +
          R"(", "description": "Sums up the week's updates", "instructions": )"
          R"("Read the pages and write five bullets.", "schedule": "weekly", )"
          R"("steps": [{"tool": "get_agent", "arguments": {"agent": "agent-000"}}]})";
      Measure("create_agent", args, 1, 0, false);
    }
    for (int i = 0; i < 5; ++i) Measure("run_agent", R"({"agent": "agent-007"})", 1, 0, false);
  }

 private:
  // server-everything over stdio, when node and the npm package are there.
  void AddEverythingServer() {
    const auto script = std::filesystem::path(OMNIFORGE_SOURCE_DIR) /
                        "tests/node/node_modules/@modelcontextprotocol/server-everything/dist/"
                        "index.js";
    if (std::system("command -v node >/dev/null 2>&1") != 0 || !std::filesystem::exists(script)) {
      std::fprintf(stderr, "node or server-everything missing: no MCP figures\n");
      return;
    }
    mcp::McpServerConfig server;
    server.name = "everything";
    server.stdio.server_name = "everything";
    server.stdio.command = "node";
    server.stdio.args = {script.string(), "stdio"};
    registry_ = std::make_unique<mcp::McpRegistry>(mcp::McpConfig{{server}});
    mcp::CallOptions within;
    within.deadline = std::chrono::system_clock::now() + std::chrono::seconds(30);
    if (!registry_->Refresh(within).ok()) std::abort();
    mcp_tools_ = std::make_unique<McpTools>(*registry_);
    if (!catalog_.AddProvider(*mcp_tools_).ok()) std::abort();
  }

  core::Identity who_{"bench-tenant", "bench-user"};
  std::unique_ptr<pg::PgPool> pool_;
  std::unique_ptr<seal::KeyRing> keys_;
  std::unique_ptr<PlatformTools> tools_;
  ToolCatalog catalog_;
  std::unique_ptr<mcp::McpRegistry> registry_;
  std::unique_ptr<McpTools> mcp_tools_;
  std::unique_ptr<PgInvocationLedger> ledger_;
  std::unique_ptr<ToolRuntime> runtime_;
  std::unique_ptr<PgRunStore> run_store_;
  std::unique_ptr<AgentRunner> runner_;
  std::unique_ptr<core::ThreadPool> workers_;
  std::unique_ptr<ExecutorGrpcService> service_;
  std::unique_ptr<core::ServiceServer> server_;
  std::unique_ptr<pb::ExecutorService::Stub> stub_;
};

}  // namespace
}  // namespace omniforge::executor

// NOLINTNEXTLINE(bugprone-exception-escape): a bench that cannot set up ends on the exception
int main(int argc, char** argv) {
  using namespace omniforge;
  CLI::App app{"executor InvokeTool benchmark"};
  int calls = 5000;
  int warmup = 500;
  app.add_option("--calls", calls, "measured calls per tool");
  app.add_option("--warmup", warmup, "unmeasured calls first");
  CLI11_PARSE(app, argc, argv);
  core::InitLogging("executor_bench", "warn");

  testing::TestDatabase database;
  executor::Bench bench(database);
  bench.Seed(50);
  const auto read = bench.Measure("get_agent", R"({"agent": "agent-007"})", calls, warmup, false);
  const auto list = bench.Measure("list_agents", "{}", calls, warmup, false);
  const auto keyed =
      bench.Measure("run_agent", R"({"agent": "agent-011"})", calls / 5, warmup / 5, true);
  const auto direct = bench.MeasureDirect("get_agent", R"({"agent": "agent-007"})", calls, warmup);
  std::printf("DIAG get_agent without gRPC (ToolRuntime::Invoke)  p50 %.3f ms  p99 %.3f ms\n",
              executor::Percentile(direct, 0.5), executor::Percentile(direct, 0.99));
  std::printf("get_agent    p50 %.3f ms  p90 %.3f ms  p99 %.3f ms  (%d calls)\n",
              executor::Percentile(read, 0.5), executor::Percentile(read, 0.9),
              executor::Percentile(read, 0.99), calls);
  std::printf("list_agents  p50 %.3f ms  p99 %.3f ms  (50 agents)\n",
              executor::Percentile(list, 0.5), executor::Percentile(list, 0.99));
  std::printf("run_agent with idempotency key  p50 %.3f ms  p99 %.3f ms\n",
              executor::Percentile(keyed, 0.5), executor::Percentile(keyed, 0.99));
  std::string mcp_fields;
  if (bench.has_mcp()) {
    const auto echo =
        bench.Measure("everything__echo", R"({"message": "hello"})", calls / 5, warmup / 5, false);
    std::printf("everything__echo (MCP, stdio)  p50 %.3f ms  p99 %.3f ms\n",
                executor::Percentile(echo, 0.5), executor::Percentile(echo, 0.99));
    char buffer[128];
    std::snprintf(buffer, sizeof buffer, " mcp_invoke_p50_ms=%.3f mcp_invoke_p99_ms=%.3f",
                  executor::Percentile(echo, 0.5), executor::Percentile(echo, 0.99));
    mcp_fields = buffer;
  }
  std::printf(
      "RESULT invoke_p50_ms=%.3f invoke_p99_ms=%.3f list_p50_ms=%.3f list_p99_ms=%.3f "
      "keyed_write_p50_ms=%.3f keyed_write_p99_ms=%.3f%s\n",
      executor::Percentile(read, 0.5), executor::Percentile(read, 0.99),
      executor::Percentile(list, 0.5), executor::Percentile(list, 0.99),
      executor::Percentile(keyed, 0.5), executor::Percentile(keyed, 0.99), mcp_fields.c_str());
  return 0;
}
