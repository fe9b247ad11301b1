// omniforge-orchestrator: the public chat API and the planner.
//
//   omniforge-orchestrator [--config FILE]
//   omniforge-orchestrator keys create --tenant T --user U [--label TEXT] [--expires WHEN]
//   [--admin] omniforge-orchestrator [--config FILE] migrate | rotate-key --tenant T | rewrap-keys
//
// Serves omniforge.orchestrator.v1.ChatService. Callers authenticate with an
// API key from the key file (`auth.api_keys_file`), read again when it
// changes and on SIGHUP (`keys create` makes a new key and prints the line to
// add to that file), or with one managed at runtime through KeyAdminService
// (admin.port, admin keys from `auth.admin_keys_file`), kept hashed in the
// database. Without an LLM configured,
// turns are planned by the local policy (local mode). With database.dsn,
// flow states, turn errors, model-call usage and plans are stored in schema
// orchestration (what users and models wrote sealed with the tenant's key,
// under the master key `encryption.master_key_file`), and replicas reach
// each other's running turns; without it,
// flow states are kept in memory (lost on restart), nothing else is stored
// and no plans are made (agent_create_plan is not offered). Messages that conversation storage
// cannot take wait in the append spool (`spool.dir`) until it is back.
#include <pthread.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <map>
#include <memory>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "libs/core/api_keys.h"
#include "libs/core/caller_identity.h"
#include "libs/core/client_tls.h"
#include "libs/core/config.h"
#include "libs/core/grpc_identity.h"
#include "libs/core/logging.h"
#include "libs/core/process_shield.h"
#include "libs/core/server.h"
#include "libs/core/shifted_clock.h"
#include "libs/core/side_threads.h"
#include "libs/core/thread_pool.h"
#include "libs/core/version.h"
#include "libs/llm/llm_config.h"
#include "libs/llm/llm_factory.h"
#include "libs/pg/migrate.h"
#include "libs/pg/pool.h"
#include "libs/pg/settings.h"
#include "libs/seal/key_admin.h"
#include "libs/seal/master_keys.h"
#include "libs/trace/tracing.h"
#include "services/orchestrator/api/chat_service.h"
#include "services/orchestrator/api/key_admin_service.h"
#include "services/orchestrator/approvals/memory_approval_audit.h"
#include "services/orchestrator/downstream/grpc_downstream.h"
#include "services/orchestrator/flow/memory_flow_store.h"
#include "services/orchestrator/limits/spend_counter.h"
#include "services/orchestrator/storage/pg_approval_audit.h"
#include "services/orchestrator/storage/pg_error_log.h"
#include "services/orchestrator/storage/pg_flow_store.h"
#include "services/orchestrator/storage/pg_key_store.h"
#include "services/orchestrator/storage/pg_plan_store.h"
#include "services/orchestrator/storage/pg_spend_ledger.h"
#include "services/orchestrator/storage/pg_turn_bus.h"
#include "services/orchestrator/storage/tenant_keys.h"
#include "services/orchestrator/storage/usage_recorder.h"
#include "services/orchestrator/usage/usage_meter.h"

namespace omniforge::pg {
const std::vector<Migration>& OrchestratorMigrations();
}

