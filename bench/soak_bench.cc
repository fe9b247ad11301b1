// A soak: the four service binaries on loopback and a real PostgreSQL under
// mixed load for a long while (30 minutes by default), with a fault every
// few minutes, watching each service for slow growth. Not run by CI.
//
// Load: `--clients` client threads (tests/support/turn_load.h), each a user
// of its own sending turns with turn_ids to 4 conversations, each turn
// retried with its turn_id until acknowledged; the messages take turns
// between ones the local policy answers at once and ones that make it plan
// or answer from the conversation. Beside them a reader lists the users'
// conversations, reads one and its last messages (ListConversations,
// GetConversation, ListMessages).
//
// PostgreSQL: a cluster of the soak's own (scripts/pg.sh on a free
// loopback port, thrown away at the end), so that it can be crashed.
//
// Faults: every `--fault-every-s` one part is killed and started again
// after 1.5 s, taking turns: conversation, intent, executor, orchestrator
// (each SIGKILL, restarted on its port; the orchestrator on its spool
// directory), then PostgreSQL (a crash: SIGQUIT to the postmaster, crash
// recovery at the next start).
//
// Samples: every `--sample-every-s`, each service's RSS (VmRSS), open fds
// (/proc/<pid>/fd) and threads (Threads). Growth per hour of a service and
// metric: the least-squares slope over the settled samples of its longest
// stretch without a restart (a restart starts a new process), scaled to
// an hour. A stretch settles `--warmup-s` after it starts: a new process
// fills its caches, pools and arenas in its first minute, which is not a
// leak.
//
// At the end the load stops, the spool drains, and the storage is read back:
// acknowledged turns lost, duplicated and reordered as turn_load.h defines.
//
// Prints one progress line per sample, a line per service (GROWTH ...) and
// a final line: RESULT minutes=... turns=... acked=... lost=...
//   duplicated=... reordered=... faults=... rss_mb_per_hour_max=...
//   fds_per_hour_max=... threads_per_hour_max=... turn_p50_ms=...
//   turn_p99_ms=...
// Exits 1 when an acknowledged turn was lost, duplicated or reordered, or
// when a part did not come back after a fault.
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <latch>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "libs/core/ids.h"
#include "omniforge/orchestrator/v1/chat_service.grpc.pb.h"
#include "tests/support/chat_turn.h"
#include "tests/support/fault.h"
#include "tests/support/private_cluster.h"
#include "tests/support/service_stack.h"
#include "tests/support/test_database.h"
#include "tests/support/turn_load.h"

namespace omniforge::soak {
namespace {

namespace pb = ::omniforge::orchestrator::v1;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

struct SoakOptions {
  int minutes = 30;
  int clients = 8;
  int fault_every_s = 180;
  int sample_every_s = 10;
  int warmup_s = 120;
  unsigned seed = 1;
};

// How long a killed service stays down.
constexpr milliseconds kDowntime{1500};
// Spooled messages reach storage within this.
constexpr seconds kDrainWait{120};

// The clients' load: answered at once ("list my agents" reads through the
// executor), a plan drafted, a question about past work, one about the
// conversation itself.
testing::LoadOptions SoakLoad() {
  return {.conversations = 4,
          .think_time = milliseconds(50),
          .messages = {"list my agents", "what can you do for me?",
                       "Set up a project for the spring campaign launch",
                       "how did the digest go this week?", "where were we?"}};
}

// One sample of one process.
struct Sample {
  double hours = 0;  // since the bench started
  double rss_mb = 0;
  double fds = 0;
  double threads = 0;
};

// The sample of process `pid` at `hours`, or nullopt when it is not running.
std::optional<Sample> ReadProcess(pid_t pid, double hours) {
  if (pid <= 0) return std::nullopt;
  const fs::path proc = fs::path("/proc") / std::to_string(pid);
  std::ifstream status(proc / "status");
  Sample sample{.hours = hours};
  bool rss = false;
  bool threads = false;
  for (std::string line; std::getline(status, line);) {
    if (line.starts_with("VmRSS:")) {
      sample.rss_mb = std::stod(line.substr(6)) / 1024.0;  // kB
      rss = true;
    } else if (line.starts_with("Threads:")) {
      sample.threads = std::stod(line.substr(8));
      threads = true;
    }
  }
  if (!rss || !threads) return std::nullopt;
  std::error_code error;
  for (fs::directory_iterator it(proc / "fd", error), end; !error && it != end;
       it.increment(error)) {
    ++sample.fds;
  }
  if (error) return std::nullopt;
  return sample;
}

// The least-squares slope of `value` over `samples` (per hour); 0 with
// fewer than 3 samples.
double Slope(const std::vector<Sample>& samples, double Sample::*value) {
  if (samples.size() < 3) return 0;
  double mean_t = 0;
  double mean_v = 0;
  for (const Sample& s : samples) {
    mean_t += s.hours;
    mean_v += s.*value;
  }
  mean_t /= static_cast<double>(samples.size());
  mean_v /= static_cast<double>(samples.size());
  double covariance = 0;
  double variance = 0;
  for (const Sample& s : samples) {
    covariance += (s.hours - mean_t) * (s.*value - mean_v);
    variance += (s.hours - mean_t) * (s.hours - mean_t);
  }
  return variance > 0 ? covariance / variance : 0;
}

// One service as the soak watches it: its samples, a stretch per process.
struct Watched {
  std::string name;
  testing::ServerProcess* process;
  std::vector<std::vector<Sample>> stretches{1};
  int restarts = 0;

