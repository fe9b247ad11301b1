// omniforge-sandbox-mcp: the built-in sandbox email, calendar and contacts
// servers, speaking MCP over stdio, with each tenant's state in PostgreSQL
// (schema `sandbox`). The executor starts one per tenant (per_tenant stdio
// servers substitute {tenant}).
//
//   omniforge-sandbox-mcp --domain email|calendar|contacts|all --tenant T
//                         [--time-zone Europe/Paris] [--memory] [--config FILE]
//   omniforge-sandbox-mcp migrate [--config FILE]
//   omniforge-sandbox-mcp rotate-key --tenant T [--config FILE]
//   omniforge-sandbox-mcp rewrap-keys [--config FILE]
//
// The database.* keys (pg/settings.h) come from the config file or the
// environment (OMNIFORGE_DATABASE_DSN, OMNIFORGE_DATABASE_MIGRATE_DSN, ...);
// by default the local stack's database as role omniforge_sandbox. What
// users and models wrote is sealed with per-tenant keys wrapped by the
// sandbox's own master key, the encryption.* keys (libs/seal/master_keys.h;
// OMNIFORGE_ENCRYPTION_MASTER_KEY_FILE names its file), required with
// PostgreSQL. The executor passes both in the server's `env`, never in its
// arguments. With
// PGPASSWORD_FILE set (and PGPASSWORD not), libpq's password is read from
// that file, as the image's entry point does for the services.
// --memory keeps the state in memory instead, for the process's life.
// --tenant is required with PostgreSQL (a server configured without
// per_tenant would otherwise give every tenant one shared mailbox); with
// --memory it defaults to "local".
//
// For tests only: OMNIFORGE_SANDBOX_NOW (an RFC 3339 time) is where the
// sandbox's clock starts; it then runs at the real clock's pace. Tests that
// compare the seed's "tomorrow" with times of their own set it, so that
// midnight passing between their reads changes nothing.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>

#include "libs/core/config.h"
#include "libs/core/logging.h"
#include "libs/core/shifted_clock.h"
#include "libs/core/version.h"
#include "libs/pg/migrate.h"
#include "libs/pg/pool.h"
#include "libs/pg/settings.h"
#include "libs/seal/key_admin.h"
#include "libs/seal/key_ring.h"
#include "libs/seal/master_keys.h"
#include "services/sandbox/src/mcp_server.h"
#include "services/sandbox/src/memory_store.h"
#include "services/sandbox/src/pg_store.h"
#include "services/sandbox/src/sandbox_time.h"

namespace omniforge::pg {
const std::vector<Migration>& SandboxMigrations();
}