namespace omniforge::orchestrator {
namespace {

namespace intentpb = ::omniforge::intent::v1;

constexpr int kDefaultPort = 50050;
constexpr int kDefaultMetricsPort = 9090;

struct Settings {
  core::ServerOptions server;
  trace::OtlpOptions tracing;
  core::CallerIdentitySettings identity;
  // OMNIFORGE_* variables that name no key this service reads.
  std::vector<std::string> unknown_environment;
  std::string log_level;
  int worker_threads = 64;
  std::string api_keys_file;
  // How often the key files are looked at for changes and the managed keys
  // read again in full; 0: only on SIGHUP (managed keys: and on changes).
  std::chrono::milliseconds api_keys_reload{5000};
  // The admin keys KeyAdminService takes (tenant `*`: every tenant).
  std::string admin_keys_file;
  // KeyAdminService's own listening address; port -1: not served.
  std::string admin_host = "127.0.0.1";
  int admin_port = -1;
  DownstreamAddresses downstream;
  // The channels to the three services: plaintext, TLS or mutual TLS
  // (client_tls.*).
  core::ChannelSecurity downstream_security;
  TurnOptions turn;
  // For tests only (turn.calendar_now, an RFC 3339 time): the clock the
  // meeting flow reads "today" by starts there and runs at the real pace.
  // Null: the system clock.
  std::shared_ptr<const core::Clock> calendar_clock;
  // Heartbeats and the events kept for a reattach (stream.*).
  StreamOptions stream;
  std::string planner_profile;
  // Another profile for the planner of some context types (PROJECT_AUDIT:
  // quality, say), by context type.
  std::map<intentpb::ContextType, std::string> planner_profiles;
  // The reviewer of agent_review plans; plans in that mode fail when the
  // llm: section has no such profile.
  std::string reviewer_profile;
  PlanEngineOptions plans;
  llm::LlmConfig llm;
  // Schema orchestration (flows, turn errors, model-call usage); an empty
  // dsn stores nothing there.
  pg::DatabaseSettings database;
  // Where messages wait while conversation storage is unreachable: one
  // directory per process, on a disk that outlives the process.
  AppendSpoolOptions spool;
  // The bound of each background row spool (turn errors, model-call usage).
  int64_t row_spool_max_bytes = 16LL << 20;
  // Per-tenant rates, turns at once and LLM budgets.
  LimitsConfig limits;
  // The master keys that wrap the tenants' data keys (orchestration.tenant_keys)
  // and seal the append spool; required with a database.
  seal::MasterKeySettings master_keys;
};

// Heartbeats and what is kept of turns for a reattach (stream.*).
StreamOptions ReadStreamOptions(core::ConfigReader& c) {
  StreamOptions stream;
  stream.heartbeat = std::chrono::milliseconds(c.Int("stream.heartbeat_ms", 15000, 0, 600000));
  stream.resume.keep_after_end =
      std::chrono::milliseconds(c.Int("stream.resume_window_ms", 60000, 0, 3600000));
  stream.resume.max_turn_bytes =
      static_cast<size_t>(c.Int("stream.resume_turn_bytes", 1 << 20, 0, int64_t{1} << 30));
  stream.resume.max_total_bytes =
      static_cast<size_t>(c.Int("stream.resume_total_bytes", 64 << 20, 0, int64_t{1} << 34));
  return stream;
}

// For tests only: the clock the meeting flow reads "today" by, started at
// turn.calendar_now; null (the system clock) when that is empty.
absl::StatusOr<std::shared_ptr<const core::Clock>> ReadCalendarClock(core::ConfigReader& c) {
  const std::string now = c.String("turn.calendar_now", "");
  if (now.empty()) return nullptr;
  absl::Time start;
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, now, &start, &error)) {
    return absl::InvalidArgumentError("turn.calendar_now: expected an RFC 3339 time, got \"" + now +
                                      "\"");
  }
  return std::make_shared<core::ShiftedClock>(core::TimePointFromMicros(absl::ToUnixMicros(start)));
}

// The turn's limits and clocks (turn.*, planner.max_iterations).
absl::Status ReadTurn(core::ConfigReader& c, Settings& s) {
  s.turn.turn_timeout = std::chrono::milliseconds(c.Int("turn.timeout_ms", 90000, 1000, 3600000));
  s.turn.max_tool_calls = static_cast<int>(c.Int("turn.max_tool_calls", 8, 1, 100));
  s.turn.max_clarifications = static_cast<int>(c.Int("turn.max_clarifications", 2, 0, 10));
  s.turn.context_token_budget =
      static_cast<int>(c.Int("turn.context_token_budget", 2000, 100, 100000));
  s.turn.window_cache_bytes =
      static_cast<size_t>(c.Int("turn.window_cache_bytes", 32 << 20, 0, int64_t{1} << 34));
  s.turn.call_timeout =
      std::chrono::milliseconds(c.Int("turn.call_timeout_ms", 10000, 100, 600000));
  s.turn.max_side_threads = static_cast<size_t>(
      c.Int("turn.max_side_threads", static_cast<int64_t>(core::SideThreads::kDefaultMaxThreads), 1,
            4096));
  s.turn.tool_retry.max_attempts = static_cast<int>(c.Int("turn.tool_max_attempts", 3, 1, 10));
  s.turn.tool_retry.initial_backoff_micros =
      1000 * c.Int("turn.tool_retry_backoff_ms", 100, 1, 60000);
  s.turn.max_iterations = static_cast<int>(c.Int("planner.max_iterations", 10, 1, 100));
  absl::StatusOr<std::shared_ptr<const core::Clock>> calendar_clock = ReadCalendarClock(c);
  if (!calendar_clock.ok()) return calendar_clock.status();
  s.calendar_clock = *std::move(calendar_clock);
  return absl::OkStatus();
}

