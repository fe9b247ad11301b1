// Chat turns through the public API over the real stack: the four service
// binaries on loopback and a real PostgreSQL (fsync and synchronous_commit
// on). A turn is "list my agents": the user's message is stored, the context
// window read, the agents listed (for the intent service), the intent
// analysed, then the planner runs list_agents as a READ tool and the reply is
// stored with its routing metadata; every event is streamed.
//   --mode llm (default)  the planner is a model: the fake provider (real
//                         OpenAI wire format, streamed, answering at once:
//                         each answer's events leave in one write)
//                         asks for list_agents, gets its result in the same
//                         session and answers
//   --mode local          the local policy plans (no model)
//   --identity signed (default) | metadata: the services believe only caller
//                         assertions, as every deployment runs them, or the
//                         identity metadata
// Each client owns one conversation and sends its turns one after another,
// so the history grows as in real use.
//
//   turn_p50/p99_ms        `--turns` turns at 1 client
//   turns_per_s_c16/c64    `--seconds` at 16 and at 64 clients
//   pg_rows_per_turn       rows inserted, updated or deleted in PostgreSQL per
//                          turn (pg_stat_user_tables, over the 1-client phase)
//   rss_mb                 the orchestrator's peak resident memory
//
// Prints a final line: RESULT turn_p50_ms=... turn_p99_ms=... turns_per_s_c16=...
//   turns_per_s_c64=... pg_rows_per_turn=... rss_mb=...
#include <grpcpp/grpcpp.h>
#include <httplib.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <pqxx/pqxx>
#include <sstream>
#include <string>
#include <vector>

#include "bench/list_agents_model.h"
#include "libs/core/api_keys.h"
#include "libs/core/ids.h"
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

constexpr char kMasterKey[] = "6f6d6e69666f7267652d62656e63682d6d61737465722d6b65792d3030303030";

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// Every histogram series ending in _seconds a service exports, as
// {series: (sum, count)}, read from its Prometheus endpoint.
using Timings = std::map<std::string, std::pair<double, double>>;

Timings ScrapeTimings(int metrics_port) {
  Timings out;
  httplib::Client client("127.0.0.1", metrics_port);
  auto response = client.Get("/metrics");
  if (!response || response->status != 200) return out;
  std::istringstream lines(response->body);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t space = line.rfind(' ');
    if (line.empty() || line[0] == '#' || space == std::string::npos) continue;
    std::string series = line.substr(0, space);
    const double value = std::strtod(line.c_str() + space + 1, nullptr);
    for (const auto& [suffix, is_sum] :
         {std::pair{"_seconds_sum", true}, {"_seconds_count", false}}) {
      const size_t at = series.find(suffix);
      if (at == std::string::npos) continue;
      const std::string key = series.substr(0, at) + series.substr(at + std::strlen(suffix));
      (is_sum ? out[key].first : out[key].second) = value;
    }
  }
  return out;
}

// Where a turn's time went: per service and series, calls per turn and the
// mean time of one, between two scrapes.
void PrintTimings(const char* service, const Timings& before, const Timings& after, int turns) {
  for (const auto& [series, totals] : after) {
    auto it = before.find(series);
    const double sum = totals.first - (it == before.end() ? 0 : it->second.first);
    const double count = totals.second - (it == before.end() ? 0 : it->second.second);
    if (count < 1) continue;
    std::printf("  %-13s %-70s %5.2f per turn, %7.3f ms each\n", service, series.c_str(),
                count / turns, sum / count * 1000.0);
  }
}

// Rows written so far per table (schema.table: inserted + updated +
// deleted). An idle backend reports its counts up to 10 s late (PostgreSQL
// 15 flushes statistics at most once a second, and an idle backend's
// leftovers after 10 s), so this reads until the counts have not moved for
// 12 s (the services are idle meanwhile).
std::map<std::string, int64_t> RowsByTable(const std::string& dsn) {
  pqxx::connection conn(dsn);
  auto read = [&] {
    pqxx::nontransaction tx(conn);
    tx.exec("SELECT pg_stat_clear_snapshot()");
    std::map<std::string, int64_t> out;
    for (const pqxx::row& row :
         tx.exec("SELECT schemaname || '.' || relname, n_tup_ins + n_tup_upd + n_tup_del"
                 " FROM pg_stat_user_tables"))
      out[row[0].as<std::string>()] = row[1].as<int64_t>();
    return out;
  };
  std::map<std::string, int64_t> last = read();
  for (int stable = 0, tries = 0; stable < 24 && tries < 120; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    std::map<std::string, int64_t> now = read();
    stable = now == last ? stable + 1 : 0;
    last = std::move(now);
  }
  return last;
}

