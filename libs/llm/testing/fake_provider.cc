#include "libs/llm/testing/fake_provider.h"

#include <httplib.h>
#include <netinet/in.h>
#include <re2/re2.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "libs/core/clock.h"
#include "libs/llm/json_scan.h"
#include "libs/llm/testing/fake_wire.h"

namespace omniforge::llm::testing {
namespace {

using internal::Answer;
using internal::HttpAnswer;
using internal::RequestView;
using internal::StreamEvent;
using internal::WireFormat;
using nlohmann::json;

// A request body as a document. The client library's scanner reads it
// (nlohmann's lexer takes a long body one character at a time through an
// input adapter); what the scanner leaves to a full parser (integers beyond
// 64 bits, deep nesting) and what is not JSON go to nlohmann's parser, which
// gives the same document or a discarded value.
json ParseBody(const std::string& body) {
  json parsed;
  nlohmann::detail::json_sax_dom_parser<json> builder(parsed, /*allow_exceptions_=*/false);
  std::string scratch;
  if (wire_internal::ScanJson(body, builder, scratch)) return parsed;
  return json::parse(body, nullptr, false);
}

constexpr char kOperationHeader[] = "x-omniforge-operation";

// httplib listens with a backlog of 5: a benchmark's clients connecting at
// once would overflow it and wait out SYN retransmits (a second or more).
class WideBacklogServer final : public httplib::Server {
 public:
  bool WidenBacklog() { return ::listen(svr_sock_, 1024) == 0; }
};

// httplib's ThreadPool starts every thread up front, which makes each Start()
// and Stop() cost milliseconds per hundred threads; most fakes serve a few
// requests. Threads here start when a connection finds none idle (each open
// connection holds one) and then stay until shutdown.
class OnDemandPool final : public httplib::TaskQueue {
 public:
  explicit OnDemandPool(size_t max_threads) : max_threads_(max_threads) {}

  void enqueue(std::function<void()> fn) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      jobs_.push_back(std::move(fn));
      if (jobs_.size() > idle_ && threads_.size() < max_threads_) {
        threads_.emplace_back([this] { Work(); });
      }
    }
    cv_.notify_one();
  }

  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      shutting_down_ = true;
    }
    cv_.notify_all();
    for (std::thread& thread : threads_) thread.join();
  }

 private:
  void Work() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      ++idle_;
      cv_.wait(lock, [this] { return !jobs_.empty() || shutting_down_; });
      --idle_;
      if (jobs_.empty()) return;
      std::function<void()> job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job();
      lock.lock();
    }
  }

  const size_t max_threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  bool shutting_down_ = false;
};

struct CompiledRule {
  FakeRule rule;
  std::unique_ptr<const RE2> regex;
  int remaining = -1;  // matches left; -1: unlimited
};

absl::StatusOr<CompiledRule> Compile(FakeRule rule, size_t index) {
  const std::string at = absl::StrCat("rule ", index, ": ");
  CompiledRule out;
  const FakeMatch& match = rule.match;
  if (!match.api.empty() && match.api != "openai" && match.api != "anthropic") {
    return absl::InvalidArgumentError(at + R"(match.api must be "openai" or "anthropic")");
  }
  if (!match.last_user_regex.empty()) {
    RE2::Options options;
    options.set_case_sensitive(false);
    options.set_log_errors(false);
    out.regex = std::make_unique<const RE2>(match.last_user_regex, options);
    if (!out.regex->ok()) {
      return absl::InvalidArgumentError(at + "bad last_user_regex: " + out.regex->error());
    }
  }
  static const std::set<std::string> kFinishReasons = {"", "stop", "length", "tool_calls",
                                                       "content_filter"};
  if (!kFinishReasons.contains(rule.reply.finish_reason)) {
    return absl::InvalidArgumentError(
        at + "finish_reason must be stop, length, tool_calls or content_filter");
  }
  if (rule.times == 0 || rule.times < -1) {
    return absl::InvalidArgumentError(at + "times must be -1 (unlimited) or positive");
  }
  if (rule.chunk_chars < 1) return absl::InvalidArgumentError(at + "chunk_chars must be >= 1");
  if (rule.first_byte_delay_ms < 0 || rule.chunk_delay_ms < 0 || rule.fault.hang_ms < 0 ||
      rule.fault.after_deltas < 0) {
    return absl::InvalidArgumentError(at + "delays, hang_ms and after_deltas must be >= 0");
  }
  if (rule.one_write && rule.chunk_delay_ms > 0) {
    return absl::InvalidArgumentError(at + "one_write needs chunk_delay_ms 0");
  }
  const FakeFault::Kind kind = rule.fault.kind;
  if ((kind == FakeFault::Kind::kStatus || kind == FakeFault::Kind::kStreamError) &&
      (rule.fault.status < 400 || rule.fault.status > 599)) {
    return absl::InvalidArgumentError(at + "fault status must be 400..599");
  }
  out.remaining = rule.times;
  out.rule = std::move(rule);
  return out;
}