absl::StatusOr<Settings> LoadSettings(const std::string& config_file) {
  auto reader = config_file.empty() ? core::ConfigReader::FromString("")
                                    : core::ConfigReader::FromFile(config_file);
  if (!reader.ok()) return reader.status();
  core::ConfigReader& c = *reader;
  Settings s;
  s.server = core::ReadServerOptions(c, kDefaultPort, kDefaultMetricsPort);
  auto tracing = trace::ReadTracingOptions(c, "orchestrator");
  if (!tracing.ok()) return tracing.status();
  s.tracing = *std::move(tracing);
  s.identity = core::ReadCallerIdentity(c, /*verifies=*/false, /*signs=*/true);
  s.worker_threads = static_cast<int>(c.Int("server.worker_threads", 64, 1, 4096));
  s.log_level = c.String("log.level", "info");
  s.api_keys_file = c.String("auth.api_keys_file", "");
  s.api_keys_reload = std::chrono::milliseconds(c.Int("auth.reload_interval_ms", 5000, 0, 3600000));
  s.admin_keys_file = c.String("auth.admin_keys_file", "");
  s.admin_host = c.String("admin.host", s.admin_host);
  s.admin_port = static_cast<int>(c.Int("admin.port", -1, -1, 65535));
  s.downstream.conversation = c.String("downstream.conversation", s.downstream.conversation);
  s.downstream.intent = c.String("downstream.intent", s.downstream.intent);
  s.downstream.executor = c.String("downstream.executor", s.downstream.executor);
  auto security = core::MakeChannelSecurity(core::ReadClientTlsOptions(c));
  if (!security.ok()) return security.status();
  s.downstream_security = *std::move(security);
  if (absl::Status status = ReadTurn(c, s); !status.ok()) return status;
  s.stream = ReadStreamOptions(c);
  // The fairness bounds at StreamChat's door (limits/turn_admission.h).
  s.stream.admission.max_queued_per_conversation =
      static_cast<int>(c.Int("turn.max_queued_per_conversation", 8, 0, 1000));
  s.stream.admission.max_in_flight_per_user =
      static_cast<int>(c.Int("turn.max_in_flight_per_user", 32, 1, 4096));
  s.planner_profile = c.String("planner.profile", "balanced");
  for (const auto& [name, profile] : c.StringMap("planner.profiles")) {
    // GLOBAL, project_audit and CONTEXT_TYPE_TASK all name a context type.
    std::string upper = absl::AsciiStrToUpper(name);
    if (!absl::StartsWith(upper, "CONTEXT_TYPE_")) upper.insert(0, "CONTEXT_TYPE_");
    intentpb::ContextType type = intentpb::CONTEXT_TYPE_UNSPECIFIED;
    if (!intentpb::ContextType_Parse(upper, &type) || type == intentpb::CONTEXT_TYPE_UNSPECIFIED) {
      return absl::InvalidArgumentError(
          "config: planner.profiles." + name +
          ": not a context type (GLOBAL, PROJECT, PROJECT_CREATE, TASK, PROJECT_AUDIT)");
    }
    s.planner_profiles[type] = profile;
  }
  s.reviewer_profile = c.String("plans.reviewer_profile", "quality");
  s.plans.max_parallel_steps = static_cast<int>(c.Int("plans.max_parallel_steps", 3, 1, 32));
  s.plans.step_retry.max_attempts = static_cast<int>(c.Int("plans.step_max_attempts", 3, 1, 10));
  s.plans.max_turns = static_cast<int>(c.Int("plans.executor_max_turns", 10, 1, 100));
  s.plans.step_timeout =
      std::chrono::milliseconds(c.Int("plans.step_timeout_ms", 120000, 1000, 3600000));
  s.plans.model_timeout =
      std::chrono::milliseconds(c.Int("plans.model_timeout_ms", 60000, 1000, 600000));
  s.plans.max_review_rounds = static_cast<int>(c.Int("plans.max_review_rounds", 2, 0, 5));
  s.database = pg::ReadDatabaseSettings(c, "omniforge_orchestrator", false, 4);
  s.spool.dir = c.String("spool.dir", "/tmp/omniforge-orchestrator-spool");
  s.spool.max_bytes = c.Int("spool.max_bytes", 64LL << 20, 1LL << 20, 1LL << 40);
  s.spool.call_timeout = s.turn.call_timeout;
  s.row_spool_max_bytes = c.Int("spool.background_max_bytes", 16LL << 20, 1LL << 20, 1LL << 40);
  s.master_keys = seal::ReadMasterKeySettings(c);
  absl::StatusOr<ApprovalPolicy> approvals = ReadApprovalPolicy(c);
  if (!approvals.ok()) return approvals.status();
  s.turn.approvals = *approvals;
  s.plans.approvals = *std::move(approvals);
  auto llm_config = llm::ReadLlmConfig(c);
  if (!llm_config.ok()) return llm_config.status();
  s.llm = *std::move(llm_config);
  absl::StatusOr<LimitsConfig> limits = ReadLimitsConfig(c);
  if (!limits.ok()) return limits.status();
  s.limits = *std::move(limits);
  if (absl::Status status = c.Finish(); !status.ok()) return status;
  s.unknown_environment = c.UnknownEnvironment(core::ConfigReader::EnvironmentNames());
  if (s.spool.dir.empty()) return absl::InvalidArgumentError("config: spool.dir must not be empty");
  return s;
}

// Serving needs a source of keys: the key file, or the database the admin
// API keeps keys in; `migrate` reads the same configuration without them.
absl::Status CheckServable(const Settings& s) {
  if (s.api_keys_file.empty() && s.database.pool.dsn.empty()) {
    return absl::InvalidArgumentError(
        "config: auth.api_keys_file is required without database.dsn (create keys with "
        "`omniforge-orchestrator keys create`)");
  }
  if (s.admin_port >= 0 && s.database.pool.dsn.empty()) {
    return absl::InvalidArgumentError(
        "config: admin.port needs database.dsn (managed API keys are kept there)");
  }
  if (s.admin_port >= 0 && s.admin_keys_file.empty()) {
    return absl::InvalidArgumentError(
        "config: admin.port needs auth.admin_keys_file (every admin call presents one of its "
        "keys; create one with `omniforge-orchestrator keys create --admin`)");
  }
  return absl::OkStatus();
}

