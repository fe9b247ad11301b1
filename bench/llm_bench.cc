// The LLM client's own cost per streamed call: the whole client stack (YAML
// config -> LlmClient -> HTTP provider -> libcurl -> SSE parsing -> JSON
// decoding -> delta callback -> usage record) against the fake provider on
// loopback.
//
// The overhead of a call is the caller's wall-clock time minus the fake's
// own time for it (from the request's arrival to its last chunk written, as
// the fake records it): sending the request, reading and decoding what the
// fake has not yet finished writing, and everything after. Beside it,
// interleaved in the same run: the CPU time of the calling thread per call
// (all client work happens there, libcurl's included) and the same for a
// bare libcurl loop that fetches the same stream and discards it.
//
//   llm_bench [--calls N] [--text-chars N] [--chunk-chars N]
//
// Before it, DIAG lines split the overhead into the time until the request
// reached the fake's handler and the time after its last chunk was written,
// with the calling thread's context switches per call (getrusage), overall
// and for the worst 1% of calls.
//
// Final line: RESULT llm_overhead_p50_us=... llm_overhead_p99_us=...
#include <curl/curl.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "libs/core/clock.h"
#include "libs/core/config.h"
#include "libs/llm/llm_config.h"
#include "libs/llm/llm_factory.h"
#include "libs/llm/testing/fake_provider.h"

namespace omniforge::llm {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kWarmUpCalls = 200;

double ThreadCpuMicros() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
}

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

size_t Discard(char*, size_t size, size_t n, void*) { return size * n; }

