// omniforge-conversation: the memory service.
//
//   omniforge-conversation [--config FILE] [serve]      migrate (when enabled) and serve
//   omniforge-conversation [--config FILE] migrate      apply migrations and exit
//   omniforge-conversation [--config FILE] rotate-key --tenant T
//   omniforge-conversation [--config FILE] rewrap-keys  move tenant keys to the current master key
#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <memory>

#include "absl/strings/numbers.h"
#include "libs/core/caller_identity.h"
#include "libs/core/clock.h"
#include "libs/core/config.h"
#include "libs/core/files.h"
#include "libs/core/grpc_identity.h"
#include "libs/core/logging.h"
#include "libs/core/process_shield.h"
#include "libs/core/server.h"
#include "libs/core/text.h"
#include "libs/core/thread_pool.h"
#include "libs/core/version.h"
#include "libs/pg/migrate.h"
#include "libs/pg/pool.h"
#include "libs/pg/settings.h"
#include "libs/seal/key_admin.h"
#include "libs/seal/master_keys.h"
#include "libs/trace/tracing.h"
#include "services/conversation/src/grpc_service.h"
#include "services/conversation/src/pg_repository.h"
#include "services/conversation/src/retention.h"

namespace omniforge::pg {
const std::vector<Migration>& ConversationMigrations();
}