// The master keys, when configured; they must be with a database (what
// users wrote is sealed there). Without either, the spool writes messages
// in the clear.
absl::StatusOr<std::optional<seal::MasterKeySet>> LoadOrchestratorMasterKeys(const Settings& s) {
  if (s.master_keys.key.empty() && s.master_keys.key_file.empty() && s.database.pool.dsn.empty()) {
    core::LogWarn(
        "no encryption master key: the append spool holds messages in the clear (set "
        "encryption.master_key_file)");
    return std::optional<seal::MasterKeySet>();
  }
  auto keys = seal::LoadMasterKeys(s.master_keys);
  if (!keys.ok()) return keys.status();
  return std::optional<seal::MasterKeySet>(*std::move(keys));
}

// The services the turns call, and the spool that keeps messages while
// conversation storage is unreachable.
struct Downstream {
  std::unique_ptr<Memory> memory;
  std::unique_ptr<Understanding> understanding;
  std::unique_ptr<Tools> tools;
  std::unique_ptr<AppendSpool> spool;
};

absl::StatusOr<Downstream> ConnectDownstream(const Settings& s,
                                             const std::optional<seal::MasterKeySet>& keys) {
  Downstream d;
  d.memory = MakeGrpcMemory(s.downstream.conversation, s.downstream_security);
  d.understanding = MakeGrpcUnderstanding(s.downstream.intent, s.downstream_security);
  d.tools = MakeGrpcTools(s.downstream.executor, s.downstream_security);
  AppendSpoolOptions spool_options = s.spool;
  spool_options.master_keys = keys;
  absl::StatusOr<std::unique_ptr<AppendSpool>> spool =
      AppendSpool::Open(*d.memory, std::move(spool_options));
  if (!spool.ok()) return spool.status();
  d.spool = *std::move(spool);
  d.spool->StartDrainer();
  core::LogInfo("messages wait in the append spool while conversation storage is unreachable",
                {{"dir", s.spool.dir.string()}, {"spooled", std::to_string(d.spool->depth())}});
  return d;
}

// Schema orchestration's stores; without database.dsn only `flows` and
// `audit` are set (in memory).
struct Storage {
  std::unique_ptr<pg::PgPool> pool;
  // The tenants' data keys; the stores below seal with them.
  std::unique_ptr<seal::KeyRing> keys;
  std::unique_ptr<FlowStore> flows;
  std::unique_ptr<PgErrorLog> errors;
  std::unique_ptr<ApprovalAudit> audit;
  std::shared_ptr<PgUsageRecorder> usage;
  std::unique_ptr<PgSpendLedger> spend;  // what each tenant's model calls cost, for the budgets
};

// `omniforge-orchestrator migrate`: the orchestration schema, then exit (a
// deployment's migration step; the other services have theirs).
absl::Status Migrate(const Settings& s) {
  if (s.database.pool.dsn.empty()) {
    return absl::FailedPreconditionError("database.dsn is empty: there is no database to migrate");
  }
  auto applied =
      pg::ApplyMigrations(s.database.migrate_dsn, "orchestrator", pg::OrchestratorMigrations());
  if (!applied.ok()) return applied.status();
  core::LogInfo("schema up to date", {{"applied", std::to_string(*applied)}});
  return absl::OkStatus();
}

absl::StatusOr<Storage> OpenStorage(const Settings& s,
                                    const std::optional<seal::MasterKeySet>& master_keys) {
  Storage st;
  if (s.database.pool.dsn.empty()) {
    st.flows = std::make_unique<MemoryFlowStore>();
    st.audit = std::make_unique<MemoryApprovalAudit>();
    core::LogWarn(
        "database.dsn is empty: flow states and approval decisions are kept in memory only "
        "(a flow waiting for the user does not survive a restart); turn errors and model calls "
        "are not recorded");
    return st;
  }
  if (s.database.migrate_on_start) {
    auto applied =
        pg::ApplyMigrations(s.database.migrate_dsn, "orchestrator", pg::OrchestratorMigrations());
    if (!applied.ok()) return applied.status();
  }
  auto made_pool = pg::PgPool::Create(s.database.pool);
  if (!made_pool.ok()) return made_pool.status();
  st.pool = *std::move(made_pool);
  if (absl::Status status = pg::CheckRowLevelSecurityApplies(*st.pool, "orchestration");
      !status.ok()) {
    return status;
  }
  st.keys = std::make_unique<seal::KeyRing>(*st.pool, kOrchestratorKeys, master_keys->current,
                                            master_keys->current_id, std::chrono::seconds(60),
                                            master_keys->previous);
  st.flows = std::make_unique<PgFlowStore>(*st.pool, *st.keys);
  // Turn errors and model-call usage wait beside the append spool while the
  // database is unreachable.
  auto row_spool = [&](const std::string& name) {
    return RowSpool::Open({s.spool.dir, name, s.row_spool_max_bytes, master_keys});
  };
  absl::StatusOr<std::unique_ptr<RowSpool>> error_spool = row_spool("error_log");
  if (!error_spool.ok()) return error_spool.status();
  absl::StatusOr<std::unique_ptr<RowSpool>> usage_spool = row_spool("llm_usage");
  if (!usage_spool.ok()) return usage_spool.status();
  st.errors = std::make_unique<PgErrorLog>(*st.pool, *st.keys, *std::move(error_spool));
  core::LogInfo("flows are kept in orchestration.flows, turn errors in orchestration.error_log");
  st.audit = std::make_unique<PgApprovalAudit>(*st.pool, *st.keys);
  core::LogInfo("approval decisions are kept in orchestration.approval_decisions");
  // The planner's model calls, and the intent service's for the turns
  // (which it may make while the planner is local).
  st.usage = std::make_shared<PgUsageRecorder>(*st.pool, *std::move(usage_spool));
  core::LogInfo("model calls are recorded in orchestration.llm_turn_usage, one row per turn");
  st.spend = std::make_unique<PgSpendLedger>(*st.pool);
  return st;
}

