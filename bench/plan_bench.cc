// The plan engine's parallelism over the real executor: a 6-step plan of 3
// independent branches (a1 -> a2, b1 -> b2, c1 -> c2) run by the engine
// against PostgreSQL and the executor binary, whose agents think on the fake
// provider (real OpenAI wire format) for `--step-ms` per step. Each plan is
// made (operation plan_generation), stored and run; its steps' start and end
// come from the stored step records.
//
//   plan_wall_ms        median wall time of one plan run (generation included)
//   step_sum_ms         median sum of the steps' own durations
//   plan_parallel_ratio wall / sum: 1.0 when the steps ran one after another,
//                       about 1/3 when the three branches ran side by side
//
// Prints a final line: RESULT plan_parallel_ratio=... plan_wall_ms=...
//   step_sum_ms=... steps=6 branches=3
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "libs/core/clock.h"
#include "libs/core/config.h"
#include "libs/core/ids.h"
#include "libs/llm/llm_config.h"
#include "libs/llm/llm_factory.h"
#include "libs/llm/testing/fake_provider.h"
#include "libs/pg/migrate.h"
#include "libs/seal/test_keys.h"
#include "services/orchestrator/downstream/grpc_downstream.h"
#include "services/orchestrator/plans/plan_engine.h"
#include "services/orchestrator/storage/pg_plan_store.h"
#include "services/orchestrator/storage/tenant_keys.h"
#include "tests/support/identity_keys.h"
#include "tests/support/master_keys.h"
#include "tests/support/server_process.h"
#include "tests/support/test_database.h"

namespace omniforge::pg {
const std::vector<Migration>& OrchestratorMigrations();
}

