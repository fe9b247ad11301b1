// Turns under injected faults: how many a user sees complete when a fifth
// of them meet a temporary failure somewhere on their way. The four service
// binaries on loopback and a real PostgreSQL; the planner is a model (the
// fake provider, real OpenAI wire format, streamed) that looks an order up
// with orders__lookup_order, a tool of tests/node/flaky_mcp_server.mjs (the
// official MCP SDK's server on Streamable HTTP), and answers from its
// result (the scenario of tests/support/flaky_orders.h).
//
// `--fault-ratio` of the turns (chosen at random, `--seed`) each meet one
// fault, the kinds taking turns: the model answering HTTP 429 or 503, its
// stream cut before any output or after part of the answer, its stream
// ending in an error event, the MCP server answering HTTP 503 or 429, the
// tool reporting rate_limited. Each fault hits one call once, as a service
// briefly down or overloaded does.
//
// A turn succeeds when its stream ends OK with no error event, the lookup's
// result reached the model, and the answer the user is shown (its text
// events, a restart replacing what came before) is the model's answer.
//
//   recovered_turn_ratio   turns that succeeded / all turns
//   faulted_turn_ratio     of the faulted turns, the share that succeeded
//   turn_p50/p99_ms        every turn's wall time
//
// Prints a final line: RESULT recovered_turn_ratio=... faulted_turn_ratio=...
//   turns=... faulted=... turn_p50_ms=... turn_p99_ms=...
#include <grpcpp/grpcpp.h>
#include <httplib.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "libs/core/ids.h"
#include "libs/llm/testing/fake_provider.h"
#include "libs/mcp/testing/node_servers.h"
#include "omniforge/orchestrator/v1/chat_service.grpc.pb.h"
#include "tests/support/flaky_orders.h"
#include "tests/support/service_stack.h"
#include "tests/support/test_database.h"