// One streamed request with a reused libcurl handle and nothing else.
class BareStream final {
 public:
  BareStream(const std::string& url, const std::string& body) : body_(body) {
    curl_ = curl_easy_init();
    headers_ = curl_slist_append(headers_, "content-type: application/json");
    headers_ = curl_slist_append(headers_, "authorization: Bearer bench-key");
    headers_ = curl_slist_append(headers_, "accept: text/event-stream");
    headers_ = curl_slist_append(headers_, "x-omniforge-operation: bare");
    curl_easy_setopt(curl_, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl_, CURLOPT_HTTPHEADER, headers_);
    curl_easy_setopt(curl_, CURLOPT_POSTFIELDS, body_.c_str());
    curl_easy_setopt(curl_, CURLOPT_POSTFIELDSIZE, static_cast<long>(body_.size()));
    curl_easy_setopt(curl_, CURLOPT_WRITEFUNCTION, Discard);
    curl_easy_setopt(curl_, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(curl_, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl_, CURLOPT_TIMEOUT_MS, 60000L);
  }
  ~BareStream() {
    curl_slist_free_all(headers_);
    curl_easy_cleanup(curl_);
  }
  bool Run() {
    long status = 0;
    return curl_easy_perform(curl_) == CURLE_OK &&
           curl_easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK && status == 200;
  }

 private:
  std::string body_;
  CURL* curl_ = nullptr;
  curl_slist* headers_ = nullptr;
};

// The streamed answer: `chars` characters of a repeated sentence.
std::string AnswerText(int chars) {
  std::string text;
  while (static_cast<int>(text.size()) < chars) text += "omniforge plans, calls tools. ";
  text.resize(chars);
  return text;
}

// The LLM client built from YAML configuration, its one provider the fake;
// nullptr (and why, on stderr) when it cannot be built.
std::unique_ptr<LlmClient> ClientOnFake(const testing::FakeLlmServer& fake) {
  const std::string yaml = "llm:\n  providers:\n    fake:\n      api: openai\n      base_url: " +
                           fake.openai_base_url() +
                           "\n      api_key_env: BENCH_KEY\n      prices:\n        bench-model: "
                           "\"0.15 0.075 0.60\"\n  profiles:\n    speed: [fake/bench-model]\n";
  auto reader = core::ConfigReader::FromString(yaml);
  const core::ConfigReader::EnvLookup env =
      [](const std::string& name) -> std::optional<std::string> {
    if (name == "BENCH_KEY") return "bench-key";
    return std::nullopt;
  };
  auto config = ReadLlmConfig(*reader, env);
  if (!config.ok() || !reader->Finish().ok()) {
    std::fprintf(stderr, "config: %s\n", std::string(config.status().message()).c_str());
    return nullptr;
  }
  auto client = MakeLlmClient(*config, nullptr);
  if (!client.ok()) {
    std::fprintf(stderr, "client: %s\n", std::string(client.status().message()).c_str());
    return nullptr;
  }
  return *std::move(client);
}

// What the caller measured per call: wall and thread CPU time for the client
// and the bare loop; for client calls also the wall-clock start and end and
// the context switches.
struct CallTimes {
  std::vector<double> client_us, bare_us, client_cpu_us, bare_cpu_us;
  std::vector<int64_t> client_wall_start, client_wall_end;
  std::vector<long> client_ivcsw, client_vcsw;
};

// `calls` client calls and as many bare ones, interleaved; false when one
// failed.
template <typename ClientCall>
bool MeasureCalls(int calls, ClientCall& client_call, BareStream& bare, CallTimes& times) {
  for (int i = 0; i < calls; ++i) {
    // Alternate which goes first, so neither always follows the other.
    bool ok = true;
    for (int k = 0; k < 2; ++k) {
      const bool bare_turn = (i + k) % 2 == 0;
      rusage ru0{};
      getrusage(RUSAGE_THREAD, &ru0);
      const int64_t wall0 = core::NowMicros();
      const double cpu_start = ThreadCpuMicros();
      const auto start = Clock::now();
      ok = ok && (bare_turn ? bare.Run() : client_call());
      const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
      const int64_t wall1 = core::NowMicros();
      rusage ru1{};
      getrusage(RUSAGE_THREAD, &ru1);
      if (!bare_turn) {
        times.client_wall_start.push_back(wall0);
        times.client_wall_end.push_back(wall1);
        times.client_ivcsw.push_back(ru1.ru_nivcsw - ru0.ru_nivcsw);
        times.client_vcsw.push_back(ru1.ru_nvcsw - ru0.ru_nvcsw);
      }
      (bare_turn ? times.bare_us : times.client_us).push_back(us);
      (bare_turn ? times.bare_cpu_us : times.client_cpu_us)
          .push_back(ThreadCpuMicros() - cpu_start);
    }
    if (!ok) {
      std::fprintf(stderr, "call %d failed\n", i);
      return false;
    }
  }
  return true;
}

// Per measured client call, in call order: the fake's own time, the time
// before the request reached it and after its last chunk, and the overhead
// (the caller's wall time minus the fake's).
struct Overheads {
  std::vector<double> overhead_us, fake_us, pre_us, post_us;
};

// Matches the fake's records of the measured calls (after the warm-up) to
// the caller's; false when their counts differ.
bool MatchFakeRecords(const testing::FakeLlmServer& fake, const CallTimes& times, Overheads& out) {
  int seen = 0;
  for (const testing::RecordedRequest& r : fake.Requests()) {
    if (r.operation != "planner_stream" || seen++ < kWarmUpCalls) continue;
    out.fake_us.push_back(static_cast<double>(r.finished_micros - r.time_micros));
    const size_t n = out.overhead_us.size();
    out.pre_us.push_back(static_cast<double>(r.time_micros - times.client_wall_start[n]));
    out.post_us.push_back(static_cast<double>(times.client_wall_end[n] - r.finished_micros));
    out.overhead_us.push_back(times.client_us[out.overhead_us.size()] - out.fake_us.back());
  }
  if (out.overhead_us.size() != times.client_us.size()) {
    std::fprintf(stderr, "the fake recorded %zu measured calls, expected %zu\n",
                 out.overhead_us.size(), times.client_us.size());
    return false;
  }
  return true;
}

// The DIAG lines: where the overhead went, over all calls and the worst 1%.
void PrintDiagnostics(const CallTimes& times, const Overheads& o) {
  std::vector<size_t> order(o.overhead_us.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return o.overhead_us[a] > o.overhead_us[b]; });
  const size_t top = std::max<size_t>(1, order.size() / 100);
  double ivc_top = 0, vc_top = 0, ivc_all = 0, vc_all = 0, pre_top = 0, post_top = 0, cpu_top = 0,
         fake_top = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    ivc_all += times.client_ivcsw[i];
    vc_all += times.client_vcsw[i];
  }
  for (size_t k = 0; k < top; ++k) {
    const size_t i = order[k];
    ivc_top += times.client_ivcsw[i];
    vc_top += times.client_vcsw[i];
    pre_top += o.pre_us[i];
    post_top += o.post_us[i];
    cpu_top += times.client_cpu_us[i];
    fake_top += o.fake_us[i];
  }
  std::printf(
      "DIAG pre(start->fake arrival) p50 %.0f p99 %.0f; post(fake done->end) p50 %.0f p99 %.0f\n",
      Percentile(o.pre_us, 0.5), Percentile(o.pre_us, 0.99), Percentile(o.post_us, 0.5),
      Percentile(o.post_us, 0.99));
  std::printf(
      "DIAG all calls: ivcsw/call %.2f vcsw/call %.1f; worst 1%%: ivcsw %.2f vcsw %.1f pre %.0f "
      "post %.0f cpu %.0f fake %.0f\n",
      ivc_all / order.size(), vc_all / order.size(), ivc_top / top, vc_top / top, pre_top / top,
      post_top / top, cpu_top / top, fake_top / top);
}