namespace omniforge::orchestrator {
namespace {

using nlohmann::json;

class DiscardingSink final : public PlanEventSink {
 public:
  void Emit(::omniforge::orchestrator::v1::ChatEvent) override {}
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "plan_bench: %s\n", what.c_str());
  std::exit(1);
}

// The plan the fake model makes, and its executor turns: every step
// finishes after `step_ms`.
std::vector<llm::testing::FakeRule> Script(int step_ms) {
  json steps = json::array();
  std::vector<llm::testing::FakeRule> rules;
  for (const char* branch : {"a", "b", "c"}) {
    for (int n = 1; n <= 2; ++n) {
      const std::string id = std::string(branch) + std::to_string(n);
      const std::string task = "Branch step " + id;
      steps.push_back(
          {{"id", id},
           {"description", task},
           {"tools", json::array()},
           {"needs_executor", true},
           {"depends_on", n == 1 ? json::array() : json::array({std::string(branch) + "1"})},
           {"expected_output", ""},
           {"tool_calls", json::array()}});
      llm::testing::FakeRule turn;
      turn.match.operation = "executor_turn";
      turn.match.last_user_contains = "Step: " + task;
      turn.reply.tool_calls.push_back(
          {"call_done", "complete_task", json{{"summary", "done " + id}}.dump()});
      turn.first_byte_delay_ms = step_ms;
      rules.push_back(std::move(turn));
    }
  }
  llm::testing::FakeRule plan;
  plan.match.operation = "plan_generation";
  plan.reply.json = json{{"steps", steps}}.dump();
  rules.insert(rules.begin(), std::move(plan));
  return rules;
}

int Main(int iterations, int step_ms) {
  setenv("FAKE_LLM_KEY", "bench-key", 1);
  testing::SignCallsWithTestKey();  // the executor believes only signed calls
  auto fake = llm::testing::FakeLlmServer::Start(Script(step_ms), {.api_key = "bench-key"});
  if (!fake.ok()) Die(std::string(fake.status().message()));
  testing::TestDatabase db;
  if (auto applied =
          pg::ApplyMigrations(db.owner_dsn(), "orchestrator", pg::OrchestratorMigrations());
      !applied.ok()) {
    Die(std::string(applied.status().message()));
  }
  const auto dir =
      std::filesystem::temp_directory_path() / ("omniforge-plan-bench-" + core::NewUuid());
  std::filesystem::create_directories(dir);
  const std::string llm_yaml =
      "llm:\n  providers:\n    fake:\n      api: openai\n      base_url: " +
      (*fake)->openai_base_url() +
      "\n      api_key_env: FAKE_LLM_KEY\n  profiles:\n"
      "    balanced: [fake/model]\n  retry: {max_attempts: 1}\n";
  std::ofstream(dir / "executor.yaml") << llm_yaml;
  testing::ServerProcess executor(OMNIFORGE_EXECUTOR_BIN);
  if (auto error = executor.Start(
          testing::DatabaseEnv(db, "executor",
                               {testing::ExecutorMasterKeyEnv(), testing::TrustTestKeyEnv(),
                                testing::SignWithTestKeyEnv(), testing::SignWithTestKeyIdEnv()}),
          {"--config", (dir / "executor.yaml").string()});
      error.has_value()) {
    Die(*error);
  }

  auto reader = core::ConfigReader::FromString(llm_yaml);
  if (!reader.ok()) Die(std::string(reader.status().message()));
  auto config = llm::ReadLlmConfig(*reader);
  if (!config.ok()) Die(std::string(config.status().message()));
  auto client = llm::MakeLlmClient(*config, nullptr);
  if (!client.ok()) Die(std::string(client.status().message()));
  auto model = (*client)->ForProfile("balanced");
  pg::PgOptions options;
  options.dsn = db.service_dsn("orchestrator");
  auto pool = pg::PgPool::Create(options);
  if (!pool.ok()) Die(std::string(pool.status().message()));
  seal::KeyRing keys(**pool, kOrchestratorKeys, seal::TestMasterKey(), "bench");
  PgPlanStore store(**pool, keys);
  auto steps = MakeGrpcStepExecutors(executor.address());
  PlanGenerator generator(model.get());
  PlanAdvisor advisor(nullptr, model.get());
  PlanEngine engine(store, *steps, generator, advisor);

  const core::Identity who{"bench", "planner"};
  std::vector<double> walls, sums, ratios;
  for (int i = 0; i < iterations; ++i) {
    DiscardingSink sink;
    PlanRequest request;
    request.objective = "Three independent branches of two steps";
    PlanContext context;
    const int64_t start = core::NowMicros();
    auto outcome = engine.CreatePlan(who, "", request, context, sink);
    const double wall_ms = static_cast<double>(core::NowMicros() - start) / 1000.0;
    if (!outcome.ok()) Die(std::string(outcome.status().message()));
    if (outcome->plan.status != PlanStatus::kCompleted) Die(outcome->plan.summary);
    auto stored = store.Get(who, outcome->plan.id);
    if (!stored.ok()) Die(std::string(stored.status().message()));
    double sum_ms = 0;
    for (const PlanStep& step : stored->steps) {
      sum_ms += static_cast<double>(step.finished_micros - step.started_micros) / 1000.0;
    }
    walls.push_back(wall_ms);
    sums.push_back(sum_ms);
    ratios.push_back(wall_ms / sum_ms);
    std::printf("run %d: wall %.1f ms, steps %.1f ms, ratio %.3f\n", i + 1, wall_ms, sum_ms,
                wall_ms / sum_ms);
  }
  executor.Stop();
  std::filesystem::remove_all(dir);
  std::printf(
      "RESULT plan_parallel_ratio=%.3f plan_wall_ms=%.1f step_sum_ms=%.1f steps=6 "
      "branches=3\n",
      Median(ratios), Median(walls), Median(sums));
  return 0;
}

}  // namespace
}  // namespace omniforge::orchestrator

// NOLINTNEXTLINE(bugprone-exception-escape): a bench that cannot set up ends on the exception
int main(int argc, char** argv) {
  CLI::App app{"plan engine parallelism: a 6-step plan of 3 branches"};
  int iterations = 5;
  int step_ms = 200;
  app.add_option("--iterations", iterations, "plans to run")->check(CLI::Range(1, 100));
  app.add_option("--step-ms", step_ms, "how long each step's executor model takes")
      ->check(CLI::Range(0, 10000));
  CLI11_PARSE(app, argc, argv);
  return omniforge::orchestrator::Main(iterations, step_ms);
}