// The planner's language models; none in local mode.
struct PlannerModels {
  std::unique_ptr<llm::LlmClient> client;
  std::unique_ptr<llm::ChatModel> planner;
  std::map<std::string, std::unique_ptr<llm::ChatModel>> planners_by_profile;
  // The planner of each context type whose profile is not planner.profile.
  std::map<intentpb::ContextType, llm::ChatModel*> by_context;
};

// Also sets the planner of the context types that have a profile of their
// own in `turn_options`.
absl::StatusOr<PlannerModels> OpenPlannerModels(const Settings& s,
                                                const std::shared_ptr<PgUsageRecorder>& usage,
                                                TurnOptions& turn_options) {
  PlannerModels m;
  if (!s.llm.enabled()) {
    core::LogInfo("local mode: turns are planned by the local policy");
    return m;
  }
  auto made = llm::MakeLlmClient(s.llm, usage);
  if (!made.ok()) return made.status();
  m.client = *std::move(made);
  if (!m.client->HasProfile(s.planner_profile)) {
    return absl::InvalidArgumentError("planner.profile '" + s.planner_profile +
                                      "' is not a profile of the llm: section");
  }
  m.planner = m.client->ForProfile(s.planner_profile);
  core::LogInfo("planner uses the language model", {{"profile", s.planner_profile}});
  for (const auto& [type, profile] : s.planner_profiles) {
    if (!m.client->HasProfile(profile)) {
      return absl::InvalidArgumentError("planner.profiles." + intentpb::ContextType_Name(type) +
                                        ": '" + profile + "' is not a profile of the llm: section");
    }
    if (profile == s.planner_profile) continue;
    std::unique_ptr<llm::ChatModel>& model = m.planners_by_profile[profile];
    if (model == nullptr) model = m.client->ForProfile(profile);
    turn_options.planner_by_context[type] = model.get();
    m.by_context[type] = model.get();
    core::LogInfo("planner profile for a context type",
                  {{"context_type", intentpb::ContextType_Name(type)}, {"profile", profile}});
  }
  return m;
}

// The plan engine and what it runs on; none without a database.
struct PlanParts {
  std::unique_ptr<PgPlanStore> store;
  std::unique_ptr<StepExecutors> step_executors;
  std::unique_ptr<llm::ChatModel> reviewer;
  std::unique_ptr<MeteredChatModel> metered_plan_model;
  std::unique_ptr<MeteredChatModel> metered_reviewer;
  std::map<intentpb::ContextType, std::unique_ptr<MeteredChatModel>> metered_by_context;
  std::unique_ptr<PlanGenerator> generator;
  std::unique_ptr<PlanAdvisor> advisor;
  std::unique_ptr<PlanEngine> engine;
};

PlanParts MakePlans(const Settings& s, const Storage& storage, const PlannerModels& models,
                    ScopeUsageWriter* usage) {
  PlanParts p;
  // Plans need the database: their steps' progress is what a restarted
  // orchestrator resumes from.
  if (storage.pool == nullptr) return p;
  p.store = std::make_unique<PgPlanStore>(*storage.pool, *storage.keys);
  p.step_executors = MakeGrpcStepExecutors(s.downstream.executor, s.downstream_security);
  if (models.client != nullptr && models.client->HasProfile(s.reviewer_profile)) {
    p.reviewer = models.client->ForProfile(s.reviewer_profile);
  }
  // Metered: a plan made or reviewed inside a turn counts in its `done`.
  if (models.planner != nullptr) {
    p.metered_plan_model = std::make_unique<MeteredChatModel>(*models.planner);
  }
  if (p.reviewer != nullptr) p.metered_reviewer = std::make_unique<MeteredChatModel>(*p.reviewer);
  p.generator = std::make_unique<PlanGenerator>(p.metered_plan_model.get());
  // Executor questions are answered by the planner of the plan's context
  // type, as the rest of its turn.
  std::map<intentpb::ContextType, llm::ChatModel*> answerers;
  for (const auto& [type, model] : models.by_context) {
    p.metered_by_context[type] = std::make_unique<MeteredChatModel>(*model);
    answerers[type] = p.metered_by_context[type].get();
  }
  p.advisor = std::make_unique<PlanAdvisor>(p.metered_reviewer.get(), p.metered_plan_model.get(),
                                            std::move(answerers));
  PlanEngineOptions plan_options = s.plans;
  plan_options.usage_writer = usage;  // the model calls of each step, per step
  p.engine = std::make_unique<PlanEngine>(*p.store, *p.step_executors, *p.generator, *p.advisor,
                                          plan_options);
  core::LogInfo("plans are kept in orchestration.plans",
                {{"reviewer", p.reviewer != nullptr ? s.reviewer_profile : "none"}});
  return p;
}