  // The samples taken `warmup_hours` or more after their stretch began,
  // of the stretch with the most of them.
  std::vector<Sample> Settled(double warmup_hours) const {
    std::vector<Sample> best;
    for (const std::vector<Sample>& stretch : stretches) {
      if (stretch.empty()) continue;
      std::vector<Sample> settled;
      std::copy_if(
          stretch.begin(), stretch.end(), std::back_inserter(settled),
          [&](const Sample& s) { return s.hours >= stretch.front().hours + warmup_hours; });
      if (settled.size() > best.size()) best = std::move(settled);
    }
    return best;
  }
};

// A part of the stack the soak kills and starts again; `watched` is the
// service's samples (none for PostgreSQL).
struct SoakFault {
  testing::Fault fault;
  Watched* watched = nullptr;
};

// Lists the users' conversations and reads one of them, over and over,
// until `stop`; counts the calls and the ones that failed.
void ReadLoop(const std::string& address, const std::vector<std::string>& keys, unsigned seed,
              const std::atomic<bool>& stop, std::atomic<long>& calls, std::atomic<long>& failed) {
  auto stub =
      pb::ChatService::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  std::mt19937 random(seed);
  auto count = [&](const grpc::Status& status) {
    ++calls;
    if (status.ok()) return true;
    ++failed;
    // A new channel connects at once, without gRPC's reconnect backoff.
    if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
      stub = pb::ChatService::NewStub(
          grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
    }
    return false;
  };
  while (!stop.load()) {
    std::this_thread::sleep_for(milliseconds(50));
    const std::string& key = keys[random() % keys.size()];
    grpc::ClientContext list_context;
    testing::PrepareChatContext(list_context, key, seconds(10));
    pb::ListConversationsRequest list;
    list.set_page_size(20);
    pb::ListConversationsResponse conversations;
    if (!count(stub->ListConversations(&list_context, list, &conversations)) ||
        conversations.conversations_size() == 0) {
      continue;
    }
    const auto pick = random() % static_cast<unsigned>(conversations.conversations_size());
    const std::string id = conversations.conversations(static_cast<int>(pick)).id();
    grpc::ClientContext get_context;
    testing::PrepareChatContext(get_context, key, seconds(10));
    pb::GetConversationRequest get;
    get.set_conversation_id(id);
    pb::GetConversationResponse conversation;
    count(stub->GetConversation(&get_context, get, &conversation));
    grpc::ClientContext messages_context;
    testing::PrepareChatContext(messages_context, key, seconds(10));
    pb::ListMessagesRequest last;
    last.set_conversation_id(id);
    last.set_limit(50);
    pb::ListMessagesResponse messages;
    count(stub->ListMessages(&messages_context, last, &messages));
  }
}

std::vector<testing::TurnRecord> AllTurns(
    const std::vector<std::unique_ptr<testing::LoadClient>>& clients) {
  std::vector<testing::TurnRecord> turns;
  for (const auto& client : clients) {
    for (testing::TurnRecord& turn : client->turns()) turns.push_back(std::move(turn));
  }
  return turns;
}

// Samples every service once and prints the progress line.
void SampleAll(std::vector<Watched>& services, double hours, int faults,
               const std::vector<std::unique_ptr<testing::LoadClient>>& clients, long reads) {
  size_t sent = 0;
  for (const auto& client : clients) sent += client->turn_count();
  std::string rss;
  std::string fds;
  std::string threads;
  for (Watched& service : services) {
    const std::optional<Sample> sample = ReadProcess(service.process->pid(), hours);
    if (!sample) continue;
    service.stretches.back().push_back(*sample);
    const char initial = service.name[0];
    absl::StrAppendFormat(&rss, " %c:%.1f", initial, sample->rss_mb);
    absl::StrAppendFormat(&fds, " %c:%.0f", initial, sample->fds);
    absl::StrAppendFormat(&threads, " %c:%.0f", initial, sample->threads);
  }
  std::printf("[%6.0f s] turns=%zu reads=%ld faults=%d rss_mb%s fds%s threads%s\n", hours * 3600,
              sent, reads, faults, rss.c_str(), fds.c_str(), threads.c_str());
  std::fflush(stdout);
}

// Kills a part and starts it again after kDowntime (twice if the first
// start fails); a service begins a new stretch of samples. Returns false
// when it did not come back.
bool InjectFault(const SoakFault& part, double hours) {
  const testing::Fault& fault = part.fault;
  std::printf("[%6.0f s] fault: %s\n", hours * 3600, fault.name.c_str());
  std::fflush(stdout);
  fault.inject();
  std::this_thread::sleep_for(kDowntime);
  std::optional<std::string> error = fault.restore();
  if (error) error = fault.restore();
  if (part.watched != nullptr) {
    part.watched->stretches.emplace_back();
    ++part.watched->restarts;
  }
  if (error)
    std::fprintf(stderr, "%s: did not come back: %s\n", fault.name.c_str(), error->c_str());
  return !error;
}

// The soak's numbers once the load has stopped.
struct Outcome {
  int turns = 0;
  int acked = 0;
  testing::TurnCounts counts;
  std::vector<double> turn_ms;  // acknowledged turns, first attempt to acknowledgement
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// Reads the storage back (once the spool has drained) and counts.
std::optional<Outcome> CountStorage(
    pb::ChatService::Stub& stub, const std::vector<std::unique_ptr<testing::LoadClient>>& clients) {
  const std::vector<testing::TurnRecord> turns = AllTurns(clients);
  if (!testing::WaitForStored(stub, clients, turns, kDrainWait)) {
    std::printf("the storage still lacks messages after %lld s\n",
                static_cast<long long>(kDrainWait.count()));
  }
  Outcome outcome;
  for (const testing::TurnRecord& turn : turns) {
    ++outcome.turns;
    if (!turn.acknowledged) continue;
    ++outcome.acked;
    outcome.turn_ms.push_back(
        std::chrono::duration<double, std::milli>(turn.ended - turn.first_started).count());
  }
  for (const auto& client : clients) {
    for (const std::string& conversation : client->conversations()) {
      std::vector<const testing::TurnRecord*> sent;
      for (const testing::TurnRecord& turn : turns) {
        if (turn.conversation == conversation) sent.push_back(&turn);
      }
      const auto stored = testing::Stored(stub, client->key(), conversation);
      if (!stored.ok()) {
        std::fprintf(stderr, "%s\n", stored.status().ToString().c_str());
        return std::nullopt;
      }
      testing::Tally(sent, *stored, outcome.counts);
    }
  }
  return outcome;
}

// The GROWTH lines, one per service, and the RESULT line.
void Report(const SoakOptions& options, double minutes, int faults,
            const std::vector<Watched>& services, const Outcome& outcome) {
  std::array<double, 3> worst = {0, 0, 0};
  const std::array<double Sample::*, 3> metrics = {&Sample::rss_mb, &Sample::fds, &Sample::threads};
  for (const Watched& service : services) {
    const std::vector<Sample> settled = service.Settled(options.warmup_s / 3600.0);
    std::array<double, 3> slope{};
    for (size_t m = 0; m < metrics.size(); ++m) {
      slope[m] = Slope(settled, metrics[m]);
      worst[m] = std::max(worst[m], slope[m]);
    }
    const double span_min =
        settled.empty() ? 0 : (settled.back().hours - settled.front().hours) * 60;
    std::printf(
        "GROWTH %-12s restarts=%d settled_min=%.1f samples=%zu rss_mb_per_hour=%.2f "
        "fds_per_hour=%.2f threads_per_hour=%.2f last_rss_mb=%.1f last_fds=%.0f "
        "last_threads=%.0f\n",
        service.name.c_str(), service.restarts, span_min, settled.size(), slope[0], slope[1],
        slope[2], settled.empty() ? 0 : settled.back().rss_mb,
        settled.empty() ? 0 : settled.back().fds, settled.empty() ? 0 : settled.back().threads);
  }
  std::printf("clients=%d fault_every_s=%d sample_every_s=%d warmup_s=%d seed=%u\n",
              options.clients, options.fault_every_s, options.sample_every_s, options.warmup_s,
              options.seed);
  std::printf(
      "RESULT minutes=%.1f turns=%d acked=%d lost=%d duplicated=%d reordered=%d faults=%d "
      "rss_mb_per_hour_max=%.2f fds_per_hour_max=%.2f threads_per_hour_max=%.2f "
      "turn_p50_ms=%.1f turn_p99_ms=%.1f\n",
      minutes, outcome.turns, outcome.acked, outcome.counts.lost, outcome.counts.duplicated,
      outcome.counts.reordered, faults, worst[0], worst[1], worst[2],
      Percentile(outcome.turn_ms, 0.5), Percentile(outcome.turn_ms, 0.99));
  std::fflush(stdout);
}

// The load, the reader, the samples and the faults for options.minutes.
// Returns the faults injected, or -1 when a service did not come back.
int Soak(const SoakOptions& options, std::vector<Watched>& services,
         const std::vector<SoakFault>& faults_in_turn,
         const std::vector<std::unique_ptr<testing::LoadClient>>& clients,
         const std::atomic<long>& reads) {
  const Clock::time_point start = Clock::now();
  const auto hours = [&] {
    return std::chrono::duration<double>(Clock::now() - start).count() / 3600;
  };
  const Clock::time_point end = start + std::chrono::minutes(options.minutes);
  Clock::time_point next_sample = start;
  Clock::time_point next_fault = start + seconds(options.fault_every_s);
  int faults = 0;
  for (size_t victim = options.seed % faults_in_turn.size(); Clock::now() < end;) {
    if (Clock::now() >= next_sample) {
      SampleAll(services, hours(), faults, clients, reads.load());
      next_sample += seconds(options.sample_every_s);
    }
    if (options.fault_every_s > 0 && Clock::now() >= next_fault) {
      ++faults;
      if (!InjectFault(faults_in_turn[victim], hours())) return -1;
      victim = (victim + 1) % faults_in_turn.size();
      next_fault += seconds(options.fault_every_s);
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
  SampleAll(services, hours(), faults, clients, reads.load());
  return faults;
}

// Starts the stack and the clients, soaks, stops and reports.
int Run(const SoakOptions& options) {
  const fs::path dir = fs::temp_directory_path() / ("omniforge-soak-" + core::NewUuid());
  fs::create_directories(dir);
  // Runs last, once the stack and the cluster have stopped.
  const absl::Cleanup remove_dir = [&dir] {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  };
  testing::PrivateCluster cluster(dir);
  if (std::optional<std::string> error = cluster.Start()) {
    std::fprintf(stderr, "PostgreSQL did not start: %s\n", error->c_str());
    return 1;
  }
  testing::TestDatabase db(cluster.dsn());
  std::vector<core::Identity> users;
  users.reserve(static_cast<size_t>(options.clients));
  for (int c = 0; c < options.clients; ++c) users.push_back({"soak", "user-" + std::to_string(c)});
  const std::vector<std::string> keys = testing::WriteApiKeyFile(dir / "api_keys", users, "soak");
  testing::ServiceStack stack({OMNIFORGE_CONVERSATION_BIN, OMNIFORGE_INTENT_BIN,
                               OMNIFORGE_EXECUTOR_BIN, OMNIFORGE_ORCHESTRATOR_BIN});
  testing::ServiceStack::ExtraEnv extra;
  // The orchestrator keeps its flows in PostgreSQL, as deployed.
  extra.orchestrator = testing::DatabaseEnv(db, "orchestrator");
  if (keys.size() != users.size()) return 1;
  if (auto error = stack.Start(db, (dir / "api_keys").string(), extra)) {
    std::fprintf(stderr, "%s\n", error->c_str());
    return 1;
  }
  std::vector<Watched> services = {{"conversation", &stack.conversation()},
                                   {"intent", &stack.intent()},
                                   {"executor", &stack.executor()},
                                   {"orchestrator", &stack.orchestrator()}};
  std::vector<SoakFault> faults_in_turn;
  faults_in_turn.reserve(services.size() + 1);
  for (Watched& service : services) {
    faults_in_turn.push_back({testing::KillAndRestart(service.name, *service.process), &service});
  }
  const auto crash = [&cluster] {
    if (auto error = cluster.Crash()) std::fprintf(stderr, "crash: %s\n", error->c_str());
  };
  faults_in_turn.push_back({{"postgres crash", crash, [&cluster] { return cluster.Restart(); }}});
  const std::string address = stack.orchestrator().address();
  std::vector<std::unique_ptr<testing::LoadClient>> clients;
  clients.reserve(static_cast<size_t>(options.clients));
  for (int c = 0; c < options.clients; ++c) {
    clients.push_back(std::make_unique<testing::LoadClient>(address, keys[static_cast<size_t>(c)],
                                                            absl::StrCat("soak-c", c), SoakLoad()));
  }
  std::atomic<bool> stop{false};
  std::atomic<long> reads{0};
  std::atomic<long> failed_reads{0};
  std::latch ready(options.clients);
  std::vector<std::thread> threads;
  threads.reserve(clients.size() + 1);
  for (auto& client : clients) {
    threads.emplace_back([&stop, &ready, c = client.get()] { c->Run(stop, ready); });
  }
  ready.wait();
  threads.emplace_back([&] { ReadLoop(address, keys, options.seed, stop, reads, failed_reads); });
  const Clock::time_point start = Clock::now();
  const int faults = Soak(options, services, faults_in_turn, clients, reads);
  stop = true;
  for (std::thread& thread : threads) thread.join();
  const double minutes = std::chrono::duration<double>(Clock::now() - start).count() / 60;
  std::printf("reads=%ld failed_reads=%ld\n", reads.load(), failed_reads.load());
  auto stub =
      pb::ChatService::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  const std::optional<Outcome> outcome = CountStorage(*stub, clients);
  if (!outcome) return 1;
  Report(options, minutes, std::max(faults, 0), services, *outcome);
  const bool kept =
      outcome->counts.lost + outcome->counts.duplicated + outcome->counts.reordered == 0;
  return faults >= 0 && kept ? 0 : 1;
}

}  // namespace
}  // namespace omniforge::soak

// NOLINTNEXTLINE(bugprone-exception-escape): a bench that cannot set up ends on the exception
int main(int argc, char** argv) {
  CLI::App app{"a long run of mixed load with faults, watching the services for growth"};
  omniforge::soak::SoakOptions options;
  app.add_option("--minutes", options.minutes, "how long the load runs")
      ->check(CLI::PositiveNumber);
  app.add_option("--clients", options.clients, "client threads sending turns")
      ->check(CLI::Range(1, 64));
  app.add_option("--fault-every-s", options.fault_every_s, "seconds between two faults (0: none)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--sample-every-s", options.sample_every_s, "seconds between two samples")
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup-s", options.warmup_s,
                 "seconds after a (re)start before a service's samples count for growth")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--seed", options.seed, "the first part killed and the reader's choices");
  CLI11_PARSE(app, argc, argv);
  return omniforge::soak::Run(options);
}