absl::StatusOr<std::vector<CompiledRule>> CompileAll(std::vector<FakeRule> rules) {
  std::vector<CompiledRule> out;
  out.reserve(rules.size());
  for (size_t i = 0; i < rules.size(); ++i) {
    auto compiled = Compile(std::move(rules[i]), i);
    if (!compiled.ok()) return compiled.status();
    out.push_back(*std::move(compiled));
  }
  return out;
}

bool Matches(const CompiledRule& compiled, std::string_view api, const std::string& operation,
             const RequestView& view) {
  const FakeMatch& m = compiled.rule.match;
  if (!m.api.empty() && m.api != api) return false;
  if (!m.operation.empty() && m.operation != operation) return false;
  if (!m.model.empty() && m.model != view.model) return false;
  if (!m.last_user_contains.empty() &&
      !absl::StrContains(absl::AsciiStrToLower(view.last_user_text),
                         absl::AsciiStrToLower(m.last_user_contains))) {
    return false;
  }
  if (compiled.regex && !RE2::PartialMatch(view.last_user_text, *compiled.regex)) return false;
  if (!m.tool_offered.empty() && std::find(view.tool_names.begin(), view.tool_names.end(),
                                           m.tool_offered) == view.tool_names.end()) {
    return false;
  }
  if (m.last_is_tool_result && *m.last_is_tool_result != view.last_is_tool_result) return false;
  return true;
}

// The smallest value `schema` accepts: required properties only, each empty.
json Skeleton(const json& schema) {
  if (!schema.is_object()) return json::object();
  if (const auto c = schema.find("const"); c != schema.end()) return *c;
  if (const auto e = schema.find("enum"); e != schema.end() && e->is_array() && !e->empty()) {
    return e->front();
  }
  for (const char* key : {"anyOf", "oneOf"}) {
    const auto options = schema.find(key);
    if (options != schema.end() && options->is_array() && !options->empty()) {
      return Skeleton(options->front());
    }
  }
  std::string type;
  if (const auto t = schema.find("type"); t != schema.end()) {
    if (t->is_string()) type = t->get<std::string>();
    if (t->is_array()) {
      for (const json& option : *t) {
        if (option.is_string() && option != "null") {
          type = option.get<std::string>();
          break;
        }
      }
    }
  }
  if (type == "string") return "";
  if (type == "integer" || type == "number") return 0;
  if (type == "boolean") return false;
  if (type == "array") return json::array();
  if (type == "null") return nullptr;
  json out = json::object();
  const auto required = schema.find("required");
  const auto properties = schema.find("properties");
  if (required == schema.end() || !required->is_array()) return out;
  for (const json& name : *required) {
    if (!name.is_string()) continue;
    const std::string key = name.get<std::string>();
    out[key] = properties != schema.end() && properties->contains(key)
                   ? Skeleton((*properties)[key])
                   : json::object();
  }
  return out;
}

// `structured` made to break `schema`: its first required property removed,
// or, when nothing is required, a value of the wrong type.
std::string ViolateSchema(const std::string& structured, const json& schema) {
  json value = json::parse(structured, nullptr, false);
  const auto required = schema.find("required");
  if (value.is_object() && required != schema.end() && required->is_array() && !required->empty() &&
      required->front().is_string()) {
    value.erase(required->front().get<std::string>());
    return value.dump();
  }
  return schema.value("type", json()) == "array" ? "{}" : "[]";
}