namespace omniforge::orchestrator {
namespace {

namespace pb = ::omniforge::orchestrator::v1;
using Clock = std::chrono::steady_clock;
using testing::OrderFault;

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// One turn as the user saw it.
struct Outcome {
  bool ok = false;
  double ms = 0;
  std::string why;  // what went wrong, when it did
};

Outcome Ask(pb::ChatService::Stub& stub, const std::string& key, std::string& conversation,
            const std::string& question) {
  grpc::ClientContext context;
  context.AddMetadata("authorization", "Bearer " + key);
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(90));
  pb::StreamChatRequest request;
  request.set_conversation_id(conversation);
  request.set_message(question);
  const auto start = Clock::now();
  auto reader = stub.StreamChat(&context, request);
  std::vector<pb::ChatEvent> events;
  std::string error;
  for (pb::ChatEvent event; reader->Read(&event);) {
    if (event.has_session()) conversation = event.session().conversation_id();
    if (event.has_error() && error.empty()) {
      error = pb::ChatErrorCode_Name(event.error().code()) + ": " + event.error().message();
    }
    events.push_back(std::move(event));
  }
  const grpc::Status status = reader->Finish();
  Outcome outcome;
  outcome.ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  if (!status.ok()) {
    outcome.why = "status " + std::to_string(status.error_code()) + ": " + status.error_message();
  } else if (!error.empty()) {
    outcome.why = "error event " + error;
  } else if (!testing::LookedUpOrder(events)) {
    outcome.why = "no successful lookup";
  } else if (const std::string shown = testing::ShownAnswer(events);
             shown != testing::kOrderAnswer) {
    outcome.why = "reply: " + shown.substr(0, 160);
  }
  outcome.ok = outcome.why.empty();
  return outcome;
}

// Which fault each of `turns` turns meets: `faulted` of them, chosen at
// random, the kinds taking turns.
std::vector<OrderFault> PlanFaults(int turns, int faulted, unsigned seed) {
  std::vector<int> order(static_cast<size_t>(turns));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 random(seed);
  std::shuffle(order.begin(), order.end(), random);
  std::vector<OrderFault> faults(static_cast<size_t>(turns), OrderFault::kNone);
  for (int i = 0; i < faulted; ++i) {
    faults[static_cast<size_t>(order[static_cast<size_t>(i)])] =
        testing::kOrderFaults[static_cast<size_t>(i) % testing::kOrderFaults.size()];
  }
  return faults;
}

// The MCP server's faults, by order id (flaky_mcp_server.mjs's file).
void WriteMcpFaults(const std::filesystem::path& path, const std::vector<OrderFault>& faults) {
  nlohmann::json by_order = nlohmann::json::object();
  for (size_t i = 0; i < faults.size(); ++i) {
    const std::string_view kind = testing::McpFaultKind(faults[i]);
    if (!kind.empty()) by_order[testing::OrderId(static_cast<int>(i))] = kind;
  }
  std::ofstream(path) << by_order.dump();
}

// The fake provider answering every turn's order (its faults included).
std::unique_ptr<llm::testing::FakeLlmServer> StartModel(const std::vector<OrderFault>& faults) {
  std::vector<llm::testing::FakeRule> rules;
  for (size_t i = 0; i < faults.size(); ++i) {
    for (auto& rule : testing::OrderTurnRules(testing::OrderId(static_cast<int>(i)), faults[i])) {
      rules.push_back(std::move(rule));
    }
  }
  // The warm-up's order.
  for (auto& rule : testing::OrderTurnRules("o9999", OrderFault::kNone)) {
    rules.push_back(std::move(rule));
  }
  rules.push_back(testing::OrderAnswerRule());
  auto started = llm::testing::FakeLlmServer::Start(
      std::move(rules), {.api_key = "bench-key", .record_bodies = false});
  if (!started.ok()) {
    std::fprintf(stderr, "fake provider: %s\n", started.status().ToString().c_str());
    return nullptr;
  }
  return *std::move(started);
}

// The turns that succeeded, per fault, as "succeeded/all".
void PrintByFault(const std::vector<OrderFault>& faults, const std::vector<Outcome>& outcomes) {
  std::map<std::string_view, std::pair<int, int>> by;
  for (size_t i = 0; i < faults.size(); ++i) {
    auto& [ok, all] = by[testing::OrderFaultName(faults[i])];
    ok += outcomes[i].ok ? 1 : 0;
    ++all;
  }
  for (const auto& [name, counts] : by) {
    std::printf("  %-26s %3d of %3d succeeded\n", std::string(name).c_str(), counts.first,
                counts.second);
  }
  for (size_t i = 0; i < faults.size(); ++i) {
    if (!outcomes[i].ok) {
      std::printf("  failed: %s (%s): %s\n", testing::OrderId(static_cast<int>(i)).c_str(),
                  std::string(testing::OrderFaultName(faults[i])).c_str(), outcomes[i].why.c_str());
    }
  }
}

// Runs `turns` turns over `clients` clients (each its own conversation).
std::vector<Outcome> RunTurns(pb::ChatService::Stub& stub, const std::vector<std::string>& keys,
                              int turns) {
  std::vector<Outcome> outcomes(static_cast<size_t>(turns));
  std::atomic<int> next{0};
  std::vector<std::thread> clients;
  clients.reserve(keys.size());
  for (const std::string& key : keys) {
    clients.emplace_back([&, key] {
      std::string conversation;
      for (int i; (i = next++) < turns;) {
        outcomes[static_cast<size_t>(i)] =
            Ask(stub, key, conversation, testing::OrderQuestion(testing::OrderId(i)));
      }
    });
  }
  for (std::thread& client : clients) client.join();
  return outcomes;
}

// The final line: the shares of all turns and of the faulted ones that
// succeeded, and the turns' wall times.
void PrintResult(const std::vector<OrderFault>& faults, const std::vector<Outcome>& outcomes) {
  int ok = 0, faulted = 0, faulted_ok = 0;
  std::vector<double> ms;
  ms.reserve(outcomes.size());
  for (size_t i = 0; i < outcomes.size(); ++i) {
    ok += outcomes[i].ok ? 1 : 0;
    faulted += faults[i] != OrderFault::kNone ? 1 : 0;
    faulted_ok += outcomes[i].ok && faults[i] != OrderFault::kNone ? 1 : 0;
    ms.push_back(outcomes[i].ms);
  }
  const int turns = static_cast<int>(outcomes.size());
  std::printf(
      "RESULT recovered_turn_ratio=%.3f faulted_turn_ratio=%.3f turns=%d faulted=%d "
      "turn_p50_ms=%.1f turn_p99_ms=%.1f\n",
      static_cast<double>(ok) / turns,
      faulted > 0 ? static_cast<double>(faulted_ok) / faulted : 1.0, turns, faulted,
      Percentile(ms, 0.5), Percentile(ms, 0.99));
}

int Run(int turns, double ratio, int clients, unsigned seed) {
  if (!mcp::testing::NodeAvailable() ||
      !std::filesystem::exists(mcp::testing::NodeModules() / "@modelcontextprotocol" / "sdk")) {
    std::fprintf(stderr, "node and tests/node/node_modules are needed (scripts/deps.sh)\n");
    return 1;
  }
  const int faulted = static_cast<int>(std::lround(turns * ratio));
  const std::vector<OrderFault> faults = PlanFaults(turns, faulted, seed);
  const auto dir =
      std::filesystem::temp_directory_path() / ("omniforge-fault-bench-" + core::NewUuid());
  std::filesystem::create_directories(dir);
  WriteMcpFaults(dir / "faults.json", faults);
  mcp::testing::NodeHttpServer orders(
      mcp::testing::NodeModules().parent_path() / "flaky_mcp_server.mjs",
      (dir / "faults.json").string());
  if (orders.port() <= 0) {
    std::fprintf(stderr, "flaky_mcp_server.mjs did not start\n");
    return 1;
  }
  std::unique_ptr<llm::testing::FakeLlmServer> model = StartModel(faults);
  if (!model) return 1;
  std::ofstream(dir / "executor.yaml") << testing::FlakyOrdersExecutorConfig(
      "http://127.0.0.1:" + std::to_string(orders.port()) + "/mcp");
  std::ofstream(dir / "orchestrator.yaml")
      << "llm:\n  providers:\n    fake:\n      api: openai\n      base_url: "
      << model->openai_base_url()
      << "\n      api_key_env: BENCH_LLM_KEY\n  profiles:\n    balanced: [fake/planner]\n";

  testing::TestDatabase db;
  std::vector<core::Identity> users;
  users.reserve(static_cast<size_t>(clients));
  for (int c = 0; c < clients; ++c) users.push_back({"bench", "user-" + std::to_string(c)});
  const std::vector<std::string> keys =
      testing::WriteApiKeyFile(dir / "api_keys", users, "fault bench");
  testing::ServiceStack stack({OMNIFORGE_CONVERSATION_BIN, OMNIFORGE_INTENT_BIN,
                               OMNIFORGE_EXECUTOR_BIN, OMNIFORGE_ORCHESTRATOR_BIN});
  testing::ServiceStack::ExtraEnv extra;
  extra.executor = {"OMNIFORGE_CONFIG=" + (dir / "executor.yaml").string()};
  extra.orchestrator = testing::DatabaseEnv(
      db, "orchestrator",
      {"OMNIFORGE_CONFIG=" + (dir / "orchestrator.yaml").string(), "BENCH_LLM_KEY=bench-key"});
  if (auto error = stack.Start(db, (dir / "api_keys").string(), extra)) {
    std::fprintf(stderr, "%s\n", error->c_str());
    return 1;
  }
  auto stub = pb::ChatService::NewStub(
      grpc::CreateChannel(stack.orchestrator().address(), grpc::InsecureChannelCredentials()));

  // The executor lists the server's tools once it has connected.
  std::string warm_up;
  Outcome ready;
  for (auto give_up = Clock::now() + std::chrono::seconds(30);
       !(ready = Ask(*stub, keys[0], warm_up, testing::OrderQuestion("o9999"))).ok &&
       Clock::now() < give_up;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  if (!ready.ok) {
    std::fprintf(stderr, "the stack never answered an order question: %s\n", ready.why.c_str());
    return 1;
  }

  const std::vector<Outcome> outcomes = RunTurns(*stub, keys, turns);
  std::printf("%d turns over %d clients, %d with a fault:\n", turns, clients, faulted);
  PrintByFault(faults, outcomes);
  httplib::Client stats("127.0.0.1", orders.port());
  if (auto page = stats.Get("/stats")) std::printf("  MCP server: %s\n", page->body.c_str());
  std::printf("  model calls: %zu\n", model->RequestCount());
  std::filesystem::remove_all(dir);
  PrintResult(faults, outcomes);
  return 0;
}

}  // namespace
}  // namespace omniforge::orchestrator

// NOLINTNEXTLINE(bugprone-exception-escape): a bench that cannot set up ends on the exception
int main(int argc, char** argv) {
  CLI::App app{"chat turns under injected temporary faults, over the real stack"};
  int turns = 200;
  double ratio = 0.2;
  int clients = 4;
  unsigned seed = 1;
  app.add_option("--turns", turns, "turns in all")->check(CLI::PositiveNumber);
  app.add_option("--fault-ratio", ratio, "share of the turns that meet a fault")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--clients", clients, "clients sending turns at once")->check(CLI::Range(1, 64));
  app.add_option("--seed", seed, "which turns meet a fault");
  CLI11_PARSE(app, argc, argv);
  return omniforge::orchestrator::Run(turns, ratio, clients, seed);
}
