// omniforge-intent: the understanding service.
//
//   omniforge-intent [--config FILE]
//
// Trains the local model from the utterances built into the binary at start
// (deterministic, well under a second), then serves AnalyzeIntent. With an
// `llm:` section naming providers, unsure answers go to the `speed` profile.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "libs/core/caller_identity.h"
#include "libs/core/clock.h"
#include "libs/core/config.h"
#include "libs/core/grpc_identity.h"
#include "libs/core/logging.h"
#include "libs/core/process_shield.h"
#include "libs/core/server.h"
#include "libs/core/thread_pool.h"
#include "libs/core/version.h"
#include "libs/llm/llm_config.h"
#include "libs/llm/llm_factory.h"
#include "libs/trace/tracing.h"
#include "services/intent/src/grpc_service.h"
#include "services/intent/src/labeled_data.h"

namespace omniforge::intent {
namespace {

constexpr int kDefaultPort = 50052;
constexpr int kDefaultMetricsPort = 9092;

struct Settings {
  core::ServerOptions server;
  trace::OtlpOptions tracing;
  core::CallerIdentitySettings identity;
  // OMNIFORGE_* variables that name no key this service reads.
  std::vector<std::string> unknown_environment;
  std::string log_level;
  int worker_threads = 16;
  AnalyzerOptions analyzer;
  LlmLayerOptions llm_layer;
  std::string llm_profile;
  llm::LlmConfig llm;
};

absl::StatusOr<Settings> LoadSettings(const std::string& config_file) {
  auto reader = config_file.empty() ? core::ConfigReader::FromString("")
                                    : core::ConfigReader::FromFile(config_file);
  if (!reader.ok()) return reader.status();
  core::ConfigReader& c = *reader;
  Settings s;
  s.server = core::ReadServerOptions(c, kDefaultPort, kDefaultMetricsPort);
  auto tracing = trace::ReadTracingOptions(c, "intent");
  if (!tracing.ok()) return tracing.status();
  s.tracing = *std::move(tracing);
  s.identity = core::ReadCallerIdentity(c, /*verifies=*/true, /*signs=*/false);
  s.worker_threads = static_cast<int>(c.Int("server.worker_threads", 16, 1, 1024));
  s.log_level = c.String("log.level", "info");
  s.analyzer.low_confidence = static_cast<float>(c.Double("intent.low_confidence", 0.45));
  s.analyzer.ambiguity_margin = static_cast<float>(c.Double("intent.ambiguity_margin", 0.12));
  s.analyzer.llm_threshold = static_cast<float>(c.Double("intent.llm_threshold", 0.60));
  s.analyzer.history_turns = static_cast<int>(c.Int("intent.history_turns", 20, 1, 200));
  s.llm_layer.timeout_ms = c.Int("intent.llm_timeout_ms", 4000, 100, 120000);
  s.llm_layer.history_turns = static_cast<int>(c.Int("intent.llm_history_turns", 10, 0, 200));
  s.llm_profile = c.String("intent.llm_profile", "speed");
  auto llm_config = llm::ReadLlmConfig(c);
  if (!llm_config.ok()) return llm_config.status();
  s.llm = *std::move(llm_config);
  if (absl::Status status = c.Finish(); !status.ok()) return status;
  s.unknown_environment = c.UnknownEnvironment(core::ConfigReader::EnvironmentNames());
  for (float value :
       {s.analyzer.low_confidence, s.analyzer.ambiguity_margin, s.analyzer.llm_threshold}) {
    if (!(value >= 0 && value <= 1)) {
      return absl::InvalidArgumentError(
          "config: intent.low_confidence, ambiguity_margin and llm_threshold must be in 0..1");
    }
  }
  return s;
}

absl::Status Serve(const Settings& s, const sigset_t& signals) {
  const int64_t train_start = core::NowMicros();
  auto classifier = LocalClassifier::Train(TrainingSplit());
  if (!classifier.ok()) return classifier.status();
  core::LogInfo("local model trained",
                {{"utterances", std::to_string(TrainingSplit().size())},
                 {"ms", std::to_string((core::NowMicros() - train_start) / 1000)}});
  LocalAnalyzer analyzer(**classifier, s.analyzer);

  std::unique_ptr<llm::LlmClient> client;
  std::unique_ptr<llm::ChatModel> model;
  if (s.llm.enabled()) {
    // Each analysis gives its model calls their own usage
    // (llm::CallContext::usage) and returns them with the analysis (the
    // orchestrator records them under its turn): the client needs no sink.
    auto made = llm::MakeLlmClient(s.llm, nullptr);
    if (!made.ok()) return made.status();
    client = *std::move(made);
    if (!client->HasProfile(s.llm_profile)) {
      return absl::InvalidArgumentError("intent.llm_profile '" + s.llm_profile +
                                        "' is not a profile of the llm: section");
    }
    model = client->ForProfile(s.llm_profile);
    core::LogInfo("LLM layer enabled", {{"profile", s.llm_profile}});
  } else {
    core::LogInfo("local mode: no LLM provider configured");
  }
  IntentService service(analyzer, model.get(), s.llm_layer);
  core::ThreadPool workers(s.worker_threads, 4096);
  IntentGrpcService grpc_service(service, workers);

  core::ServiceServer server(s.server);
  server.AddService(&grpc_service);
  if (absl::Status status = server.Start(); !status.ok()) return status;
  const int signal_number = core::WaitForTerminationSignal(signals);
  core::LogInfo("shutting down", {{"signal", std::to_string(signal_number)}});
  server.Shutdown();
  return absl::OkStatus();
}

}  // namespace
}  // namespace omniforge::intent

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
  CLI::App app{"omniforge intent service"};
  app.set_version_flag("--version", std::string("omniforge-intent ") + core::Version());
  std::string config_file;
  app.add_option("-c,--config", config_file, "YAML config file")->envname("OMNIFORGE_CONFIG");
  CLI11_PARSE(app, argc, argv);
  auto settings = intent::LoadSettings(config_file);
  if (!settings.ok()) {
    core::InitLogging("intent", "info");
    core::LogError("invalid configuration", {{"error", std::string(settings.status().message())}});
    return 2;
  }
  core::InitLogging("intent", settings->log_level);
  // Spans are sent until main returns (then what is queued is flushed).
  const trace::ProcessTracing tracing(settings->tracing);
  core::ConfigReader::WarnUnknownEnvironment(settings->unknown_environment);
  // The caller-assertion keys, before any call is served or made.
  absl::Status status = core::InstallCallerIdentity(settings->identity, core::kIntentAudience);
  if (status.ok()) status = intent::Serve(*settings, signals);
  if (!status.ok()) {
    core::LogError("exiting", {{"error", std::string(status.message())}});
    return 1;
  }
  return 0;
}
