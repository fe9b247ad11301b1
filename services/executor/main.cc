// omniforge-executor: the tool runtime and executor agents.
//
//   omniforge-executor [--config FILE] [serve]   migrate (when enabled) and serve
//   omniforge-executor [--config FILE] migrate   apply migrations and exit
//   omniforge-executor [--config FILE] rotate-key --tenant T | rewrap-keys
//
// What the tools store of users' and models' words is sealed with the
// tenant's key, under the executor's own master key
// (`encryption.master_key_file`).
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "libs/core/caller_identity.h"
#include "libs/core/client_tls.h"
#include "libs/core/config.h"
#include "libs/core/grpc_identity.h"
#include "libs/core/logging.h"
#include "libs/core/process_shield.h"
#include "libs/core/server.h"
#include "libs/core/thread_pool.h"
#include "libs/core/version.h"
#include "libs/llm/llm_config.h"
#include "libs/llm/llm_factory.h"
#include "libs/mcp/mcp_config.h"
#include "libs/mcp/registry.h"
#include "libs/pg/migrate.h"
#include "libs/pg/pool.h"
#include "libs/pg/settings.h"
#include "libs/seal/key_admin.h"
#include "libs/seal/key_ring.h"
#include "libs/seal/master_keys.h"
#include "libs/trace/tracing.h"
#include "services/executor/src/conversation_recorder.h"
#include "services/executor/src/domain_tools.h"
#include "services/executor/src/grpc_service.h"
#include "services/executor/src/llm_dialogue.h"
#include "services/executor/src/mcp_tools.h"
#include "services/executor/src/pg_invocation_ledger.h"
#include "services/executor/src/pg_run_store.h"
#include "services/executor/src/pg_schedule_store.h"
#include "services/executor/src/platform_tools.h"
#include "services/executor/src/scheduler.h"
#include "services/executor/src/tool_catalog.h"
#include "services/executor/src/tool_list_refresher.h"
#include "services/executor/src/tool_runtime.h"

namespace omniforge::pg {
const std::vector<Migration>& ExecutorMigrations();
}

