// Conversation service throughput and latency, with durable commits
// (synchronous_commit on), all measured in one run on one database:
//   raw_insert_per_s      libpqxx, one row per transaction, one connection:
//                         what a naive service would get per client; measured
//                         in turns with appends_per_s_c1 (--rounds)
//   appends_per_s_c1/c64  AppendMessage over gRPC (loopback) to the real
//                         service stack, 1 and 64 concurrent clients (each
//                         client a user with their own conversation)
//   appends_per_s_c64_one_user
//                         64 clients of one user, each in their own
//                         conversation: every append moves its conversation
//                         above the others, so each also writes the
//                         conversation's activity time
//   window_p50/p99_ms     GetContextWindow over gRPC on a 10,000-message
//                         conversation
// Prints a final line: RESULT appends_per_s_c1=... appends_per_s_c64=...
//   raw_insert_per_s=... window_p50_ms=... window_p99_ms=...
//   appends_per_s_c64_one_user=...
#include <grpcpp/grpcpp.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <pqxx/pqxx>
#include <thread>
#include <vector>

#include "libs/core/grpc_identity.h"
#include "libs/core/logging.h"
#include "libs/core/server.h"
#include "libs/core/thread_pool.h"
#include "services/conversation/src/grpc_service.h"
#include "services/conversation/src/pg_repository.h"
#include "tests/support/test_database.h"

namespace omniforge::conversation {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// CPU time of this process (client and server), user plus system.
double ProcessCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

// Busy and total jiffies of the whole machine, from /proc/stat.
std::pair<double, double> MachineCpuJiffies() {
  std::FILE* f = std::fopen("/proc/stat", "r");
  if (f == nullptr) return {0, 0};
  double v[8] = {};
  if (std::fscanf(f, "cpu %lf %lf %lf %lf %lf %lf %lf %lf", &v[0], &v[1], &v[2], &v[3], &v[4],
                  &v[5], &v[6], &v[7]) != 8) {
    v[3] = 0;
  }
  std::fclose(f);
  double total = 0;
  for (double x : v) total += x;
  return {total - v[3] - v[4], total};
}

// The naive write path beside the service: one row per transaction on one
// connection (BEGIN, INSERT, COMMIT), durable.
class RawInserter final {
 public:
  explicit RawInserter(const std::string& dsn) : conn_(dsn) {
    pqxx::work tx(conn_);
    tx.exec(
        "CREATE TABLE bench_raw (id bigserial PRIMARY KEY, conversation_id uuid,"
        " content bytea, created_at timestamptz DEFAULT now())");
    tx.commit();
  }

  // Inserts for `seconds`; returns the rows inserted.
  int64_t InsertFor(double seconds) {
    const std::string content(200, 'x');
    int64_t n = 0;
    const auto start = Clock::now();
    while (Seconds(Clock::now() - start) < seconds) {
      pqxx::work tx(conn_);
      tx.exec_params("INSERT INTO bench_raw (conversation_id, content) VALUES ($1::uuid, $2)",
                     "01a2016e-74e5-7791-b412-642b2ceacd98", pqxx::binarystring(content));
      tx.commit();
      ++n;
    }
    return n;
  }

