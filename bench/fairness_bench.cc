// Fairness between tenants on the real stack (the four service binaries on
// loopback, a real PostgreSQL, the planner on the fake provider as in
// chat_bench: list_agents_model.h): a quiet tenant's user sends turns one
// after another (20 ms apart) while a noisy tenant keeps 300 streams open,
// each sending its next turn as soon as the last ended and, when refused,
// again after the retry hint the refusal carries (google.rpc.RetryInfo).
//
//   quiet_p50/p99_ms       the quiet user's turns alone
//   loaded_p50/p99_ms      the same with the noisy tenant at 300 streams,
//                          under the limits given (--limits; by default
//                          2 turns at once and 25 calls/s per tenant, the
//                          same for both tenants)
//   ratio                  loaded_p99 / quiet_p99 (the target: at most 2)
//   unlimited_p99_ms       the same without limits, for comparison (one
//   unlimited_ratio        round of at most 25 turns: each takes seconds)
//   noisy_turns_per_s      the noisy tenant's turns answered per second
//                          under the limits, and its refusals per second
//
// Each loaded phase runs the quiet user's turns in rounds between rounds
// alone, so that a ratio compares times measured moments apart on this
// shared machine.
//
// Prints a final line: RESULT quiet_p99_ms=... loaded_p99_ms=... ratio=...
//   unlimited_p99_ms=... unlimited_ratio=... noisy_turns_per_s=... noisy_refused_per_s=...
#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench/list_agents_model.h"
#include "libs/core/api_keys.h"
#include "libs/core/grpc_status.h"
#include "libs/core/ids.h"
#include "libs/core/retry_hint.h"
#include "libs/llm/testing/fake_provider.h"
#include "omniforge/orchestrator/v1/chat_service.grpc.pb.h"
#include "tests/support/identity_keys.h"
#include "tests/support/master_keys.h"
#include "tests/support/server_process.h"
#include "tests/support/test_database.h"

namespace omniforge::orchestrator {
namespace {

namespace pb = ::omniforge::orchestrator::v1;
using Clock = std::chrono::steady_clock;
using Env = std::vector<std::string>;

constexpr char kMasterKey[] = "6f6d6e69666f7267652d62656e63682d6d61737465722d6b65792d3030303030";

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// One "list my agents" turn in `conversation` (set from the first turn);
// its status, every event read.
grpc::Status Turn(pb::ChatService::Stub& stub, const std::string& key, std::string& conversation) {
  grpc::ClientContext context;
  context.AddMetadata("authorization", "Bearer " + key);
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  pb::StreamChatRequest request;
  request.set_message("list my agents");
  request.set_conversation_id(conversation);
  auto reader = stub.StreamChat(&context, request);
  pb::ChatEvent event;
  while (reader->Read(&event)) {
    if (event.has_session()) conversation = event.session().conversation_id();
  }
  return reader->Finish();
}

// The noisy tenant: one thread per stream, each sending turns back to back
// and, when refused, waiting the hint (100 ms without one).
class NoisyTenant final {
 public:
  NoisyTenant(pb::ChatService::Stub& stub, const std::vector<std::string>& keys) {
    threads_.reserve(keys.size());
    for (const std::string& key : keys) {
      threads_.emplace_back([this, &stub, key] {
        std::string conversation;
        while (!stop_.load()) {
          const grpc::Status status = Turn(stub, key, conversation);
          if (status.ok()) {
            ++answered_;
          } else if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
            ++refused_;
            const auto wait = core::RetryAfter(core::FromGrpcStatus(status))
                                  .value_or(std::chrono::milliseconds(100));
            for (auto until = Clock::now() + wait; !stop_.load() && Clock::now() < until;) {
              std::this_thread::sleep_for(
                  std::min<Clock::duration>(until - Clock::now(), std::chrono::milliseconds(50)));
            }
          } else {
            ++failed_;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
          }
        }
      });
    }
  }
  ~NoisyTenant() {
    stop_.store(true);
    for (std::thread& t : threads_) t.join();
  }
  int64_t answered() const { return answered_.load(); }
  int64_t refused() const { return refused_.load(); }
  int64_t failed() const { return failed_.load(); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> answered_{0}, refused_{0}, failed_{0};
  std::vector<std::thread> threads_;
};

struct Stack {
  testing::TestDatabase db;
  std::filesystem::path dir;
  testing::ServerProcess conversation{OMNIFORGE_CONVERSATION_BIN};
  testing::ServerProcess intent{OMNIFORGE_INTENT_BIN};
  testing::ServerProcess executor{OMNIFORGE_EXECUTOR_BIN};
  testing::ServerProcess orchestrator{OMNIFORGE_ORCHESTRATOR_BIN};
  std::unique_ptr<llm::testing::FakeLlmServer> provider;
  std::unique_ptr<pb::ChatService::Stub> stub;
  std::string quiet_key;
  std::vector<std::string> noisy_keys;