int Run(int calls, int text_chars, int chunk_chars) {
  const std::string text = AnswerText(text_chars);
  testing::FakeRule rule;
  rule.reply.text = text;
  rule.reply.usage = testing::FakeUsage{420, static_cast<int64_t>(text_chars / 4), 0};
  rule.chunk_chars = chunk_chars;
  auto fake = testing::FakeLlmServer::Start({rule}, {.api_key = "bench-key"});
  if (!fake.ok()) {
    std::fprintf(stderr, "fake provider: %s\n", std::string(fake.status().message()).c_str());
    return 1;
  }
  const std::unique_ptr<LlmClient> client = ClientOnFake(**fake);
  if (!client) return 1;

  ChatRequest request;
  request.messages = {{Role::kSystem, "You are omniforge."},
                      {Role::kUser, "Summarise what you can do for my Monday Notion updates."}};
  CallContext context;
  context.operation_type = "planner_stream";
  std::atomic<int64_t> deltas{0};
  const StreamCallback on_delta = [&](const StreamDelta&) {
    deltas.fetch_add(1, std::memory_order_relaxed);
    return true;
  };
  BareStream bare(
      (*fake)->openai_base_url() + "/chat/completions",
      R"({"model":"bench-model","stream":true,"stream_options":{"include_usage":true},)"
      R"("messages":[{"role":"system","content":"You are omniforge."},)"
      R"({"role":"user","content":"Summarise what you can do for my Monday Notion updates."}]})");

  auto client_call = [&] {
    auto answer = client->Stream("speed", request, context, on_delta);
    return answer.ok() && answer->content == text;
  };
  for (int i = 0; i < kWarmUpCalls; ++i) {
    if (!client_call() || !bare.Run()) {
      std::fprintf(stderr, "warm-up call failed\n");
      return 1;
    }
  }
  deltas = 0;
  CallTimes times;
  if (!MeasureCalls(calls, client_call, bare, times)) return 1;
  Overheads o;
  if (!MatchFakeRecords(**fake, times, o)) return 1;
  const double cpu_p50 = Percentile(times.client_cpu_us, 0.50);
  const double cpu_p99 = Percentile(times.client_cpu_us, 0.99);
  const double overhead_p50 = Percentile(o.overhead_us, 0.50);
  const double overhead_p99 = Percentile(o.overhead_us, 0.99);
  PrintDiagnostics(times, o);
  std::printf("streamed answer: %d chars in %lld deltas per call, %d calls\n", text_chars,
              static_cast<long long>(deltas.load() / calls), calls);
  std::printf("fake's own time per call: p50 %.0f us  p99 %.0f us\n", Percentile(o.fake_us, 0.50),
              Percentile(o.fake_us, 0.99));
  std::printf("client wall clock per call: p50 %.0f us  p99 %.0f us (bare libcurl p50 %.0f us)\n",
              Percentile(times.client_us, 0.50), Percentile(times.client_us, 0.99),
              Percentile(times.bare_us, 0.50));
  std::printf("client thread CPU per call: p50 %.0f us  p99 %.0f us (bare libcurl p50 %.0f us)\n",
              cpu_p50, cpu_p99, Percentile(times.bare_cpu_us, 0.50));
  std::printf(
      "RESULT llm_overhead_p50_us=%.0f llm_overhead_p99_us=%.0f client_cpu_p50_us=%.0f "
      "client_cpu_p99_us=%.0f bare_curl_cpu_p50_us=%.0f deltas_per_call=%lld\n",
      overhead_p50, overhead_p99, cpu_p50, cpu_p99, Percentile(times.bare_cpu_us, 0.50),
      static_cast<long long>(deltas.load() / calls));
  return 0;
}

}  // namespace
}  // namespace omniforge::llm

// NOLINTNEXTLINE(bugprone-exception-escape): a bench that cannot set up ends on the exception
int main(int argc, char** argv) {
  CLI::App app{"LLM client overhead per streamed call against the fake provider"};
  int calls = 2000;
  int text_chars = 600;
  int chunk_chars = 4;
  app.add_option("--calls", calls, "measured calls of each kind")->check(CLI::PositiveNumber);
  app.add_option("--text-chars", text_chars, "characters in the streamed answer")
      ->check(CLI::PositiveNumber);
  app.add_option("--chunk-chars", chunk_chars, "characters per streamed chunk")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  return omniforge::llm::Run(calls, text_chars, chunk_chars);
}