 private:
  pqxx::connection conn_;
};

class Bench {
 public:
  Bench(const std::string& dsn, int pool_size, int committers) {
    pg::PgOptions options;
    options.dsn = dsn;
    options.pool_size = pool_size;
    pool_ = *pg::PgPool::Create(options);
    keys_ = std::make_unique<seal::KeyRing>(
        *pool_, kConversationKeys, *seal::KeyRing::ParseMasterKey(std::string(64, '7')), "bench");
    PgRepositoryOptions append_options;
    append_options.append_committers = committers;
    repository_ = std::make_unique<PgConversationRepository>(*pool_, *keys_, append_options);
    logic_ = std::make_unique<ConversationLogic>(*repository_, estimator_);
    workers_ = std::make_unique<core::ThreadPool>(pool_size, 4096);
    service_ = std::make_unique<ConversationGrpcService>(*logic_, *workers_);
    core::ServerOptions server_options;
    server_options.host = "127.0.0.1";
    server_ = std::make_unique<core::ServiceServer>(server_options);
    server_->AddService(service_.get());
    if (!server_->Start().ok()) std::abort();
    // One long-lived channel, as a client service (the orchestrator) keeps.
    stub_ = pb::ConversationService::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(server_->port()), grpc::InsecureChannelCredentials()));
  }

  ~Bench() { server_->Shutdown(); }

  // Appends straight to the repository (no gRPC), one client: how much of
  // the single-client latency the storage path accounts for.
  double RepositoryAppendRate(double seconds) {
    const std::string id = NewConversation();
    int64_t n = 0;
    const auto start = Clock::now();
    while (Seconds(Clock::now() - start) < seconds) {
      NewMessage m;
      m.conversation_id = id;
      m.content = "storage path only";
      m.token_count = 8;
      if (!AppendMessageAndWait(*repository_, {"bench-tenant", "bench-user"}, m).ok()) std::abort();
      ++n;
    }
    return n / Seconds(Clock::now() - start);
  }

  pb::ConversationService::Stub& stub() { return *stub_; }

  static void Identify(grpc::ClientContext& context, const std::string& user = "bench-user") {
    core::AttachIdentity(context, {"bench-tenant", user}, core::kConversationAudience);
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  }

  std::string NewConversation(const std::string& user = "bench-user") {
    pb::CreateConversationRequest request;
    request.set_title("bench");
    pb::CreateConversationResponse response;
    grpc::ClientContext context;
    Identify(context, user);
    if (!stub().CreateConversation(&context, request, &response).ok()) std::abort();
    return response.conversation().id();
  }

  // Keeps `clients` appends in flight (each client to its own conversation,
  // sending its next message when the previous one is acknowledged) for
  // `seconds`, using gRPC's callback API so the load generator itself stays
  // cheap; returns acknowledged appends per second. Each client is its own
  // user, as concurrent clients are; with `one_user`, all are the same user,
  // so every append moves its conversation above the others (the activity
  // time is written each time).
  double AppendRate(int clients, double seconds, bool one_user = false) {
    struct Client {
      std::string user;
      pb::AppendMessageRequest request;
      pb::AppendMessageResponse response;
      std::unique_ptr<grpc::ClientContext> context;
    };
    std::vector<Client> state(clients);
    std::atomic<int64_t> acknowledged{0};
    std::atomic<int64_t> failed{0};
    std::mutex mu;
    std::condition_variable all_done;
    int running = clients;
    for (int c = 0; c < clients; ++c) {
      state[c].user = one_user ? "bench-user" : "bench-user-" + std::to_string(c);
      state[c].request.set_conversation_id(NewConversation(state[c].user));
      state[c].request.set_role(pb::ROLE_USER);
      state[c].request.set_content(
          "Every Monday I copy the Notion status updates into a summary for the team; "
          "it takes hours. Can an agent do it?");
    }
    const auto start = Clock::now();
    std::function<void(int)> send = [&](int c) {
      Client& client = state[c];
      client.context = std::make_unique<grpc::ClientContext>();
      Identify(*client.context, client.user);
      stub().async()->AppendMessage(client.context.get(), &client.request, &client.response,
                                    [&, c](const grpc::Status& status) {
                                      if (status.ok()) {
                                        ++acknowledged;
                                      } else {
                                        ++failed;
                                      }
                                      if (Seconds(Clock::now() - start) < seconds) {
                                        send(c);
                                        return;
                                      }
                                      std::lock_guard lock(mu);
                                      if (--running == 0) all_done.notify_all();
                                    });
    };
    for (int c = 0; c < clients; ++c) send(c);
    {
      std::unique_lock lock(mu);
      all_done.wait(lock, [&] { return running == 0; });
    }
    if (failed > 0)
      std::fprintf(stderr, "warning: %lld appends failed\n", (long long)failed.load());
    return acknowledged / Seconds(Clock::now() - start);
  }

  // One client with the blocking API: send, wait for the acknowledgement,
  // send the next.
  double BlockingAppendRate(double seconds) {
    pb::AppendMessageRequest request;
    request.set_conversation_id(NewConversation());
    request.set_role(pb::ROLE_USER);
    request.set_content("a single blocking client");
    int64_t n = 0;
    const auto start = Clock::now();
    while (Seconds(Clock::now() - start) < seconds) {
      grpc::ClientContext context;
      Identify(context);
      pb::AppendMessageResponse response;
      if (!stub().AppendMessage(&context, request, &response).ok()) std::abort();
      ++n;
    }
    return n / Seconds(Clock::now() - start);
  }

  // Fills a conversation with `messages` messages quickly (64 writers).
  std::string FilledConversation(int messages) {
    std::string id = NewConversation();
    std::atomic<int> next{0};
    constexpr int kWriters = 64;
    std::vector<std::thread> threads;
    threads.reserve(kWriters);
    for (int t = 0; t < kWriters; ++t) {
      threads.emplace_back([&] {
        for (int i = next++; i < messages; i = next++) {
          pb::AppendMessageRequest request;
          request.set_conversation_id(id);
          request.set_role(i % 2 == 0 ? pb::ROLE_USER : pb::ROLE_ASSISTANT);
          request.set_content(std::string(60 + (i * 37) % 400, 'w'));
          grpc::ClientContext context;
          Identify(context);
          pb::AppendMessageResponse response;
          if (!stub().AppendMessage(&context, request, &response).ok()) std::abort();
        }
      });
    }
    for (auto& t : threads) t.join();
    return id;
  }

  std::pair<double, double> WindowLatency(const std::string& id, int calls) {
    std::vector<double> ms;
    pb::GetContextWindowRequest request;
    request.set_conversation_id(id);
    for (int i = 0; i < calls; ++i) {
      grpc::ClientContext context;
      Identify(context);
      pb::GetContextWindowResponse response;
      const auto start = Clock::now();
      if (!stub().GetContextWindow(&context, request, &response).ok()) std::abort();
      ms.push_back(Seconds(Clock::now() - start) * 1000.0);
      if (i == 0) {
        std::fprintf(stderr, "window: %d messages, %d tokens\n", response.messages_size(),
                     response.total_tokens());
      }
    }
    std::sort(ms.begin(), ms.end());
    return {ms[ms.size() / 2], ms[std::min(ms.size() - 1, ms.size() * 99 / 100)]};
  }

 private:
  std::unique_ptr<pg::PgPool> pool_;
  std::unique_ptr<seal::KeyRing> keys_;
  std::unique_ptr<PgConversationRepository> repository_;
  HeuristicTokenEstimator estimator_;
  std::unique_ptr<ConversationLogic> logic_;
  std::unique_ptr<core::ThreadPool> workers_;
  std::unique_ptr<ConversationGrpcService> service_;
  std::unique_ptr<core::ServiceServer> server_;
  std::unique_ptr<pb::ConversationService::Stub> stub_;
};