namespace omniforge::executor {
namespace {

constexpr int kDefaultPort = 50053;
constexpr int kDefaultMetricsPort = 9093;

struct Settings {
  core::ServerOptions server;
  trace::OtlpOptions tracing;
  core::CallerIdentitySettings identity;
  // OMNIFORGE_* variables that name no key this service reads.
  std::vector<std::string> unknown_environment;
  int worker_threads = 16;
  std::string log_level;
  pg::DatabaseSettings database;
  ToolRuntimeOptions tools;
  std::chrono::seconds idempotency_retention{7 * 24 * 3600};
  std::chrono::seconds purge_interval{3600};
  std::string conversation_address;
  core::ChannelSecurity conversation_security;  // client_tls.*
  std::chrono::milliseconds conversation_timeout{5000};
  mcp::McpConfig mcp;
  std::vector<DomainConfig> domains;
  std::chrono::seconds mcp_retry_unavailable{30};
  llm::LlmConfig llm;
  std::string llm_profile;
  bool scheduler_enabled = true;
  SchedulerOptions scheduler;
  int run_threads = 8;
  int max_runs_per_tenant = 4;
  // The master keys that wrap the tenants' data keys (platform.tenant_keys).
  seal::MasterKeySettings master_keys;
};

absl::StatusOr<Settings> LoadSettings(const std::string& config_file) {
  auto reader = config_file.empty() ? core::ConfigReader::FromString("")
                                    : core::ConfigReader::FromFile(config_file);
  if (!reader.ok()) return reader.status();
  core::ConfigReader& c = *reader;
  Settings s;
  s.server = core::ReadServerOptions(c, kDefaultPort, kDefaultMetricsPort);
  auto tracing = trace::ReadTracingOptions(c, "executor");
  if (!tracing.ok()) return tracing.status();
  s.tracing = *std::move(tracing);
  s.identity = core::ReadCallerIdentity(c, /*verifies=*/true, /*signs=*/true);
  s.worker_threads = static_cast<int>(c.Int("server.worker_threads", 16, 1, 1024));
  s.log_level = c.String("log.level", "info");
  s.database = pg::ReadDatabaseSettings(c, "omniforge_executor", true, 16);
  s.tools.max_result_bytes = static_cast<size_t>(
      c.Int("tools.max_result_bytes", int64_t{64} * 1024, 1024, int64_t{16} * 1024 * 1024));
  s.tools.max_argument_bytes = static_cast<size_t>(
      c.Int("tools.max_argument_bytes", int64_t{256} * 1024, 1024, int64_t{4} * 1024 * 1024));
  s.idempotency_retention =
      std::chrono::hours(c.Int("tools.idempotency_retention_hours", 168, 1, int64_t{24} * 365));
  s.purge_interval =
      std::chrono::seconds(c.Int("tools.purge_interval_s", 3600, 1, int64_t{86400} * 7));
  s.conversation_address = c.String("conversation.address", "");
  auto security = core::MakeChannelSecurity(core::ReadClientTlsOptions(c));
  if (!security.ok()) return security.status();
  s.conversation_security = *std::move(security);
  s.conversation_timeout =
      std::chrono::milliseconds(c.Int("conversation.timeout_ms", 5000, 100, 600000));
  s.llm_profile = c.String("executor.llm_profile", "balanced");
  s.scheduler_enabled = c.Bool("scheduler.enabled", true);
  s.scheduler.poll = std::chrono::milliseconds(c.Int("scheduler.poll_ms", 1000, 10, 60000));
  s.scheduler.grace = std::chrono::seconds(c.Int("scheduler.grace_s", 120, 1, 86400));
  s.scheduler.batch = static_cast<int>(c.Int("scheduler.batch", 500, 1, 10000));
  s.run_threads = static_cast<int>(c.Int("runs.threads", 8, 1, 256));
  s.max_runs_per_tenant = static_cast<int>(c.Int("runs.max_per_tenant", 4, 1, 1000));
  s.master_keys = seal::ReadMasterKeySettings(c);
  auto llm_config = llm::ReadLlmConfig(c);
  if (!llm_config.ok()) return llm_config.status();
  s.llm = *std::move(llm_config);
  auto mcp_config = mcp::ReadMcpConfig(c);
  if (!mcp_config.ok()) return mcp_config.status();
  s.mcp = *std::move(mcp_config);
  s.mcp_retry_unavailable = std::chrono::seconds(c.Int("mcp.retry_unavailable_s", 30, 1, 86400));
  auto domains = ReadDomainConfig(c, s.mcp);
  if (!domains.ok()) return domains.status();
  s.domains = *std::move(domains);
  if (absl::Status status = c.Finish(); !status.ok()) return status;
  s.unknown_environment = c.UnknownEnvironment(core::ConfigReader::EnvironmentNames());
  return s;
}

// This replica's name, recorded with the slots it claims.
std::string ReplicaName() {
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  return absl::StrCat(host[0] != '\0' ? host : "executor", ":", getpid());
}

SchedulerOptions SchedulerSettings(const Settings& s) {
  SchedulerOptions options = s.scheduler;
  options.claimant = ReplicaName();
  return options;
}

// Starts a claimed run on `threads`; one that cannot be queued fails, saying so.
// Starts the scheduler, once the schedules an older version kept only as
// words are read.
void StartScheduler(Scheduler& scheduler, ScheduleStore& store, ToolProvider& platform) {
  absl::StatusOr<OldSchedules> old = ReadOldSchedules(store, platform);
  if (!old.ok()) {
    core::LogWarn("old schedules not read",
                  {{"component", "scheduler"}, {"error", std::string(old.status().message())}});
  } else if (old->read + old->unreadable > 0) {
    core::LogInfo("old schedules read", {{"component", "scheduler"},
                                         {"read", std::to_string(old->read)},
                                         {"kept_as_words", std::to_string(old->unreadable)}});
  }
  scheduler.Start();
}

Scheduler::RunStarter RunOn(core::ThreadPool& threads, AgentRunner& runner) {
  return [&threads, &runner](const ClaimedRun& run) {
    if (threads.Submit([&runner, run] { RunClaimed(runner, run); })) return;
    RunOutcome busy;
    busy.status = "failed";
    busy.error = "the executor had too many runs queued to start this one";
    busy.output_json = nlohmann::json({{"summary", busy.error}}).dump();
    (void)runner.store().FinishRun(run.who, run.run_id, busy);
  };
}

absl::Status Migrate(const Settings& s) {
  auto applied = pg::ApplyMigrations(s.database.migrate_dsn, "executor", pg::ExecutorMigrations());
  if (!applied.ok()) return applied.status();
  core::LogInfo("schema up to date", {{"applied", std::to_string(*applied)}});
  return absl::OkStatus();
}

// The executor agents: with an LLM provider configured, the model drives
// each step (operation executor_turn); otherwise the local agent runs the
// step's planned calls (`agents` stays empty). The client and model made
// for it are kept in `llm_client` and `model`, which must outlive `agents`.
absl::Status MakeAgents(const Settings& s, ToolRuntime& runtime,
                        std::unique_ptr<llm::LlmClient>& llm_client,
                        std::unique_ptr<llm::ChatModel>& model, AgentFactory& agents) {
  if (s.llm.enabled()) {
    // Each agent gives its model calls their own usage
    // (llm::CallContext::usage) and hands them to the planner with its next
    // message (the orchestrator records them under the step): the client
    // needs no sink.
    auto made = llm::MakeLlmClient(s.llm, nullptr);
    if (!made.ok()) return made.status();
    llm_client = *std::move(made);
    if (!llm_client->HasProfile(s.llm_profile)) {
      return absl::InvalidArgumentError("executor.llm_profile '" + s.llm_profile +
                                        "' is not a profile of the llm: section");
    }
    model = llm_client->ForProfile(s.llm_profile);
    agents = LlmAgents(*model, runtime);
    core::LogInfo("executor agents use the LLM", {{"profile", s.llm_profile}});
  } else {
    core::LogInfo("local mode: executor agents run planned tool calls (no LLM configured)");
  }
  return absl::OkStatus();
}

// The schema migrated (when enabled) and a pool whose role row-level
// security binds.
absl::StatusOr<std::unique_ptr<pg::PgPool>> OpenDatabase(const Settings& s) {
  if (s.database.migrate_on_start) {
    if (absl::Status status = Migrate(s); !status.ok()) return status;
  }
  auto pool = pg::PgPool::Create(s.database.pool);
  if (!pool.ok()) return pool.status();
  if (absl::Status status = pg::CheckRowLevelSecurityApplies(**pool, "platform"); !status.ok()) {
    return status;
  }
  return pool;
}

absl::Status Serve(const Settings& s, const sigset_t& signals) {
  auto master_keys = seal::LoadMasterKeys(s.master_keys);
  if (!master_keys.ok()) return master_keys.status();
  auto pool = OpenDatabase(s);
  if (!pool.ok()) return pool.status();
  seal::KeyRing keys(**pool, kExecutorKeys, master_keys->current, master_keys->current_id,
                     std::chrono::seconds(60), master_keys->previous);
  PlatformTools platform_tools(**pool, keys);
  ToolCatalog catalog;
  if (absl::Status status = catalog.AddProvider(platform_tools); !status.ok()) return status;
  // MCP servers: a server that cannot be reached at start is logged and
  // left out; the others' tools are served.
  mcp::McpRegistry registry(s.mcp);
  // The servers of the email, calendar and contacts domains are served as
  // domain tools (`email__...`) only; a domain without servers explains so.
  DomainTools domain_tools(registry, s.domains);
  const std::vector<std::string> domain_servers = domain_tools.DomainServers();
  McpTools mcp_tools(registry, {domain_servers.begin(), domain_servers.end()});
  if (!s.mcp.servers.empty()) {
    mcp::CallOptions within;
    within.deadline = std::chrono::system_clock::now() + std::chrono::seconds(30);
    if (absl::Status status = registry.Refresh(within); !status.ok()) {
      core::LogWarn("some MCP servers are unavailable", {{"error", std::string(status.message())}});
    }
    if (absl::Status status = catalog.AddProvider(mcp_tools); !status.ok()) return status;
  }
  if (absl::Status status = catalog.AddProvider(domain_tools); !status.ok()) return status;
  // Tool lists that change while the executor runs reach the catalog.
  std::unique_ptr<ToolListRefresher> refresher;
  if (!s.mcp.servers.empty()) {
    RefresherOptions options;
    options.retry_unavailable = s.mcp_retry_unavailable;
    refresher = std::make_unique<ToolListRefresher>(
        registry, catalog, std::vector<ToolProvider*>{&mcp_tools, &domain_tools}, options);
  }
  PgInvocationLedger ledger(**pool, keys);
  InvocationPurger purger(**pool, s.idempotency_retention, s.purge_interval);
  ToolRuntime runtime(catalog, &ledger, s.tools);
  // One long-lived channel to the conversation service, which stores the
  // planner<->executor dialogues; without an address they are not stored.
  // Made before the workers, whose last queued tasks may still store.
  std::unique_ptr<ConversationRecorder> recorder;
  if (!s.conversation_address.empty()) {
    grpc::ChannelArguments channel_args;
    recorder = std::make_unique<ConversationRecorder>(
        core::CreateServiceChannel(s.conversation_address, s.conversation_security, channel_args),
        s.conversation_timeout);
  }
  core::ThreadPool workers(s.worker_threads, 4096);
  std::unique_ptr<llm::LlmClient> llm_client;
  std::unique_ptr<llm::ChatModel> model;
  AgentFactory agents;
  if (absl::Status status = MakeAgents(s, runtime, llm_client, model, agents); !status.ok()) {
    return status;
  }
  // Runs of the user's agents: run_agent, and the scheduler's.
  PgRunStore run_store(**pool, keys);
  AgentRunner runner(run_store, runtime, agents, core::SystemClock(), s.max_runs_per_tenant);
  platform_tools.SetRunner(&runner);
  ExecutorGrpcService service(runtime, workers, recorder.get(), std::move(agents));
  // The scheduler: its runs on threads of their own, so that a busy hour of
  // runs never takes the gRPC workers. Made last, stopped first.
  core::ThreadPool run_threads(s.run_threads, 20000);
  PgScheduleStore schedule_store(**pool);
  Scheduler scheduler(schedule_store, RunOn(run_threads, runner), core::SystemClock(),
                      SchedulerSettings(s));

  core::ServiceServer server(s.server);
  server.AddService(&service);
  if (absl::Status status = server.Start(); !status.ok()) return status;
  // Once serving, so that reading old schedules keeps no health check waiting.
  if (s.scheduler_enabled) StartScheduler(scheduler, schedule_store, platform_tools);
  core::LogInfo("tools ready", {{"count", std::to_string(catalog.size())}});
  const int signal_number = core::WaitForTerminationSignal(signals);
  core::LogInfo("shutting down", {{"signal", std::to_string(signal_number)}});
  scheduler.Stop();
  server.Shutdown();
  return absl::OkStatus();
}

}  // namespace
}  // namespace omniforge::executor