int64_t EstimateTokens(size_t chars) { return std::max<int64_t>(1, (chars + 3) / 4); }

// Where a stream fault fires: before the output event that follows
// `after_deltas` output events, else right after the last output event.
size_t FaultPosition(const std::vector<StreamEvent>& events, int after_deltas) {
  int seen = 0;
  size_t after_last_output = std::min<size_t>(1, events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    if (!events[i].output) continue;
    if (seen == after_deltas) return i;
    ++seen;
    after_last_output = i + 1;
  }
  return after_last_output;
}

// `event` with the second half of its JSON missing.
std::string Truncate(const std::string& event) {
  const size_t data = event.find("data: ");
  if (data == std::string::npos) return event.substr(0, event.size() / 2);
  const size_t json_start = data + 6;
  const size_t json_size = event.size() - json_start - 2;  // without the blank line
  return absl::StrCat(event.substr(0, json_start), event.substr(json_start, json_size / 2), "\n\n");
}

void Send(const HttpAnswer& answer, httplib::Response& res) {
  res.status = answer.status;
  for (const auto& [name, value] : answer.headers) res.set_header(name, value);
  res.set_content(answer.body, "application/json");
}

}  // namespace

class FakeLlmServer::Impl {
 public:
  Impl(FakeOptions options, std::vector<CompiledRule> rules)
      : options_(std::move(options)), rules_(std::move(rules)) {
    server_.Post("/v1/chat/completions",
                 [this](const httplib::Request& req, httplib::Response& res) {
                   Serve(internal::OpenAiWire(), req, res);
                 });
    server_.Post("/v1/messages", [this](const httplib::Request& req, httplib::Response& res) {
      Serve(internal::AnthropicWire(), req, res);
    });
    server_.Post(".*", [this](const httplib::Request& req, httplib::Response& res) {
      Record("", req, false);
      // OpenAI's answer to an unknown route.
      nlohmann::ordered_json error;
      error["message"] = absl::StrCat("Invalid URL (POST ", req.path, ")");
      error["type"] = "invalid_request_error";
      error["param"] = nullptr;
      error["code"] = nullptr;
      nlohmann::ordered_json body;
      body["error"] = std::move(error);
      Send(HttpAnswer{404, internal::Dump(body), {}}, res);
    });
    // httplib's default also sets SO_REUSEPORT, which would let another
    // process bind the same port and take half of the requests.
    server_.set_socket_options([](socket_t sock) {
      const int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    });
    // Small SSE writes must leave at once, not wait for Nagle.
    server_.set_tcp_nodelay(true);
    server_.set_keep_alive_max_count(100000);
    server_.set_keep_alive_timeout(options_.keep_alive_timeout_s);
    const size_t max_threads = std::max(1, options_.max_threads);
    server_.new_task_queue = [max_threads] { return new OnDemandPool(max_threads); };
  }

  ~Impl() { Stop(); }

  absl::Status Listen() {
    port_ = options_.port;
    if (port_ == 0) {
      port_ = server_.bind_to_any_port("127.0.0.1");
    } else if (!server_.bind_to_port("127.0.0.1", port_)) {
      port_ = -1;
    }
    if (port_ < 0) {
      return absl::UnavailableError(absl::StrCat("cannot bind 127.0.0.1:", options_.port));
    }
    if (!server_.WidenBacklog()) return absl::InternalError("listen() failed");
    thread_ = std::thread([this] {
      server_.listen_after_bind();
      listen_returned_ = true;
    });
    // httplib's stop() is a no-op until the accept loop runs, so a Stop()
    // right after Start() would hang in join without this wait.
    while (!server_.is_running() && !listen_returned_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return absl::OkStatus();
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (!thread_.joinable()) return;
    server_.stop();
    ShutdownConnections();
    thread_.join();
  }

  int port() const { return port_; }

  absl::Status SetRules(std::vector<FakeRule> rules) {
    auto compiled = CompileAll(std::move(rules));
    if (!compiled.ok()) return compiled.status();
    std::lock_guard<std::mutex> lock(mu_);
    rules_ = *std::move(compiled);
    return absl::OkStatus();
  }

  absl::Status AddRule(FakeRule rule) {
    std::lock_guard<std::mutex> lock(mu_);
    auto compiled = Compile(std::move(rule), rules_.size());
    if (!compiled.ok()) return compiled.status();
    rules_.push_back(*std::move(compiled));
    return absl::OkStatus();
  }

  std::vector<RecordedRequest> Requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

  size_t RequestCount() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_.size();
  }