// Replicas sharing the database reach each other's running turns (a newer
// message suspends, CancelTurn cancels, wherever the turn runs); null
// without a database.
std::unique_ptr<PgTurnBus> JoinTurnBus(const Settings& s, const Storage& storage,
                                       const std::optional<seal::MasterKeySet>& master_keys) {
  if (storage.pool == nullptr) return nullptr;
  // Signals are sealed with a key every replica derives from the master key.
  auto turn_bus = std::make_unique<PgTurnBus>(
      pg::WithClientTimeouts(s.database.pool.dsn, s.database.pool.timeouts), master_keys);
  if (turn_bus->WaitListening(std::chrono::seconds(2))) {
    core::LogInfo("turns on other replicas are reached through the database",
                  {{"replica", turn_bus->origin()}});
  }
  return turn_bus;
}

// Reads the key file again when it changes (every `interval`, when set) and
// on SIGHUP, so that a new or revoked key takes effect without a restart.
class KeyFileWatcher final {
 public:
  KeyFileWatcher(core::ApiKeyFile& keys, std::chrono::milliseconds interval) : keys_(keys) {
    if (interval.count() == 0) return;
    thread_ = std::thread([this, interval] {
      while (!stop_.WaitForNotificationWithTimeout(absl::FromChrono(interval))) {
        (void)keys_.Reload();  // a file that cannot be used is logged and changes nothing
      }
    });
  }
  ~KeyFileWatcher() {
    stop_.Notify();
    if (thread_.joinable()) thread_.join();
  }
  KeyFileWatcher(const KeyFileWatcher&) = delete;
  KeyFileWatcher& operator=(const KeyFileWatcher&) = delete;

 private:
  core::ApiKeyFile& keys_;
  absl::Notification stop_;
  std::thread thread_;
};

// The keys callers present: the key file's and, with a database, the
// managed ones; and KeyAdminService on its own port when admin.port is set.
struct KeySources {
  std::unique_ptr<core::ApiKeyFile> file;
  std::unique_ptr<KeyFileWatcher> file_watcher;
  std::unique_ptr<PgKeyStore> store;
  std::unique_ptr<ManagedApiKeys> managed;
  std::unique_ptr<PgKeyWatcher> managed_watcher;
  std::unique_ptr<LayeredApiKeys> layered;
  std::unique_ptr<core::ApiKeyFile> admin_file;
  std::unique_ptr<KeyFileWatcher> admin_watcher;
  std::unique_ptr<KeyAdmin> admin;
  std::unique_ptr<KeyAdminGrpcService> admin_service;
  std::unique_ptr<core::ServiceServer> admin_server;

  // SIGHUP: every source read again.
  void Reload() {
    if (file != nullptr) (void)file->Reload(/*force=*/true);
    if (admin_file != nullptr) (void)admin_file->Reload(/*force=*/true);
    if (managed_watcher != nullptr) (void)managed_watcher->RefreshNow();
  }
};

absl::Status OpenKeyAdmin(const Settings& s, KeySources& k) {
  if (s.admin_port < 0) return absl::OkStatus();
  auto admin_file = core::ApiKeyFile::Open(s.admin_keys_file, /*all_tenants_allowed=*/true);
  if (!admin_file.ok()) return admin_file.status();
  k.admin_file = *std::move(admin_file);
  k.admin_watcher = std::make_unique<KeyFileWatcher>(*k.admin_file, s.api_keys_reload);
  const core::ApiKeyFile* file = k.file.get();
  k.admin = std::make_unique<KeyAdmin>(
      *k.store, [file](std::string_view id) { return file != nullptr && file->Has(id); });
  if (PgKeyWatcher* watcher = k.managed_watcher.get(); watcher != nullptr) {
    k.admin->OnChanged([watcher](const std::string& id) { watcher->ReadChanged({id}); });
  }
  k.admin_service = std::make_unique<KeyAdminGrpcService>(*k.admin_file, *k.admin);
  core::ServerOptions options = s.server;
  options.host = s.admin_host;
  options.port = s.admin_port;
  options.metrics_port = -1;
  k.admin_server = std::make_unique<core::ServiceServer>(options);
  k.admin_server->AddService(k.admin_service.get());
  return absl::OkStatus();
}