// CPU seconds a process has used (user + system), from /proc/<pid>/stat.
double CpuSeconds(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  // Fields after the command name (which may hold spaces) start at ") ".
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; fields >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::strtod(field.c_str(), nullptr);
    if (i == 15) break;
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

int64_t PeakRssKb(int pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6));
  }
  return 0;
}

// A client: one conversation, one turn at a time. A turn is read through
// gRPC's callback API, so its events are handled on the threads that read
// them off the connection: the load generator costs no thread switch per
// event, and the orchestrator's cost per turn stands out in the numbers.
class Client {
 public:
  // Called once a turn has ended with its wall time in ms, or a negative
  // number on failure.
  using Then = std::function<void(double)>;

  Client(pb::ChatService::Stub& stub, std::string key) : stub_(stub), key_(std::move(key)) {}

  void Turn(Then then) { (new TurnCall(*this, std::move(then)))->Start(); }

  // One turn, waited for.
  double Turn() {
    std::promise<double> ended;
    Turn([&ended](double ms) { ended.set_value(ms); });
    return ended.get_future().get();
  }

 private:
  class TurnCall final : public grpc::ClientReadReactor<pb::ChatEvent> {
   public:
    TurnCall(Client& client, Then then) : client_(client), then_(std::move(then)) {
      context_.AddMetadata("authorization", "Bearer " + client_.key_);
      context_.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
      request_.set_conversation_id(client_.conversation_);
      request_.set_message("list my agents");
    }

    void Start() {
      start_ = Clock::now();
      client_.stub_.async()->StreamChat(&context_, &request_, this);
      StartRead(&event_);
      StartCall();
    }

    void OnReadDone(bool ok) override {
      if (!ok) return;  // the stream ended: OnDone follows
      if (event_.has_session()) client_.conversation_ = event_.session().conversation_id();
      if (event_.has_tool_result() && !event_.tool_result().is_error()) listed_ = true;
      StartRead(&event_);
    }

    // The last callback: the call no longer uses this object.
    void OnDone(const grpc::Status& status) override {
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start_).count();
      const double outcome = status.ok() && listed_ ? ms : -1;
      Then then = std::move(then_);
      delete this;
      then(outcome);
    }

   private:
    Client& client_;
    Then then_;
    grpc::ClientContext context_;
    pb::StreamChatRequest request_;
    pb::ChatEvent event_;
    bool listed_ = false;
    Clock::time_point start_;
  };

  pb::ChatService::Stub& stub_;
  const std::string key_;
  std::string conversation_;  // touched by one turn at a time
};

using Env = std::vector<std::string>;
// Each service's name and process, in the order the timings are printed.
using Services = std::vector<std::pair<const char*, testing::ServerProcess*>>;

// Writes 64 API keys (tenant "bench", users user-0 to user-63) to
// dir/api_keys and returns the keys.
std::vector<std::string> WriteApiKeys(const std::filesystem::path& dir) {
  std::vector<std::string> keys;
  std::ofstream key_file(dir / "api_keys");
  for (int i = 0; i < 64; ++i) {
    auto key = core::GenerateApiKey({"bench", "user-" + std::to_string(i)}, "");
    key_file << key->file_line << "\n";
    keys.push_back(key->key);
  }
  return keys;
}

// Without signed calls every service is told it runs a test set-up, or it
// would not start without its keys.
constexpr char kUnverified[] = "OMNIFORGE_IDENTITY_ALLOW_UNVERIFIED=true";