// Whether the database commits durably (synchronous_commit on).
bool SynchronousCommitOn(const std::string& dsn) {
  pqxx::connection conn(dsn);
  pqxx::nontransaction tx(conn);
  return tx.exec("SHOW synchronous_commit")[0][0].as<std::string>() == "on";
}

// The mean time the service spent handling `method`, printed.
void PrintServerSideTime(const std::string& method) {
  auto& h = omniforge::core::MetricsRegistry::Global().GetHistogram(
      "omniforge_rpc_duration_seconds", "RPC handling time.", {{"method", method}});
  std::fprintf(stderr, "  server-side %s time: %.0f us on average\n", method.c_str(),
               h.Sum() / h.Count() * 1e6);
}

// Rates of raw single-row inserts and of single-client appends.
struct OneClientRates {
  double raw = 0;
  double c1 = 0;
};

// Raw inserts and single-client appends take turns, so whatever else the
// machine does weighs on both sides of the ratio alike.
OneClientRates MeasureRawAgainstOneClient(RawInserter& raw_inserter, Bench& bench, double seconds,
                                          int rounds) {
  double raw_count = 0, c1_count = 0, raw_seconds = 0, c1_seconds = 0;
  std::vector<double> round_ratios;
  for (int round = 0; round < rounds; ++round) {
    const double slice = seconds / rounds;
    auto t0 = Clock::now();
    const double raw_n = static_cast<double>(raw_inserter.InsertFor(slice));
    const double raw_s = Seconds(Clock::now() - t0);
    const double c1_rate = bench.AppendRate(1, slice);
    raw_count += raw_n;
    raw_seconds += raw_s;
    c1_count += c1_rate * slice;
    c1_seconds += slice;
    round_ratios.push_back(c1_rate / (raw_n / raw_s));
  }
  const double raw = raw_count / raw_seconds;
  const double c1 = c1_count / c1_seconds;
  std::sort(round_ratios.begin(), round_ratios.end());
  std::fprintf(stderr, "raw single-row inserts: %.0f/s\n", raw);
  std::fprintf(stderr, "appends, 1 client: %.0f/s (%.2f x raw; per round %.2f - %.2f)\n", c1,
               c1 / raw, round_ratios.front(), round_ratios.back());
  return {raw, c1};
}