absl::StatusOr<KeySources> OpenKeySources(const Settings& s, const Storage& storage) {
  KeySources k;
  if (!s.api_keys_file.empty()) {
    absl::StatusOr<std::unique_ptr<core::ApiKeyFile>> file =
        core::ApiKeyFile::Open(s.api_keys_file);
    if (!file.ok()) return file.status();
    k.file = *std::move(file);
    core::LogInfo("API keys loaded", {{"keys", std::to_string(k.file->size())}});
    k.file_watcher = std::make_unique<KeyFileWatcher>(*k.file, s.api_keys_reload);
  }
  if (storage.pool != nullptr) {
    k.store = std::make_unique<PgKeyStore>(*storage.pool);
    k.managed = std::make_unique<ManagedApiKeys>();
    k.managed_watcher = std::make_unique<PgKeyWatcher>(
        pg::WithClientTimeouts(s.database.pool.dsn, s.database.pool.timeouts), *k.store, *k.managed,
        s.api_keys_reload);
    if (k.managed_watcher->WaitListening(std::chrono::seconds(2))) {
      core::LogInfo("managed API keys are read from orchestration.api_keys",
                    {{"keys", std::to_string(k.managed->size())}});
    }
  }
  k.layered = std::make_unique<LayeredApiKeys>(k.file.get(), k.managed.get());
  if (absl::Status status = OpenKeyAdmin(s, k); !status.ok()) return status;
  return k;
}

absl::Status Serve(const Settings& s, const sigset_t& signals) {
  auto master_keys = LoadOrchestratorMasterKeys(s);
  if (!master_keys.ok()) return master_keys.status();
  absl::StatusOr<Downstream> downstream = ConnectDownstream(s, *master_keys);
  if (!downstream.ok()) return downstream.status();
  // Before the models: the usage recorder outlives the client's calls.
  absl::StatusOr<Storage> storage = OpenStorage(s, *master_keys);
  if (!storage.ok()) return storage.status();
  absl::StatusOr<KeySources> keys = OpenKeySources(s, *storage);
  if (!keys.ok()) return keys.status();
  TenantLimits limits(s.limits, storage->spend.get());
  // Each turn's and step's model calls count for the budgets on their way to storage.
  SpendCounter spend(limits, storage->usage.get());
  if (limits.budgets_enabled() && storage->spend == nullptr) {
    core::LogWarn("without database.dsn the LLM budgets count only what this process spent");
  }
  TurnOptions turn_options = s.turn;
  turn_options.calendar_clock = s.calendar_clock.get();
  turn_options.usage_writer = &spend;
  turn_options.audit = storage->audit.get();
  absl::StatusOr<PlannerModels> models = OpenPlannerModels(s, storage->usage, turn_options);
  if (!models.ok()) return models.status();
  PlanParts plans = MakePlans(s, *storage, *models, &spend);
  TurnRunner runner(*downstream->memory, *downstream->understanding, *downstream->tools,
                    turn_options, models->planner.get(), storage->flows.get(),
                    storage->errors.get(), plans.engine.get(), downstream->spool.get());
  std::unique_ptr<PgTurnBus> turn_bus = JoinTurnBus(s, *storage, *master_keys);
  core::ThreadPool workers(s.worker_threads, 4096);
  ChatGrpcService service(*keys->layered, runner, *downstream->memory, workers, turn_bus.get(),
                          storage->audit.get(), &limits, s.stream);

  core::ServiceServer server(s.server);
  server.AddService(&service);
  if (absl::Status status = server.Start(); !status.ok()) return status;
  if (keys->admin_server != nullptr) {
    if (absl::Status status = keys->admin_server->Start(); !status.ok()) return status;
    core::LogInfo("key admin API started",
                  {{"admin_port", std::to_string(keys->admin_server->port())}});
  }
  int signal_number = 0;
  while ((signal_number = core::WaitForTerminationSignal(signals)) == SIGHUP) keys->Reload();
  core::LogInfo("shutting down", {{"signal", std::to_string(signal_number)}});
  if (keys->admin_server != nullptr) keys->admin_server->Shutdown();
  server.Shutdown();
  // A last pass over the spool, so a pod that goes away (a rolling update,
  // a scale-down) leaves nothing behind when storage is up; what storage
  // does not take stays in the file for the next process on the volume.
  if (const size_t waiting = downstream->spool->depth(); waiting > 0) {
    const size_t stored = downstream->spool->DrainOnce();
    core::LogInfo(
        "drained the append spool before exiting",
        {{"stored", std::to_string(stored)}, {"left", std::to_string(downstream->spool->depth())}});
  }
  return absl::OkStatus();
}

// `keys create`: prints a new key and its key-file line; 2 on bad input.
// `keys create`'s arguments; `admin`: a line of the admin key file
// (tenant `*`: every tenant).
struct CreateKeyArgs {
  core::Identity who;
  std::string label;
  std::string expires;
  bool admin = false;
};