// Starts the services the orchestrator calls; false (and why, on stderr) when
// one does not start.
// With `signed_calls`, as every deployment runs: the services believe only
// caller assertions, which the orchestrator and the executor sign.
bool StartDownstream(const testing::TestDatabase& db, testing::ServerProcess& conversation,
                     testing::ServerProcess& intent, testing::ServerProcess& executor,
                     bool signed_calls) {
  Env trust = {kUnverified}, sign;
  if (signed_calls) {
    trust = {testing::TrustTestKeyEnv()};
    sign = {testing::SignWithTestKeyEnv(), testing::SignWithTestKeyIdEnv()};
  }
  Env conversation_env = testing::DatabaseEnv(
      db, "conversation", {std::string("OMNIFORGE_ENCRYPTION_MASTER_KEY=") + kMasterKey});
  Env executor_env = testing::DatabaseEnv(db, "executor", {testing::ExecutorMasterKeyEnv()});
  conversation_env.insert(conversation_env.end(), trust.begin(), trust.end());
  executor_env.insert(executor_env.end(), trust.begin(), trust.end());
  executor_env.insert(executor_env.end(), sign.begin(), sign.end());
  for (auto [process, env] : {std::pair{&conversation, conversation_env}, std::pair{&intent, trust},
                              std::pair{&executor, executor_env}}) {
    if (auto error = process->Start(env)) {
      std::fprintf(stderr, "%s\n", error->c_str());
      return false;
    }
  }
  return true;
}

// The model (list_agents_model.h). Starts it and points the orchestrator's
// config (written under `dir`) and environment at it; nullptr (and why, on
// stderr) when it does not start.
std::unique_ptr<llm::testing::FakeLlmServer> StartModel(
    const std::filesystem::path& dir, const testing::TestDatabase& db, Env& orchestrator_env,
    std::vector<std::string>& orchestrator_args) {
  auto started = llm::testing::FakeLlmServer::Start(
      bench::ListAgentsModelRules(), {.api_key = "bench-key", .record_bodies = false});
  if (!started.ok()) {
    std::fprintf(stderr, "fake provider: %s\n", started.status().ToString().c_str());
    return nullptr;
  }
  std::unique_ptr<llm::testing::FakeLlmServer> provider = *std::move(started);
  std::ofstream config(dir / "orchestrator.yaml");
  config << "llm:\n  providers:\n    fake:\n      api: openai\n      base_url: "
         << provider->openai_base_url()
         << "\n      api_key_env: BENCH_LLM_KEY\n  profiles:\n    balanced: [fake/planner]\n";
  orchestrator_args = {"--config", (dir / "orchestrator.yaml").string()};
  // With a model, every turn's calls are recorded in orchestration.llm_turn_usage.
  for (std::string& entry : testing::DatabaseEnv(db, "orchestrator")) {
    orchestrator_env.push_back(std::move(entry));
  }
  orchestrator_env.push_back("BENCH_LLM_KEY=bench-key");
  return provider;
}

// Rows written per table since `before`, printed per turn; returns the
// rows written per turn over all tables.
double PrintRowsWritten(const std::map<std::string, int64_t>& before, const std::string& dsn,
                        int turns, const std::vector<double>& ms) {
  std::map<std::string, int64_t> written;  // per table, during these turns
  int64_t rows = 0;
  for (const auto& [table, total] : RowsByTable(dsn)) {
    auto found = before.find(table);
    written[table] = total - (found == before.end() ? 0 : found->second);
    rows += written[table];
  }
  const double rows_per_turn = static_cast<double>(rows) / turns;
  std::printf("1 client: %d turns, p50 %.2f ms, p99 %.2f ms, %.1f rows written per turn\n", turns,
              Percentile(ms, 0.5), Percentile(ms, 0.99), rows_per_turn);
  for (const auto& [table, n] : written) {
    if (n > 0)
      std::printf("  %-36s %.2f rows per turn\n", table.c_str(), static_cast<double>(n) / turns);
  }
  return rows_per_turn;
}

// The fake's own time: from a request's arrival to its answer's last byte,
// over the requests after the first `calls_before`.
void PrintProviderTime(const llm::testing::FakeLlmServer& provider, size_t calls_before,
                       int turns) {
  const std::vector<llm::testing::RecordedRequest> calls = provider.Requests();
  double fake_ms = 0;
  for (size_t i = calls_before; i < calls.size(); ++i) {
    fake_ms += static_cast<double>(calls[i].finished_micros - calls[i].time_micros) / 1000.0;
  }
  const size_t n = calls.size() - calls_before;
  std::printf("  %-13s %-70s %5.2f per turn, %7.3f ms each\n", "fake provider",
              "request received to answer written", static_cast<double>(n) / turns,
              fake_ms / static_cast<double>(std::max<size_t>(1, n)));
}