  bool WaitForRequests(size_t count, int64_t timeout_ms) const {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                        [&] { return requests_.size() >= count; });
  }

 private:
  // An idle keep-alive connection holds its thread, and so the join in
  // Stop(), until keep_alive_timeout_s passes; httplib offers no handle on
  // accepted sockets, so they are found among the process's sockets by their
  // local port and shut down (not closed: httplib still owns the fds).
  void ShutdownConnections() const {
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", error)) {
      int fd = -1;
      const std::string name = entry.path().filename().string();
      if (!absl::SimpleAtoi(name, &fd)) continue;
      sockaddr_in local{};
      socklen_t size = sizeof(local);
      if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &size) != 0 ||
          local.sin_family != AF_INET || local.sin_addr.s_addr != htonl(INADDR_LOOPBACK) ||
          ntohs(local.sin_port) != port_) {
        continue;
      }
      shutdown(fd, SHUT_RDWR);
    }
  }

  // Records the request; returns it and its index in requests_.
  std::pair<RecordedRequest, size_t> Record(std::string_view api, const httplib::Request& req,
                                            bool stream) {
    // httplib adds the peer's and its own address as pseudo headers.
    static const std::set<std::string> kPseudoHeaders = {"REMOTE_ADDR", "REMOTE_PORT", "LOCAL_ADDR",
                                                         "LOCAL_PORT"};
    RecordedRequest record;
    record.api = std::string(api);
    record.path = req.path;
    for (const auto& [name, value] : req.headers) {
      if (!kPseudoHeaders.contains(name)) record.headers[absl::AsciiStrToLower(name)] = value;
    }
    if (options_.record_bodies) record.body = req.body;
    if (const auto it = record.headers.find(kOperationHeader); it != record.headers.end()) {
      record.operation = it->second;
    }
    record.stream = stream;
    record.time_micros = core::NowMicros();
    size_t index = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      index = requests_.size();
      requests_.push_back(record);
    }
    cv_.notify_all();
    return {std::move(record), index};
  }

  void MarkFinished(size_t index) {
    const int64_t now = core::NowMicros();
    std::lock_guard<std::mutex> lock(mu_);
    if (index < requests_.size()) requests_[index].finished_micros = now;
  }

  // The rule answering this request (consuming one of its `times`), if any.
  std::optional<FakeRule> Take(std::string_view api, const std::string& operation,
                               const RequestView& view) {
    std::lock_guard<std::mutex> lock(mu_);
    for (CompiledRule& compiled : rules_) {
      if (compiled.remaining == 0 || !Matches(compiled, api, operation, view)) continue;
      if (compiled.remaining > 0) --compiled.remaining;
      return compiled.rule;
    }
    return std::nullopt;
  }

  // Sleeps `ms` (< 0: until Stop()); false when Stop() cut it short.
  bool Pause(int64_t ms) const {
    std::unique_lock<std::mutex> lock(mu_);
    if (ms < 0) {
      cv_.wait(lock, [&] { return stopping_; });
      return false;
    }
    return !cv_.wait_for(lock, std::chrono::milliseconds(ms), [&] { return stopping_; });
  }

  Answer Compose(const WireFormat& wire, const RequestView& view, const FakeRule& rule,
                 bool matched) {
    Answer answer;
    answer.id = wire.ResponseId(++seq_);
    answer.model = view.model;
    answer.created = core::NowMicros() / 1'000'000;
    const FakeReply& reply = rule.reply;
    answer.tool_calls = reply.tool_calls;
    for (FakeToolCall& call : answer.tool_calls) {
      if (call.id.empty()) call.id = wire.ToolCallId(++seq_);
    }
    size_t output_chars = 0;
    if (view.structured_schema && answer.tool_calls.empty()) {
      std::string structured;
      if (reply.json) {
        structured = *reply.json;
      } else if (matched && !reply.text.empty()) {
        structured = reply.text;
      } else {
        structured = Skeleton(*view.structured_schema).dump();
      }
      if (rule.fault.kind == FakeFault::Kind::kInvalidStructuredOutput) {
        structured = ViolateSchema(structured, *view.structured_schema);
      }
      output_chars = structured.size();
      answer.structured = std::move(structured);
      answer.structured_call_id = wire.ToolCallId(++seq_);
      answer.structured_name = view.structured_name;
    } else {
      answer.text = matched ? reply.text : absl::StrCat("echo: ", view.last_user_text);
      output_chars = answer.text.size();
    }
    for (const FakeToolCall& call : answer.tool_calls) {
      output_chars += call.name.size() + call.arguments_json.size();
    }
    answer.usage = reply.usage.value_or(
        FakeUsage{EstimateTokens(view.prompt_chars), EstimateTokens(output_chars), 0});
    answer.finish_reason = !reply.finish_reason.empty() ? reply.finish_reason
                           : answer.tool_calls.empty()  ? "stop"
                                                        : "tool_calls";
    return answer;
  }

  void Serve(const WireFormat& wire, const httplib::Request& req, httplib::Response& res) {
    const json body = ParseBody(req.body);
    const bool stream = body.is_object() && body.contains("stream") && body["stream"] == json(true);
    const auto [record, index] = Record(wire.api(), req, stream);
    auto inspected = wire.Inspect(record.headers, body, options_.api_key);
    if (const auto* error = std::get_if<HttpAnswer>(&inspected)) {
      Send(*error, res);
      return;
    }
    const RequestView& view = std::get<RequestView>(inspected);
    const std::optional<FakeRule> matched = Take(wire.api(), record.operation, view);
    const FakeRule rule = matched.value_or(FakeRule{});
    const FakeFault& fault = rule.fault;

    if (fault.kind == FakeFault::Kind::kStatus ||
        (fault.kind == FakeFault::Kind::kStreamError && !view.stream)) {
      HttpAnswer error = wire.Error(fault.status);
      if (!fault.body.empty()) error.body = fault.body;
      if (!fault.retry_after.empty()) error.headers.emplace_back("retry-after", fault.retry_after);
      Send(error, res);
      return;
    }
    if (fault.kind == FakeFault::Kind::kHang && !Pause(fault.hang_ms > 0 ? fault.hang_ms : -1)) {
      Send(wire.Error(503), res);
      return;
    }
    const Answer answer = Compose(wire, view, rule, matched.has_value());
    if (view.stream) {
      StartStream(wire, answer, view, rule, index, res);
      return;
    }
    if (rule.first_byte_delay_ms > 0 && !Pause(rule.first_byte_delay_ms)) {
      Send(wire.Error(503), res);
      return;
    }
    std::string text = wire.Body(answer);
    if (fault.kind == FakeFault::Kind::kMalformedJson) {
      text.resize(text.size() / 2);
    } else if (fault.kind == FakeFault::Kind::kCutStream) {
      // Content-Length promises the whole body; half of it is all that comes.
      const size_t total = text.size();
      auto half = std::make_shared<std::string>(text.substr(0, total / 2));
      res.set_content_provider(total, "application/json",
                               [half](size_t offset, size_t, httplib::DataSink& sink) {
                                 if (offset > 0) return false;
                                 return sink.write(half->data(), half->size());
                               });
      return;
    }
    res.set_content(text, "application/json");
  }

  void StartStream(const WireFormat& wire, const Answer& answer, const RequestView& view,
                   const FakeRule& rule, size_t index, httplib::Response& res) {
    struct Plan {
      std::vector<std::string> chunks;
      bool cut = false;
      size_t next = 0;
      int64_t first_delay_ms = 0;
      int64_t chunk_delay_ms = 0;
    };
    auto plan = std::make_shared<Plan>();
    plan->first_delay_ms = rule.first_byte_delay_ms;
    plan->chunk_delay_ms = rule.chunk_delay_ms;
    std::vector<StreamEvent> events = wire.Events(answer, view, rule.chunk_chars);
    const size_t at = FaultPosition(events, rule.fault.after_deltas);
    for (size_t i = 0; i < events.size(); ++i) {
      if (i == at) {
        switch (rule.fault.kind) {
          case FakeFault::Kind::kCutStream:
            plan->cut = true;
            break;
          case FakeFault::Kind::kStreamError:
            plan->chunks.push_back(wire.StreamErrorEvent());
            break;
          case FakeFault::Kind::kMalformedJson:
            plan->chunks.push_back(Truncate(events[i].bytes));
            break;
          default:
            break;
        }
        if (plan->cut || rule.fault.kind == FakeFault::Kind::kStreamError) break;
      }
      plan->chunks.push_back(std::move(events[i].bytes));
    }
    if (rule.one_write && plan->chunks.size() > 1) {
      plan->chunks = {absl::StrJoin(plan->chunks, "")};
    }
    res.status = 200;
    res.set_header("cache-control", "no-cache");
    // Exactly "text/event-stream": httplib would gzip any other text/* type
    // for clients that accept it, holding events back in the compressor.
    res.set_chunked_content_provider(
        "text/event-stream", [this, plan, index](size_t, httplib::DataSink& sink) {
          if (plan->next == plan->chunks.size()) {
            if (plan->cut) return false;  // closes without the terminating chunk
            MarkFinished(index);
            sink.done();
            return true;
          }
          const int64_t delay = plan->next == 0 ? plan->first_delay_ms : plan->chunk_delay_ms;
          if (delay > 0 && !Pause(delay)) return false;
          const std::string& chunk = plan->chunks[plan->next++];
          return sink.write(chunk.data(), chunk.size());
        });
  }

  const FakeOptions options_;
  WideBacklogServer server_;
  std::thread thread_;
  std::atomic<bool> listen_returned_{false};
  int port_ = -1;
  std::atomic<uint64_t> seq_{0};

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;  // requests arriving, Stop()
  bool stopping_ = false;
  std::vector<CompiledRule> rules_;
  std::vector<RecordedRequest> requests_;
};