CLI::App* AddCreateKeyCommand(CLI::App& keys, CreateKeyArgs& a) {
  CLI::App* create =
      keys.add_subcommand("create", "make a new API key and print its key-file line");
  create
      ->add_option("--tenant", a.who.tenant_id,
                   "the tenant the key acts for (with --admin: manages; * for every tenant)")
      ->required();
  create
      ->add_option("--user", a.who.user_id,
                   "the user the key acts for (with --admin: the admin's name)")
      ->required();
  create->add_option("--label", a.label, "a note kept in the key file");
  create->add_option("--expires", a.expires,
                     "when the key stops working, UTC: RFC 3339 or a date (2027-03-01)");
  create->add_flag("--admin", a.admin,
                   "a key for the admin key file (auth.admin_keys_file) instead");
  return create;
}

int CreateApiKey(const CreateKeyArgs& a) {
  const core::Identity& who = a.who;
  const std::string& label = a.label;
  const std::string& expires = a.expires;
  const bool admin = a.admin;
  std::optional<int64_t> expiry;
  if (!expires.empty() && !(expiry = core::ParseApiKeyExpiry(expires))) {
    std::fprintf(stderr, "--expires: not an RFC 3339 time or a date: %s\n", expires.c_str());
    return 2;
  }
  absl::StatusOr<core::NewApiKey> key = core::GenerateApiKey(who, label, expiry, admin);
  if (!key.ok()) {
    std::fprintf(stderr, "%s\n", std::string(key.status().message()).c_str());
    return 2;
  }
  std::printf("key:  %s\nline: %s\n", key->key.c_str(), key->file_line.c_str());
  return 0;
}

}  // namespace
}  // namespace omniforge::orchestrator

// An exception here is a bug (errors are statuses): crashing shows it.
// NOLINTNEXTLINE(bugprone-exception-escape)
int main(int argc, char** argv) {
  using namespace omniforge;
  // SIGHUP reads the API key file again (Serve).
  // First, before any thread or child exists: the processes we start (MCP
  // servers) cannot read our environment or memory through /proc.
  if (const absl::Status shielded = core::ShieldProcessFromChildren(); !shielded.ok()) {
    std::fputs((std::string(shielded.message()) + "\n").c_str(), stderr);
    return 1;
  }
  sigset_t signals = core::BlockTerminationSignals();
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  CLI::App app{"omniforge orchestrator: the public chat API"};
  app.set_version_flag("--version", std::string("omniforge-orchestrator ") + core::Version());
  std::string config_file;
  app.add_option("-c,--config", config_file, "YAML config file")->envname("OMNIFORGE_CONFIG");
  app.require_subcommand(0, 1);
  CLI::App* serve =
      app.add_subcommand("serve", "apply migrations (when enabled) and serve (default)");
  CLI::App* migrate = app.add_subcommand("migrate", "apply database migrations and exit");
  (void)serve;
  std::string rotate_tenant;
  CLI::App* rotate = app.add_subcommand("rotate-key", "give a tenant a new data key");
  rotate->add_option("--tenant", rotate_tenant, "the tenant")->required();
  CLI::App* rewrap = app.add_subcommand(
      "rewrap-keys", "move every tenant key to the current master key (as the schema owner)");
  CLI::App* keys = app.add_subcommand("keys", "API keys");
  orchestrator::CreateKeyArgs create_args;
  CLI::App* create = orchestrator::AddCreateKeyCommand(*keys, create_args);
  keys->require_subcommand(1);
  CLI11_PARSE(app, argc, argv);
  if (create->parsed()) return orchestrator::CreateApiKey(create_args);
  absl::StatusOr<orchestrator::Settings> settings = orchestrator::LoadSettings(config_file);
  const bool admin = migrate->parsed() || rotate->parsed() || rewrap->parsed();
  if (settings.ok() && !admin) {
    if (absl::Status servable = orchestrator::CheckServable(*settings); !servable.ok()) {
      settings = servable;
    }
  }
  if (!settings.ok()) {
    core::InitLogging("orchestrator", "info");
    core::LogError("invalid configuration", {{"error", std::string(settings.status().message())}});
    return 2;
  }
  core::InitLogging("orchestrator", settings->log_level);
  // Spans are sent until main returns (then what is queued is flushed).
  const trace::ProcessTracing tracing(settings->tracing);
  core::ConfigReader::WarnUnknownEnvironment(settings->unknown_environment);
  pg::WarnAboutUnverifiedTransport(settings->database);
  absl::Status status;
  if (migrate->parsed()) {
    status = orchestrator::Migrate(*settings);
  } else if (rotate->parsed()) {
    status = seal::RotateTenantKey(settings->database, orchestrator::kOrchestratorKeys,
                                   settings->master_keys, rotate_tenant);
  } else if (rewrap->parsed()) {
    status = seal::RewrapTenantKeys(settings->database, orchestrator::kOrchestratorKeys,
                                    settings->master_keys);
  } else {
    // The caller-assertion keys, before any call is made.
    status = core::InstallCallerIdentity(settings->identity, "orchestrator");
    if (status.ok()) status = orchestrator::Serve(*settings, signals);
  }
  if (!status.ok()) {
    core::LogError("exiting", {{"error", std::string(status.message())}});
    return 1;
  }
  return 0;
}