// An exception here is a bug (errors are statuses): crashing shows it.
// NOLINTNEXTLINE(bugprone-exception-escape)
int main(int argc, char** argv) {
  using namespace omniforge;
  // First, before any thread or child exists: the processes we start (MCP
  // servers) cannot read our environment or memory through /proc.
  if (const absl::Status shielded = core::ShieldProcessFromChildren(); !shielded.ok()) {
    std::fputs((std::string(shielded.message()) + "\n").c_str(), stderr);
    return 1;
  }
  const sigset_t signals = core::BlockTerminationSignals();
  CLI::App app{"omniforge executor service"};
  app.set_version_flag("--version", std::string("omniforge-executor ") + core::Version());
  std::string config_file;
  app.add_option("-c,--config", config_file, "YAML config file")->envname("OMNIFORGE_CONFIG");
  app.require_subcommand(0, 1);
  auto* serve = app.add_subcommand("serve", "apply migrations (when enabled) and serve (default)");
  auto* migrate = app.add_subcommand("migrate", "apply database migrations and exit");
  std::string rotate_tenant;
  auto* rotate = app.add_subcommand("rotate-key", "give a tenant a new data key");
  rotate->add_option("--tenant", rotate_tenant, "the tenant")->required();
  auto* rewrap = app.add_subcommand(
      "rewrap-keys", "move every tenant key to the current master key (as the schema owner)");
  CLI11_PARSE(app, argc, argv);
  (void)serve;

  auto settings = executor::LoadSettings(config_file);
  if (!settings.ok()) {
    core::InitLogging("executor", "info");
    core::LogError("invalid configuration", {{"error", std::string(settings.status().message())}});
    return 2;
  }
  core::InitLogging("executor", settings->log_level);
  // Spans are sent until main returns (then what is queued is flushed).
  const trace::ProcessTracing tracing(settings->tracing);
  core::ConfigReader::WarnUnknownEnvironment(settings->unknown_environment);
  pg::WarnAboutUnverifiedTransport(settings->database);
  absl::Status status;
  if (migrate->parsed()) {
    status = executor::Migrate(*settings);
  } else if (rotate->parsed()) {
    status = seal::RotateTenantKey(settings->database, executor::kExecutorKeys,
                                   settings->master_keys, rotate_tenant);
  } else if (rewrap->parsed()) {
    status =
        seal::RewrapTenantKeys(settings->database, executor::kExecutorKeys, settings->master_keys);
  } else {
    // The caller-assertion keys, before any call is served or made.
    status = core::InstallCallerIdentity(settings->identity, core::kExecutorAudience);
    if (status.ok()) status = executor::Serve(*settings, signals);
  }
  if (!status.ok()) {
    core::LogError("exiting", {{"error", std::string(status.message())}});
    return 1;
  }
  return 0;
}