namespace omniforge::conversation {
namespace {

constexpr int kDefaultPort = 50051;
constexpr int kDefaultMetricsPort = 9091;

struct Settings {
  core::ServerOptions server;
  trace::OtlpOptions tracing;
  core::CallerIdentitySettings identity;
  // OMNIFORGE_* variables that name no key this service reads.
  std::vector<std::string> unknown_environment;
  std::string log_level;
  pg::DatabaseSettings database;
  seal::MasterKeySettings master_keys;
  RetentionPolicy retention;
  std::chrono::seconds retention_interval{3600};
  PgRepositoryOptions appends;
  int worker_threads = 16;
};

absl::StatusOr<Settings> LoadSettings(const std::string& config_file) {
  auto reader = config_file.empty() ? core::ConfigReader::FromString("")
                                    : core::ConfigReader::FromFile(config_file);
  if (!reader.ok()) return reader.status();
  core::ConfigReader& c = *reader;
  Settings s;
  s.server = core::ReadServerOptions(c, kDefaultPort, kDefaultMetricsPort);
  auto tracing = trace::ReadTracingOptions(c, "conversation");
  if (!tracing.ok()) return tracing.status();
  s.tracing = *std::move(tracing);
  s.identity = core::ReadCallerIdentity(c, /*verifies=*/true, /*signs=*/false);
  s.worker_threads = static_cast<int>(c.Int("server.worker_threads", 16, 1, 1024));
  s.log_level = c.String("log.level", "info");
  s.database = pg::ReadDatabaseSettings(c, "omniforge_conversation", true, 16);
  s.master_keys = seal::ReadMasterKeySettings(c);
  s.retention.default_days = static_cast<int>(c.Int("retention.default_days", 30, 1, 36500));
  for (const auto& [tenant, days] : c.StringMap("retention.tenant_days")) {
    int value = 0;
    if (!absl::SimpleAtoi(days, &value) || value < 1) {
      return absl::InvalidArgumentError("config: retention.tenant_days." + tenant +
                                        ": expected a positive number of days");
    }
    s.retention.tenant_days[tenant] = value;
  }
  s.retention_interval =
      std::chrono::seconds(c.Int("retention.interval_s", 3600, 1, int64_t{86400} * 7));
  s.appends.append_committers = static_cast<int>(c.Int("append.committers", 2, 1, 64));
  s.appends.append_max_batch = static_cast<size_t>(c.Int("append.max_batch", 256, 1, 10000));
  s.appends.append_max_queued = static_cast<size_t>(c.Int("append.max_queued", 10000, 1, 1000000));
  if (absl::Status status = c.Finish(); !status.ok()) return status;
  s.unknown_environment = c.UnknownEnvironment(core::ConfigReader::EnvironmentNames());
  return s;
}

absl::Status Migrate(const Settings& s) {
  auto applied =
      pg::ApplyMigrations(s.database.migrate_dsn, "conversation", pg::ConversationMigrations());
  if (!applied.ok()) return applied.status();
  core::LogInfo("schema up to date", {{"applied", std::to_string(*applied)}});
  return absl::OkStatus();
}

absl::Status Serve(const Settings& s, const sigset_t& signals) {
  auto master_keys = seal::LoadMasterKeys(s.master_keys);
  if (!master_keys.ok()) return master_keys.status();
  if (s.database.migrate_on_start) {
    if (absl::Status status = Migrate(s); !status.ok()) return status;
  }
  auto pool = pg::PgPool::Create(s.database.pool);
  if (!pool.ok()) return pool.status();
  if (absl::Status status = pg::CheckRowLevelSecurityApplies(**pool, "conversation");
      !status.ok()) {
    return status;
  }
  seal::KeyRing keys(**pool, kConversationKeys, master_keys->current, master_keys->current_id,
                     std::chrono::seconds(60), std::move(master_keys->previous));
  PgConversationRepository repository(**pool, keys, s.appends);
  HeuristicTokenEstimator estimator;
  ConversationLogic logic(repository, estimator);
  core::ThreadPool workers(s.worker_threads, 4096);
  ConversationGrpcService service(logic, workers);
  RetentionPurger purger(
      [&](int limit) { return repository.PurgeIdle(s.retention, core::NowMicros(), limit); },
      s.retention_interval);

  core::ServiceServer server(s.server);
  server.AddService(&service);
  if (absl::Status status = server.Start(); !status.ok()) return status;
  const int signal_number = core::WaitForTerminationSignal(signals);
  core::LogInfo("shutting down", {{"signal", std::to_string(signal_number)}});
  server.Shutdown();
  purger.Stop();
  return absl::OkStatus();
}

}  // namespace
}  // namespace omniforge::conversation

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
  CLI::App app{"omniforge conversation service"};
  app.set_version_flag("--version", std::string("omniforge-conversation ") + core::Version());
  std::string config_file;
  app.add_option("-c,--config", config_file, "YAML config file")->envname("OMNIFORGE_CONFIG");
  app.require_subcommand(0, 1);
  auto* serve = app.add_subcommand("serve", "apply migrations (when enabled) and serve (default)");
  auto* migrate = app.add_subcommand("migrate", "apply database migrations and exit");
  auto* rotate = app.add_subcommand("rotate-key", "start a new data key for a tenant");
  auto* rewrap = app.add_subcommand(
      "rewrap-keys",
      "re-wrap every tenant key with the current master key (after a master key change)");
  std::string tenant;
  rotate->add_option("--tenant", tenant, "tenant id")->required();
  CLI11_PARSE(app, argc, argv);
  (void)serve;

  auto settings = conversation::LoadSettings(config_file);
  if (!settings.ok()) {
    core::InitLogging("conversation", "info");
    core::LogError("invalid configuration", {{"error", std::string(settings.status().message())}});
    return 2;
  }
  core::InitLogging("conversation", settings->log_level);
  // Spans are sent until main returns (then what is queued is flushed).
  const trace::ProcessTracing tracing(settings->tracing);
  core::ConfigReader::WarnUnknownEnvironment(settings->unknown_environment);
  pg::WarnAboutUnverifiedTransport(settings->database);
  absl::Status status;
  if (migrate->parsed()) {
    status = conversation::Migrate(*settings);
  } else if (rewrap->parsed()) {
    status = seal::RewrapTenantKeys(settings->database, conversation::kConversationKeys,
                                    settings->master_keys);
  } else if (rotate->parsed()) {
    status = seal::RotateTenantKey(settings->database, conversation::kConversationKeys,
                                   settings->master_keys, tenant);
  } else {
    // The caller-assertion keys, before any call is served.
    status = core::InstallCallerIdentity(settings->identity, core::kConversationAudience);
    if (status.ok()) status = conversation::Serve(*settings, signals);
  }
  if (!status.ok()) {
    core::LogError("exiting", {{"error", std::string(status.message())}});
    return 1;
  }
  return 0;
}