absl::StatusOr<std::unique_ptr<FakeLlmServer>> FakeLlmServer::Start(std::vector<FakeRule> rules,
                                                                    FakeOptions options) {
  auto compiled = CompileAll(std::move(rules));
  if (!compiled.ok()) return compiled.status();
  auto impl = std::make_unique<Impl>(std::move(options), *std::move(compiled));
  if (absl::Status status = impl->Listen(); !status.ok()) return status;
  return std::unique_ptr<FakeLlmServer>(new FakeLlmServer(std::move(impl)));
}

FakeLlmServer::FakeLlmServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

FakeLlmServer::~FakeLlmServer() { Stop(); }

int FakeLlmServer::port() const { return impl_->port(); }

std::string FakeLlmServer::openai_base_url() const {
  return absl::StrCat("http://127.0.0.1:", impl_->port(), "/v1");
}

std::string FakeLlmServer::anthropic_base_url() const {
  return absl::StrCat("http://127.0.0.1:", impl_->port());
}

absl::Status FakeLlmServer::SetRules(std::vector<FakeRule> rules) {
  return impl_->SetRules(std::move(rules));
}

absl::Status FakeLlmServer::AddRule(FakeRule rule) { return impl_->AddRule(std::move(rule)); }

std::vector<RecordedRequest> FakeLlmServer::Requests() const { return impl_->Requests(); }

size_t FakeLlmServer::RequestCount() const { return impl_->RequestCount(); }

bool FakeLlmServer::WaitForRequests(size_t count, int64_t timeout_ms) const {
  return impl_->WaitForRequests(count, timeout_ms);
}

void FakeLlmServer::Stop() { impl_->Stop(); }

}  // namespace omniforge::llm::testing