// What the 1-client phase measured.
struct OneClientResult {
  std::vector<double> ms;  // each turn's wall time
  double rows_per_turn = 0;
};

// One client, one conversation, turn after turn: `turns` turns after a
// warm-up, with the rows written and the server-side time printed. nullopt
// when a turn failed.
std::optional<OneClientResult> MeasureOneClient(pb::ChatService::Stub& stub, const std::string& key,
                                                const std::string& dsn, const Services& services,
                                                const llm::testing::FakeLlmServer* provider,
                                                int turns) {
  Client single(stub, key);
  for (int i = 0; i < 20; ++i) single.Turn();  // warm-up
  const auto tables_before = RowsByTable(dsn);
  std::vector<Timings> timings_before;
  timings_before.reserve(services.size());
  for (const auto& [name, process] : services)
    timings_before.push_back(ScrapeTimings(process->metrics_port()));
  const size_t provider_calls_before = provider ? provider->RequestCount() : 0;
  OneClientResult result;
  for (int i = 0; i < turns; ++i) {
    const double t = single.Turn();
    if (t < 0) {
      std::fprintf(stderr, "turn %d failed\n", i);
      return std::nullopt;
    }
    result.ms.push_back(t);
  }
  result.rows_per_turn = PrintRowsWritten(tables_before, dsn, turns, result.ms);
  std::printf("  server-side time of the 1-client turns:\n");
  for (size_t i = 0; i < services.size(); ++i) {
    PrintTimings(services[i].first, timings_before[i],
                 ScrapeTimings(services[i].second->metrics_port()), turns);
  }
  if (provider) PrintProviderTime(*provider, provider_calls_before, turns);
  return result;
}

// `clients` clients, each in its own conversation, for `seconds`: prints the
// rate, latencies and CPU per turn, and returns turns per second (-1 when a
// turn failed).
double MeasureThroughput(pb::ChatService::Stub& stub, const std::vector<std::string>& keys,
                         const Services& services, int clients, double seconds) {
  std::vector<double> cpu_before;
  cpu_before.reserve(services.size());
  for (const auto& [name, process] : services) cpu_before.push_back(CpuSeconds(process->pid()));
  const double own_cpu_before = CpuSeconds(getpid());
  std::atomic<int64_t> done{0}, failed{0};
  std::vector<std::unique_ptr<Client>> users;
  std::vector<std::vector<double>> latencies(clients);
  std::mutex mu;
  std::condition_variable all_ended;
  int running = clients;
  const auto start = Clock::now();
  // Each client sends its next turn from the callback that ends the last.
  std::function<void(int)> next = [&](int c) {
    users[c]->Turn([&, c](double t) {
      if (t < 0) {
        ++failed;
      } else {
        ++done;
        latencies[c].push_back(t);
      }
      if (std::chrono::duration<double>(Clock::now() - start).count() < seconds) {
        next(c);
        return;
      }
      std::lock_guard lock(mu);
      if (--running == 0) all_ended.notify_all();
    });
  };
  for (int c = 0; c < clients; ++c) users.push_back(std::make_unique<Client>(stub, keys[c]));
  for (int c = 0; c < clients; ++c) next(c);
  {
    std::unique_lock lock(mu);
    all_ended.wait(lock, [&] { return running == 0; });
  }
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::printf("%d clients: %.0f turns/s, p50 %.1f ms, p99 %.1f ms, %lld failed\n", clients,
              done / elapsed, Percentile(all, 0.5), Percentile(all, 0.99),
              static_cast<long long>(failed.load()));
  std::printf("  CPU per turn:");
  for (size_t i = 0; i < services.size(); ++i) {
    std::printf(" %s %.0f us", services[i].first,
                (CpuSeconds(services[i].second->pid()) - cpu_before[i]) * 1e6 /
                    static_cast<double>(std::max<int64_t>(1, done.load())));
  }
  // This process: the clients, and the fake provider when the model plans.
  std::printf(" (load and fake provider %.0f us)\n",
              (CpuSeconds(getpid()) - own_cpu_before) * 1e6 /
                  static_cast<double>(std::max<int64_t>(1, done.load())));
  return failed > 0 ? -1.0 : done / elapsed;
}