namespace omniforge::sandbox {
namespace {

enum class Command { kServe, kMigrate, kRotateKey, kRewrapKeys };

struct Options {
  std::string config_file;
  std::string domain;
  std::string tenant;
  std::string time_zone = "UTC";
  bool memory = false;
};

// The system clock, or one started at OMNIFORGE_SANDBOX_NOW when it is set.
absl::StatusOr<std::unique_ptr<core::Clock>> SandboxClock() {
  const char* now = std::getenv("OMNIFORGE_SANDBOX_NOW");
  if (now == nullptr || *now == '\0') return std::unique_ptr<core::Clock>();
  auto start = ParseRfc3339("OMNIFORGE_SANDBOX_NOW", now);
  if (!start.ok()) return start.status();
  return std::make_unique<core::ShiftedClock>(*start);
}

// The database.* and encryption.* keys, from the file or the environment.
struct Settings {
  pg::DatabaseSettings database;
  seal::MasterKeySettings master_keys;
};

absl::StatusOr<Settings> LoadSettings(const std::string& config_file) {
  auto reader = config_file.empty() ? core::ConfigReader::FromString("")
                                    : core::ConfigReader::FromFile(config_file);
  if (!reader.ok()) return reader.status();
  Settings settings;
  // One connection: a process answers one request at a time, and the
  // executor runs one process per tenant and domain.
  settings.database =
      pg::ReadDatabaseSettings(*reader, "omniforge_sandbox", /*local_by_default=*/true, 1);
  settings.master_keys = seal::ReadMasterKeySettings(*reader);
  if (absl::Status status = reader->Finish(); !status.ok()) return status;
  return settings;
}

// PGPASSWORD from the file PGPASSWORD_FILE names (its first line).
absl::Status ReadPasswordFile() {
  const char* file = std::getenv("PGPASSWORD_FILE");
  if (file == nullptr || *file == '\0' || std::getenv("PGPASSWORD") != nullptr) {
    return absl::OkStatus();
  }
  std::ifstream in(file);
  std::string password;
  if (!in || !std::getline(in, password)) {
    return absl::FailedPreconditionError(std::string("PGPASSWORD_FILE: cannot read ") + file);
  }
  setenv("PGPASSWORD", password.c_str(), 1);
  return absl::OkStatus();
}

absl::Status Migrate(const pg::DatabaseSettings& database) {
  auto applied = pg::ApplyMigrations(database.migrate_dsn, "sandbox", pg::SandboxMigrations());
  if (!applied.ok()) return applied.status();
  if (*applied > 0) core::LogInfo("schema up to date", {{"applied", std::to_string(*applied)}});
  return absl::OkStatus();
}

std::string Instructions(const std::string& domain) {
  return "The omniforge sandbox " + domain +
         " service: a practice mailbox, calendar and address book kept per tenant, seeded with "
         "sample contacts and events. Nothing leaves the sandbox. Times are RFC 3339 with an "
         "offset.";
}

absl::Status Serve(const Options& options, SandboxStore& store) {
  absl::TimeZone zone;
  if (!absl::LoadTimeZone(options.time_zone, &zone)) {
    return absl::InvalidArgumentError("--time-zone: unknown time zone " + options.time_zone);
  }
  const auto domains = ParseDomains(options.domain);
  if (!domains.has_value()) {
    return absl::InvalidArgumentError("--domain: expected email, calendar, contacts or all");
  }
  auto clock = SandboxClock();
  if (!clock.ok()) return clock.status();
  SandboxTools tools(store, *clock ? **clock : core::SystemClock(), zone, options.tenant, *domains);
  McpLineServer server(tools, "omniforge-sandbox-" + options.domain, core::Version(),
                       Instructions(options.domain));
  server.Serve(std::cin, std::cout);
  return absl::OkStatus();
}

// Serves `options.tenant` from PostgreSQL, its user text sealed with its
// key under the sandbox's master key; first seals what an earlier version
// stored of it in plain text.
absl::Status ServeFromDatabase(const Options& options, const Settings& settings) {
  auto master_keys = seal::LoadMasterKeys(settings.master_keys);
  if (!master_keys.ok()) return master_keys.status();
  auto pool = pg::PgPool::Create(settings.database.pool);
  if (!pool.ok()) return pool.status();
  if (absl::Status status = pg::CheckRowLevelSecurityApplies(**pool, "sandbox"); !status.ok()) {
    return status;
  }
  seal::KeyRing keys(**pool, kSandboxKeys, master_keys->current, master_keys->current_id,
                     std::chrono::seconds(60), master_keys->previous);
  PgSandboxStore store(**pool, keys);
  auto sealed = store.SealPlainRows(options.tenant);
  if (!sealed.ok()) return sealed.status();
  if (*sealed > 0)
    core::LogInfo("sealed rows stored in plain text", {{"rows", std::to_string(*sealed)}});
  return Serve(options, store);
}

absl::Status Run(const Options& options, Command command) {
  if (options.memory && command == Command::kServe) {
    MemorySandboxStore store;
    return Serve(options, store);
  }
  if (absl::Status read = ReadPasswordFile(); !read.ok()) return read;
  auto settings = LoadSettings(options.config_file);
  if (!settings.ok()) return settings.status();
  pg::WarnAboutUnverifiedTransport(settings->database);
  switch (command) {
    case Command::kRotateKey:
      return seal::RotateTenantKey(settings->database, kSandboxKeys, settings->master_keys,
                                   options.tenant);
    case Command::kRewrapKeys:
      return seal::RewrapTenantKeys(settings->database, kSandboxKeys, settings->master_keys);
    case Command::kMigrate:
      return Migrate(settings->database);
    case Command::kServe:
      break;
  }
  if (settings->database.migrate_on_start) {
    if (absl::Status status = Migrate(settings->database); !status.ok()) return status;
  }
  return ServeFromDatabase(options, *settings);
}

}  // namespace
}  // namespace omniforge::sandbox

// An exception here is a bug (errors are statuses): crashing shows it.
// NOLINTNEXTLINE(bugprone-exception-escape)
int main(int argc, char** argv) {
  using namespace omniforge;
  CLI::App app{"omniforge sandbox email, calendar and contacts MCP server (stdio)"};
  app.set_version_flag("--version", std::string("omniforge-sandbox-mcp ") + core::Version());
  sandbox::Options options;
  app.add_option("-c,--config", options.config_file, "YAML file with database.* keys");
  app.add_option("--domain", options.domain, "email, calendar, contacts or all");
  app.add_option("--tenant", options.tenant,
                 "whose state this process serves (required unless --memory)");
  app.add_option("--time-zone", options.time_zone, "IANA time zone the times are shown in");
  app.add_flag("--memory", options.memory, "keep the state in memory, not PostgreSQL");
  auto* migrate = app.add_subcommand("migrate", "apply database migrations and exit");
  auto* rotate = app.add_subcommand("rotate-key", "give a tenant (--tenant) a new data key");
  auto* rewrap = app.add_subcommand(
      "rewrap-keys", "move every tenant key to the current master key (as the schema owner)");
  app.require_subcommand(0, 1);
  app.fallthrough();  // --tenant after rotate-key
  CLI11_PARSE(app, argc, argv);
  core::InitLogging("sandbox-mcp", "info");
  const sandbox::Command command = migrate->parsed()  ? sandbox::Command::kMigrate
                                   : rotate->parsed() ? sandbox::Command::kRotateKey
                                   : rewrap->parsed() ? sandbox::Command::kRewrapKeys
                                                      : sandbox::Command::kServe;
  if (command == sandbox::Command::kServe && options.domain.empty()) {
    core::LogError("exiting", {{"error", "--domain is required"}});
    return 2;
  }
  if ((command == sandbox::Command::kServe || command == sandbox::Command::kRotateKey) &&
      options.tenant.empty()) {
    if (!options.memory || command != sandbox::Command::kServe) {
      core::LogError("exiting", {{"error", "--tenant is required (unless --memory)"}});
      return 2;
    }
    options.tenant = "local";
  }
  const absl::Status status = sandbox::Run(options, command);
  if (!status.ok()) {
    core::LogError("exiting", {{"error", std::string(status.message())}});
    return status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  return 0;
}