// 64 clients for `seconds`: their append rate, printed with the group
// commits' batch size and time and the CPU the appends took.
double MeasureSixtyFourClients(Bench& bench, double seconds) {
  auto& registry = omniforge::core::MetricsRegistry::Global();
  auto& sizes = registry.GetHistogram("omniforge_conversation_append_batch_size",
                                      "Messages written per group commit.", {},
                                      {1, 2, 4, 8, 16, 32, 64, 128, 256});
  auto& commits = registry.GetHistogram("omniforge_conversation_append_commit_seconds",
                                        "Time to write and commit one group of messages.");
  const std::pair<double, double> sizes_before{sizes.Sum(), static_cast<double>(sizes.Count())};
  const std::pair<double, double> commits_before{commits.Sum(),
                                                 static_cast<double>(commits.Count())};
  const auto machine_before = MachineCpuJiffies();
  const double cpu_before = ProcessCpuSeconds();
  const auto wall_before = Clock::now();
  const double c64 = bench.AppendRate(64, seconds);
  const double cpu_cores = (ProcessCpuSeconds() - cpu_before) / Seconds(Clock::now() - wall_before);
  const auto machine_after = MachineCpuJiffies();
  std::fprintf(
      stderr, "  group commit: %.1f messages per batch, %.2f ms per batch\n",
      (sizes.Sum() - sizes_before.first) / (sizes.Count() - sizes_before.second),
      (commits.Sum() - commits_before.first) / (commits.Count() - commits_before.second) * 1e3);
  const double machine_busy = (machine_after.first - machine_before.first) /
                              std::max(1.0, machine_after.second - machine_before.second);
  std::fprintf(stderr,
               "appends, 64 clients: %.0f/s (this process: %.2f cores, %.0f us CPU per append; "
               "machine %.0f%% busy)\n",
               c64, cpu_cores, cpu_cores * 1e6 / c64, machine_busy * 100);
  return c64;
}

}  // namespace
}  // namespace omniforge::conversation

// NOLINTNEXTLINE(bugprone-exception-escape): a bench that cannot set up ends on the exception
int main(int argc, char** argv) {
  using namespace omniforge::conversation;
  CLI::App app{"conversation service benchmark"};
  double seconds = 5;
  int window_messages = 10000;
  int window_calls = 2000;
  int committers = PgRepositoryOptions{}.append_committers;
  int rounds = 5;
  app.add_option("--seconds", seconds, "duration of each throughput phase");
  app.add_option("--window-messages", window_messages, "messages in the window conversation");
  app.add_option("--window-calls", window_calls, "GetContextWindow calls measured");
  app.add_option("--committers", committers, "group-commit transactions in flight");
  app.add_option("--rounds", rounds, "turns of raw inserts and single-client appends")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  omniforge::core::InitLogging("bench", "warn");

  omniforge::testing::TestDatabase db;
  if (!SynchronousCommitOn(db.dsn())) {
    std::fprintf(stderr, "synchronous_commit must be on for a durable benchmark\n");
    return 1;
  }
  RawInserter raw_inserter(db.dsn());
  Bench bench(db.service_dsn("conversation"), 16, committers);
  std::fprintf(stderr, "appends via the repository, 1 client: %.0f/s\n",
               bench.RepositoryAppendRate(seconds / 2));
  std::fprintf(stderr, "appends, 1 blocking client: %.0f/s\n",
               bench.BlockingAppendRate(seconds / 2));
  const auto [raw, c1] = MeasureRawAgainstOneClient(raw_inserter, bench, seconds, rounds);
  PrintServerSideTime("AppendMessage");
  const double c64 = MeasureSixtyFourClients(bench, seconds);
  const double c64_one_user = bench.AppendRate(64, seconds, /*one_user=*/true);
  std::fprintf(stderr, "appends, 64 clients of one user: %.0f/s\n", c64_one_user);
  const std::string id = bench.FilledConversation(window_messages);
  auto [p50, p99] = bench.WindowLatency(id, window_calls);
  PrintServerSideTime("GetContextWindow");
  std::printf(
      "RESULT appends_per_s_c1=%.0f appends_per_s_c64=%.0f raw_insert_per_s=%.0f "
      "c1_vs_raw=%.2f window_p50_ms=%.3f window_p99_ms=%.3f appends_per_s_c64_one_user=%.0f\n",
      c1, c64, raw, c1 / raw, p50, p99, c64_one_user);
  return 0;
}