  ~Stack() { std::filesystem::remove_all(dir); }

  // The services, the fake provider and the keys; false when one failed.
  bool Start(int noisy_streams) {
    dir = std::filesystem::temp_directory_path() / ("omniforge-fairness-" + core::NewUuid());
    std::filesystem::create_directories(dir);
    std::ofstream keys(dir / "api_keys");
    auto quiet = core::GenerateApiKey({"quiet", "user-0"}, "");
    keys << quiet->file_line << "\n";
    quiet_key = quiet->key;
    for (int i = 0; i < noisy_streams; ++i) {
      auto key = core::GenerateApiKey({"noisy", "user-" + std::to_string(i)}, "");
      keys << key->file_line << "\n";
      noisy_keys.push_back(key->key);
    }
    keys.close();
    const std::string trust = testing::TrustTestKeyEnv();
    const Env executor_env =
        testing::DatabaseEnv(db, "executor",
                             {trust, testing::ExecutorMasterKeyEnv(), testing::SignWithTestKeyEnv(),
                              testing::SignWithTestKeyIdEnv()});
    if (!Started(conversation.Start(testing::DatabaseEnv(
            db, "conversation",
            {trust, std::string("OMNIFORGE_ENCRYPTION_MASTER_KEY=") + kMasterKey}))) ||
        !Started(intent.Start({trust})) || !Started(executor.Start(executor_env))) {
      return false;
    }
    auto started = llm::testing::FakeLlmServer::Start(
        bench::ListAgentsModelRules(),
        {.api_key = "bench-key", .max_threads = 512, .record_bodies = false});
    if (!started.ok()) {
      std::fprintf(stderr, "fake provider: %s\n", started.status().ToString().c_str());
      return false;
    }
    provider = *std::move(started);
    return true;
  }

  // (Re)starts the orchestrator with `limits` (YAML under limits:, empty:
  // none).
  bool StartOrchestrator(const std::string& limits) {
    orchestrator.Stop();
    std::ofstream config(dir / "orchestrator.yaml");
    config << "llm:\n  providers:\n    fake:\n      api: openai\n      base_url: "
           << provider->openai_base_url()
           << "\n      api_key_env: BENCH_LLM_KEY\n  profiles:\n    balanced: [fake/planner]\n";
    if (!limits.empty()) config << "limits:\n" << limits;
    config.close();
    const Env env = testing::DatabaseEnv(
        db, "orchestrator",
        {"OMNIFORGE_AUTH_API_KEYS_FILE=" + (dir / "api_keys").string(),
         "OMNIFORGE_SPOOL_DIR=" + (dir / "spool").string(),
         "OMNIFORGE_DOWNSTREAM_CONVERSATION=" + conversation.address(),
         "OMNIFORGE_DOWNSTREAM_INTENT=" + intent.address(),
         "OMNIFORGE_DOWNSTREAM_EXECUTOR=" + executor.address(),
         std::string("OMNIFORGE_ENCRYPTION_MASTER_KEY=") + kMasterKey, "BENCH_LLM_KEY=bench-key",
         testing::SignWithTestKeyEnv(), testing::SignWithTestKeyIdEnv()});
    if (!Started(orchestrator.Start(env, {"--config", (dir / "orchestrator.yaml").string()}))) {
      return false;
    }
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_MAX_CONCURRENT_STREAMS, 1000);
    stub = pb::ChatService::NewStub(grpc::CreateCustomChannel(
        orchestrator.address(), grpc::InsecureChannelCredentials(), args));
    return true;
  }