int Run(int turns, double seconds, bool model, bool signed_calls) {
  testing::TestDatabase db;
  const auto dir =
      std::filesystem::temp_directory_path() / ("omniforge-chat-bench-" + core::NewUuid());
  std::filesystem::create_directories(dir);
  const std::vector<std::string> keys = WriteApiKeys(dir);
  testing::ServerProcess conversation(OMNIFORGE_CONVERSATION_BIN);
  testing::ServerProcess intent(OMNIFORGE_INTENT_BIN);
  testing::ServerProcess executor(OMNIFORGE_EXECUTOR_BIN);
  testing::ServerProcess orchestrator(OMNIFORGE_ORCHESTRATOR_BIN);
  if (!StartDownstream(db, conversation, intent, executor, signed_calls)) return 1;
  std::unique_ptr<llm::testing::FakeLlmServer> provider;
  Env orchestrator_env = {"OMNIFORGE_AUTH_API_KEYS_FILE=" + (dir / "api_keys").string(),
                          "OMNIFORGE_SPOOL_DIR=" + (dir / "spool").string(),
                          "OMNIFORGE_DOWNSTREAM_CONVERSATION=" + conversation.address(),
                          "OMNIFORGE_DOWNSTREAM_INTENT=" + intent.address(),
                          "OMNIFORGE_DOWNSTREAM_EXECUTOR=" + executor.address(),
                          std::string("OMNIFORGE_ENCRYPTION_MASTER_KEY=") + kMasterKey};
  if (signed_calls) {
    orchestrator_env.push_back(testing::SignWithTestKeyEnv());
    orchestrator_env.push_back(testing::SignWithTestKeyIdEnv());
  } else {
    orchestrator_env.emplace_back(kUnverified);
  }
  std::vector<std::string> orchestrator_args;
  if (model) {
    provider = StartModel(dir, db, orchestrator_env, orchestrator_args);
    if (!provider) return 1;
  }
  if (auto error = orchestrator.Start(orchestrator_env, orchestrator_args)) {
    std::fprintf(stderr, "%s\n", error->c_str());
    return 1;
  }
  auto stub = pb::ChatService::NewStub(
      grpc::CreateChannel(orchestrator.address(), grpc::InsecureChannelCredentials()));

  const Services services = {{"orchestrator", &orchestrator},
                             {"conversation", &conversation},
                             {"intent", &intent},
                             {"executor", &executor}};
  const std::optional<OneClientResult> one =
      MeasureOneClient(*stub, keys[0], db.dsn(), services, provider.get(), turns);
  if (!one) return 1;
  const double c16 = MeasureThroughput(*stub, keys, services, 16, seconds);
  const double c64 = MeasureThroughput(*stub, keys, services, 64, seconds);
  const double rss_mb = static_cast<double>(PeakRssKb(orchestrator.pid())) / 1024.0;
  std::filesystem::remove_all(dir);
  std::printf("planner: %s\n", model ? "model (fake provider)" : "local policy");
  std::printf(
      "RESULT turn_p50_ms=%.2f turn_p99_ms=%.2f turns_per_s_c16=%.0f turns_per_s_c64=%.0f "
      "pg_rows_per_turn=%.1f rss_mb=%.1f\n",
      Percentile(one->ms, 0.5), Percentile(one->ms, 0.99), c16, c64, one->rows_per_turn, rss_mb);
  return c16 < 0 || c64 < 0 ? 1 : 0;
}

}  // namespace
}  // namespace omniforge::orchestrator

// NOLINTNEXTLINE(bugprone-exception-escape): a bench that cannot set up ends on the exception
int main(int argc, char** argv) {
  CLI::App app{"chat turns through the public API over the real stack, local mode"};
  int turns = 300;
  double seconds = 20;
  std::string mode = "llm";
  app.add_option("--mode", mode, "llm: the planner on the fake provider; local: the local policy")
      ->check(CLI::IsMember({"llm", "local"}));
  app.add_option("--turns", turns, "turns measured at 1 client")->check(CLI::PositiveNumber);
  app.add_option("--seconds", seconds, "duration of the 16- and 64-client phases")
      ->check(CLI::PositiveNumber);
  std::string identity = "signed";
  app.add_option("--identity", identity,
                 "signed: the services believe only caller assertions (as deployed); "
                 "metadata: they believe the identity metadata")
      ->check(CLI::IsMember({"signed", "metadata"}));
  CLI11_PARSE(app, argc, argv);
  return omniforge::orchestrator::Run(turns, seconds, mode == "llm", identity == "signed");
}