  static bool Started(const std::optional<std::string>& error) {
    if (error) std::fprintf(stderr, "%s\n", error->c_str());
    return !error;
  }
};

// The quiet user's wall times for `turns` turns, 20 ms apart (a pace its
// tenant's rate allows); empty when one failed.
std::vector<double> QuietTurns(pb::ChatService::Stub& stub, const std::string& key, int turns,
                               std::string& conversation) {
  std::vector<double> ms;
  for (int i = 0; i < turns; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const auto start = Clock::now();
    const grpc::Status status = Turn(stub, key, conversation);
    if (!status.ok()) {
      std::fprintf(stderr, "quiet turn failed: %s\n", status.error_message().c_str());
      return {};
    }
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  return ms;
}

struct Phase {
  std::vector<double> alone;
  std::vector<double> loaded;
  double noisy_answered_per_s = 0;
  double noisy_refused_per_s = 0;
  int64_t noisy_failed = 0;
  bool ok = false;
};

// `rounds` rounds: the quiet user alone for `turns` turns, then with the
// noisy tenant at full pelt for `turns` turns (after a settling second).
Phase Measure(Stack& stack, int rounds, int turns) {
  Phase phase;
  std::string conversation;
  QuietTurns(*stack.stub, stack.quiet_key, 20, conversation);  // warm-up
  double loaded_seconds = 0;
  int64_t answered = 0, refused = 0;
  for (int r = 0; r < rounds; ++r) {
    std::vector<double> alone = QuietTurns(*stack.stub, stack.quiet_key, turns, conversation);
    if (alone.empty()) return phase;
    phase.alone.insert(phase.alone.end(), alone.begin(), alone.end());
    NoisyTenant noisy(*stack.stub, stack.noisy_keys);
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const int64_t answered_before = noisy.answered(), refused_before = noisy.refused();
    const auto start = Clock::now();
    std::vector<double> loaded = QuietTurns(*stack.stub, stack.quiet_key, turns, conversation);
    loaded_seconds += std::chrono::duration<double>(Clock::now() - start).count();
    answered += noisy.answered() - answered_before;
    refused += noisy.refused() - refused_before;
    phase.noisy_failed += noisy.failed();
    if (loaded.empty()) return phase;
    phase.loaded.insert(phase.loaded.end(), loaded.begin(), loaded.end());
  }
  phase.noisy_answered_per_s = static_cast<double>(answered) / loaded_seconds;
  phase.noisy_refused_per_s = static_cast<double>(refused) / loaded_seconds;
  phase.ok = true;
  return phase;
}

void Print(const char* name, const Phase& phase) {
  std::printf(
      "%s: quiet alone p50 %.2f ms p99 %.2f ms; with the noisy tenant p50 %.2f ms p99 %.2f ms "
      "(ratio %.2f); noisy tenant %.0f turns/s answered, %.0f refused/s, %lld failed\n",
      name, Percentile(phase.alone, 0.5), Percentile(phase.alone, 0.99),
      Percentile(phase.loaded, 0.5), Percentile(phase.loaded, 0.99),
      Percentile(phase.loaded, 0.99) / Percentile(phase.alone, 0.99), phase.noisy_answered_per_s,
      phase.noisy_refused_per_s, static_cast<long long>(phase.noisy_failed));
}

int Run(int streams, int rounds, int turns, const std::string& limits) {
  Stack stack;
  if (!stack.Start(streams)) return 1;
  std::printf("limits:\n%s", limits.c_str());
  if (!stack.StartOrchestrator(limits)) return 1;
  const Phase limited = Measure(stack, rounds, turns);
  if (!limited.ok) return 1;
  Print("with limits", limited);
  // Without limits a loaded turn takes seconds: one shorter round shows it.
  if (!stack.StartOrchestrator("")) return 1;
  const Phase unlimited = Measure(stack, 1, std::min(turns, 25));
  if (!unlimited.ok) return 1;
  Print("without limits", unlimited);
  const double quiet_p99 = Percentile(limited.alone, 0.99);
  const double loaded_p99 = Percentile(limited.loaded, 0.99);
  const double unlimited_p99 = Percentile(unlimited.loaded, 0.99);
  std::printf(
      "RESULT quiet_p50_ms=%.2f quiet_p99_ms=%.2f loaded_p50_ms=%.2f loaded_p99_ms=%.2f "
      "ratio=%.2f unlimited_p99_ms=%.2f unlimited_ratio=%.2f noisy_turns_per_s=%.0f "
      "noisy_refused_per_s=%.0f\n",
      Percentile(limited.alone, 0.5), quiet_p99, Percentile(limited.loaded, 0.5), loaded_p99,
      loaded_p99 / quiet_p99, unlimited_p99, unlimited_p99 / Percentile(unlimited.alone, 0.99),
      limited.noisy_answered_per_s, limited.noisy_refused_per_s);
  return 0;
}

}  // namespace
}  // namespace omniforge::orchestrator

// NOLINTNEXTLINE(bugprone-exception-escape): a bench that cannot set up ends on the exception
int main(int argc, char** argv) {
  CLI::App app{"one tenant's 300 streams against another tenant's turn latency"};
  int streams = 300;
  int rounds = 3;
  int turns = 100;
  std::string limits =
      "  tenant_turns: 2\n"
      "  tenant_rate: 25\n";
  app.add_option("--streams", streams, "the noisy tenant's concurrent streams")
      ->check(CLI::PositiveNumber);
  app.add_option("--rounds", rounds, "rounds of quiet-alone then loaded")
      ->check(CLI::PositiveNumber);
  app.add_option("--turns", turns, "the quiet user's turns per round and phase")
      ->check(CLI::PositiveNumber);
  app.add_option("--limits", limits, "the limits: section of the limited phase (YAML)");
  CLI11_PARSE(app, argc, argv);
  return omniforge::orchestrator::Run(streams, rounds, turns, limits);
}
