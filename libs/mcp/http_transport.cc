#include "libs/mcp/http_transport.h"

#include <curl/curl.h>

#include <algorithm>
#include <mutex>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "libs/core/ambient.h"
#include "libs/core/logging.h"
#include "libs/llm/sse.h"
#include "libs/mcp/json_rpc.h"

namespace omniforge::mcp {
namespace {

constexpr size_t kMaxIdleHandles = 8;
constexpr std::chrono::milliseconds kDeleteTimeout{2'000};
// How often a resumed answer stream checks whether its answer came another
// way or the connection closed.
constexpr std::chrono::milliseconds kAnswerPoll{100};

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct HeaderList {
  curl_slist* list = nullptr;
  ~HeaderList() { curl_slist_free_all(list); }
  void Add(const std::string& line) { list = curl_slist_append(list, line.c_str()); }
};

// What one exchange received.
struct Exchange {
  int status = 0;
  std::string content_type;
  std::string session_id;
  bool headers_done = false;
  bool is_sse = false;
  std::string body;  // a non-SSE body
  bool too_large = false;
  size_t max_bytes = 0;
  const TransportHandlers* handlers = nullptr;
  std::optional<llm::SseParser> sse;
  int events = 0;  // messages delivered from the stream
  // Asked after each message; true ends the transfer (`stopped`).
  const std::function<bool()>* stop = nullptr;
  bool stopped = false;
};

// Decides, once the final status and headers are in, whether the body is
// an event stream; an SSE stream is known as one before its first byte.
void HeadersComplete(Exchange* exchange) {
  if (exchange->headers_done) return;
  exchange->headers_done = true;
  exchange->is_sse = exchange->status >= 200 && exchange->status < 300 &&
                     absl::StartsWith(exchange->content_type, "text/event-stream");
  if (exchange->is_sse) {
    exchange->sse.emplace([exchange](const llm::SseEvent& event) {
      if ((event.type == "message" || event.type.empty()) && !event.data.empty()) {
        exchange->handlers->on_message(event.data);
        ++exchange->events;
      }
      if (exchange->stop != nullptr && *exchange->stop && (*exchange->stop)()) {
        exchange->stopped = true;
        return false;
      }
      return true;
    });
  }
}

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* exchange = static_cast<Exchange*>(user);
  const absl::string_view line(data, size * count);
  if (absl::StripAsciiWhitespace(line).empty()) {
    // The blank line ending a header block; an interim (1xx) one is not final.
    if (exchange->status >= 200) HeadersComplete(exchange);
    return size * count;
  }
  if (absl::StartsWith(line, "HTTP/")) {
    // A new status line (after a 100 Continue, or a redirect) starts over.
    exchange->content_type.clear();
    const size_t space = line.find(' ');
    int status = 0;
    if (space != absl::string_view::npos && absl::SimpleAtoi(line.substr(space + 1, 3), &status)) {
      exchange->status = status;
    }
    return size * count;
  }
  const size_t colon = line.find(':');
  if (colon == absl::string_view::npos) return size * count;
  const std::string name = absl::AsciiStrToLower(line.substr(0, colon));
  const std::string value(absl::StripAsciiWhitespace(line.substr(colon + 1)));
  if (name == "content-type") exchange->content_type = absl::AsciiStrToLower(value);
  if (name == "mcp-session-id") exchange->session_id = value;
  return size * count;
}

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* exchange = static_cast<Exchange*>(user);
  const std::string_view bytes(data, size * count);
  HeadersComplete(exchange);
  if (exchange->is_sse) {
    exchange->sse->Feed(bytes);
    if (exchange->stopped) return 0;
    if (exchange->sse->buffered_bytes() > exchange->max_bytes) {
      exchange->too_large = true;
      return 0;
    }
    return bytes.size();
  }
  if (exchange->body.size() + bytes.size() > exchange->max_bytes) {
    exchange->too_large = true;
    return 0;
  }
  exchange->body.append(bytes);
  return bytes.size();
}

// The options every exchange with the server shares: where to, the headers,
// and `exchange` receiving the answer's headers and body.
void Aim(CURL* curl, const std::string& url, const HeaderList& headers, Exchange& exchange) {
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.list);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &exchange);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &exchange);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
}

// The server's explanation in an error body: a JSON-RPC error's message, or
// the start of the text.
std::string ErrorDetail(const std::string& body) {
  if (body.empty()) return "no body";
  absl::StatusOr<std::vector<IncomingMessage>> messages = ParseIncoming(body);
  if (messages.ok() && !messages->empty() && (*messages)[0].kind == IncomingMessage::Kind::kError) {
    return absl::StrCat((*messages)[0].error_message, " (JSON-RPC error ",
                        (*messages)[0].error_code, ")");
  }
  return Excerpt(body, 300);
}

absl::Status StatusFromHttp(int status, const std::string& url, const std::string& body) {
  const std::string text = absl::StrCat("HTTP ", status, " from ", url, ": ", ErrorDetail(body));
  switch (status) {
    case 400:
    case 413:
    case 422:
      return absl::InvalidArgumentError(text);
    case 401:
      return absl::UnauthenticatedError(text);
    case 403:
      return absl::PermissionDeniedError(text);
    case 404:
      return absl::NotFoundError(text);
    case 405:
      return absl::UnimplementedError(text);
    case 429:
      return absl::ResourceExhaustedError(text);
    case 500:
      return absl::InternalError(text);
    default:
      if (status >= 500 || status == 408) return absl::UnavailableError(text);
      return absl::UnknownError(text);
  }
}

// The wait before the next attempt to reopen a stream: `base` after an
// attempt that brought events, doubling with each one in a row that did not.
std::chrono::milliseconds ReconnectDelay(std::chrono::milliseconds base,
                                         std::chrono::milliseconds max, int fruitless) {
  // A server asking for `retry: 0` does not get a busy loop.
  std::chrono::milliseconds delay = std::max(base, std::chrono::milliseconds(10));
  for (int i = 0; i < fruitless && delay < max; ++i) delay *= 2;
  return std::min(delay, max);
}

// Transfer results after which the stream was open and then ended or broke.
bool StreamBroke(CURLcode code) {
  return code == CURLE_OK || code == CURLE_PARTIAL_FILE || code == CURLE_RECV_ERROR ||
         code == CURLE_GOT_NOTHING || code == CURLE_SEND_ERROR || code == CURLE_WRITE_ERROR;
}

// Adds the session's headers (when known) and the configured ones.
void AddSessionHeaders(HeaderList& headers, const std::string& session_id,
                       const std::string& protocol_version,
                       const std::vector<std::pair<std::string, std::string>>& configured) {
  if (!session_id.empty()) headers.Add("Mcp-Session-Id: " + session_id);
  if (!protocol_version.empty()) headers.Add("MCP-Protocol-Version: " + protocol_version);
  for (const auto& [name, value] : configured) headers.Add(absl::StrCat(name, ": ", value));
}

// Adds the tool call's trace context (the thread's current span), if any.
void AddTraceHeaders(HeaderList& headers) {
  const core::Ambient& ambient = core::CurrentAmbient();
  if (!ambient.span.valid()) return;
  headers.Add(absl::StrCat("traceparent: ", core::FormatTraceparent(ambient.span)));
  if (!ambient.tracestate.empty()) headers.Add(absl::StrCat("tracestate: ", ambient.tracestate));
}

// POSTs `message` on `curl` (aimed already), connecting within
// `connect_timeout` and, when `bounded`, done within `left`; curl's error
// text goes to `error_text`.
CURLcode PerformPost(CURL* curl, std::string_view message, char* error_text, bool bounded,
                     std::chrono::milliseconds left, std::chrono::milliseconds connect_timeout) {
  curl_easy_setopt(curl, CURLOPT_POST, 1L);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, message.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(message.size()));
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_text);
  curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
  const long connect_ms = static_cast<long>(
      bounded ? std::min<int64_t>(left.count(), connect_timeout.count()) : connect_timeout.count());
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
  if (bounded) curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(left.count()));
  return curl_easy_perform(curl);
}

// Runs the one transfer of `multi` until it ends, `exchange` or `stop` says
// to stop, or (when the caller polls for it) `stop` turns true. `running`
// says whether it was still under way. Returns the transfer's result.
CURLcode RunTransfer(CURLM* multi, const Exchange& exchange, const std::function<bool()>& stop,
                     bool wakeable, int& running) {
  CURLcode code = CURLE_OK;
  for (;;) {
    if (curl_multi_perform(multi, &running) != CURLM_OK) {
      code = CURLE_FAILED_INIT;
      running = 0;
      break;
    }
    if (running == 0) break;
    if (exchange.stopped || (stop && stop())) break;
    // Woken at once by StopListener; a resumed answer looks at `stop`
    // (answered, closed) every 100 ms.
    curl_multi_poll(multi, nullptr, 0, wakeable ? 1000 : static_cast<int>(kAnswerPoll.count()),
                    nullptr);
  }
  if (running == 0 && code == CURLE_OK) {
    int left = 0;
    while (CURLMsg* message = curl_multi_info_read(multi, &left)) {
      if (message->msg == CURLMSG_DONE) code = message->data.result;
    }
  }
  return code;
}

}  // namespace

struct HttpTransport::StreamResult {
  CURLcode code = CURLE_OK;
  int status = 0;
  bool is_sse = false;   // a 2xx event stream was opened
  bool stopped = false;  // `stop` ended it
  bool too_large = false;
  std::string body;  // a non-SSE answer
  std::string error;
  std::string last_event_id;  // of the last event received; empty when none
  long long retry_ms = -1;
  int events = 0;
};

class HttpTransport::HandlePool {
 public:
  ~HandlePool() {
    for (CURL* handle : idle_) curl_easy_cleanup(handle);
  }
  CURL* Acquire() {
    {
      absl::MutexLock lock(&mu_);
      if (!idle_.empty()) {
        CURL* handle = idle_.back();
        idle_.pop_back();
        curl_easy_reset(handle);  // keeps its connection
        return handle;
      }
    }
    return curl_easy_init();
  }
  void Release(CURL* handle) {
    absl::MutexLock lock(&mu_);
    if (idle_.size() < kMaxIdleHandles) {
      idle_.push_back(handle);
      return;
    }
    curl_easy_cleanup(handle);
  }

 private:
  absl::Mutex mu_;
  std::vector<CURL*> idle_ ABSL_GUARDED_BY(mu_);
};

HttpTransport::HttpTransport(HttpServerConfig config)
    : config_(std::move(config)), pool_(std::make_unique<HandlePool>()) {
  GlobalInit();
}

HttpTransport::~HttpTransport() { Close(); }

absl::Status HttpTransport::Open(TransportHandlers handlers, uint64_t epoch) {
  StopListener();
  std::string old_session;
  std::string old_version;
  {
    absl::MutexLock lock(&mu_);
    old_session = std::move(session_id_);
    old_version = std::move(protocol_version_);
    session_id_.clear();
    protocol_version_.clear();
    handlers_ = std::make_shared<const TransportHandlers>(std::move(handlers));
    epoch_ = epoch;
    open_ = true;
  }
  if (!old_session.empty()) DeleteSession(old_session, old_version);
  return absl::OkStatus();
}

void HttpTransport::SetProtocolVersion(const std::string& version) {
  absl::MutexLock lock(&mu_);
  protocol_version_ = version;
}

std::string HttpTransport::session_id() const {
  absl::MutexLock lock(&mu_);
  return session_id_;
}

absl::Status HttpTransport::Send(std::string_view message, const SendOptions& options) {
  std::shared_ptr<const TransportHandlers> handlers;
  std::string session_id;
  std::string protocol_version;
  {
    absl::MutexLock lock(&mu_);
    if (!open_ || options.epoch != epoch_)
      return absl::UnavailableError("the connection is closed");
    handlers = handlers_;
    if (!options.is_initialize) {
      session_id = session_id_;
      protocol_version = protocol_version_;
    }
  }
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(options.deadline - Clock::now());
  if (left.count() <= 0) return absl::DeadlineExceededError("the deadline passed before sending");
  const bool bounded = options.deadline != Clock::time_point::max();

  HeaderList headers;
  headers.Add("Content-Type: application/json");
  headers.Add("Accept: application/json, text/event-stream");
  headers.Add("Expect:");
  AddSessionHeaders(headers, session_id, protocol_version, config_.headers);
  for (const auto& [name, value] : options.headers) headers.Add(absl::StrCat(name, ": ", value));
  AddTraceHeaders(headers);

  Exchange exchange;
  exchange.max_bytes = config_.max_message_bytes;
  exchange.handlers = handlers.get();
  char error_text[CURL_ERROR_SIZE] = {0};

  CURL* curl = pool_->Acquire();
  if (curl == nullptr) return absl::InternalError("curl_easy_init failed");
  Aim(curl, config_.url, headers, exchange);
  const CURLcode code =
      PerformPost(curl, message, error_text, bounded, left, config_.connect_timeout);
  pool_->Release(curl);

  if (exchange.too_large) {
    return absl::ResourceExhaustedError(absl::StrCat("a message from ", config_.url, " exceeded ",
                                                     config_.max_message_bytes, " bytes"));
  }
  if (code == CURLE_OPERATION_TIMEDOUT) {
    return absl::DeadlineExceededError(
        absl::StrCat("no complete answer from ", config_.url, " before the deadline"));
  }
  if (exchange.is_sse && options.is_initialize && !exchange.session_id.empty()) {
    absl::MutexLock lock(&mu_);
    if (open_ && options.epoch == epoch_) session_id_ = exchange.session_id;
  }
  // An answer stream that ended before the answer, after an event with an
  // id, can be resumed: the server replays what followed that event.
  if (exchange.is_sse && StreamBroke(code) && options.answered &&
      !exchange.sse->last_event_id().empty() && !options.answered()) {
    return ResumeAnswer(exchange.sse->last_event_id(), exchange.sse->retry_ms(),
                        exchange.session_id.empty() ? session_id : exchange.session_id,
                        protocol_version, *handlers, options);
  }
  if (code != CURLE_OK) {
    return absl::UnavailableError(
        absl::StrCat("cannot reach ", config_.url, ": ",
                     error_text[0] != 0 ? error_text : curl_easy_strerror(code)));
  }
  if (exchange.status >= 200 && exchange.status < 300) {
    if (!exchange.is_sse && !exchange.body.empty() &&
        exchange.body.find_first_not_of(" \t\r\n") != std::string::npos) {
      handlers->on_message(exchange.body);
    }
    if (options.is_initialize && !exchange.session_id.empty()) {
      absl::MutexLock lock(&mu_);
      if (open_ && options.epoch == epoch_) session_id_ = exchange.session_id;
    }
    return absl::OkStatus();
  }
  if (exchange.status == 404 && !session_id.empty()) {
    return SessionExpiredError(absl::StrCat(config_.url, " answered 404 to session ", session_id));
  }
  return StatusFromHttp(exchange.status, config_.url, exchange.body);
}

void HttpTransport::DeleteSession(const std::string& session_id,
                                  const std::string& protocol_version) {
  HeaderList headers;
  headers.Add("Mcp-Session-Id: " + session_id);
  if (!protocol_version.empty()) headers.Add("MCP-Protocol-Version: " + protocol_version);
  for (const auto& [name, value] : config_.headers) headers.Add(absl::StrCat(name, ": ", value));
  Exchange exchange;
  exchange.max_bytes = 65536;
  TransportHandlers ignore;
  ignore.on_message = [](std::string_view) {};
  exchange.handlers = &ignore;
  CURL* curl = pool_->Acquire();
  if (curl == nullptr) return;
  Aim(curl, config_.url, headers, exchange);
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, "DELETE");
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(kDeleteTimeout.count()));
  const CURLcode code = curl_easy_perform(curl);
  pool_->Release(curl);
  core::LogDebug("mcp session deleted",
                 {{"server", config_.server_name},
                  {"status", code == CURLE_OK ? std::to_string(exchange.status)
                                              : std::string(curl_easy_strerror(code))}});
}

void HttpTransport::Close() {
  StopListener();
  std::string session_id;
  std::string protocol_version;
  {
    absl::MutexLock lock(&mu_);
    if (!open_) return;
    open_ = false;
    session_id = std::move(session_id_);
    protocol_version = std::move(protocol_version_);
    session_id_.clear();
    protocol_version_.clear();
    handlers_.reset();
  }
  if (!session_id.empty()) DeleteSession(session_id, protocol_version);
}

bool HttpTransport::EpochLive(uint64_t epoch) const {
  absl::MutexLock lock(&mu_);
  return open_ && epoch == epoch_;
}

bool HttpTransport::WaitEpochOver(uint64_t epoch, bool listener, Clock::time_point until) {
  absl::MutexLock lock(&mu_);
  while (open_ && epoch == epoch_ && !(listener && listener_stop_)) {
    const Clock::duration left = until - Clock::now();
    if (left <= Clock::duration::zero()) return false;
    listener_cv_.WaitWithTimeout(&mu_, absl::FromChrono(left));
  }
  return true;
}

HttpTransport::StreamResult HttpTransport::GetStream(const std::string& last_event_id,
                                                     const std::string& session_id,
                                                     const std::string& protocol_version,
                                                     const TransportHandlers& handlers,
                                                     const std::function<bool()>& stop,
                                                     Clock::time_point deadline, bool wakeable) {
  StreamResult result;
  HeaderList headers;
  headers.Add("Accept: text/event-stream");
  if (!session_id.empty()) headers.Add("Mcp-Session-Id: " + session_id);
  if (!protocol_version.empty()) headers.Add("MCP-Protocol-Version: " + protocol_version);
  if (!last_event_id.empty()) headers.Add("Last-Event-ID: " + last_event_id);
  for (const auto& [name, value] : config_.headers) headers.Add(absl::StrCat(name, ": ", value));

  Exchange exchange;
  exchange.max_bytes = config_.max_message_bytes;
  exchange.handlers = &handlers;
  exchange.stop = &stop;
  char error_text[CURL_ERROR_SIZE] = {0};

  // A stream lives long and is stopped from another thread: its own handle
  // in its own multi handle, which StopListener can wake.
  CURL* curl = curl_easy_init();
  CURLM* multi = curl_multi_init();
  if (curl == nullptr || multi == nullptr) {
    if (curl != nullptr) curl_easy_cleanup(curl);
    if (multi != nullptr) curl_multi_cleanup(multi);
    result.code = CURLE_FAILED_INIT;
    result.error = "curl init failed";
    return result;
  }
  Aim(curl, config_.url, headers, exchange);
  curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_text);
  curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
  const bool bounded = deadline != Clock::time_point::max();
  int64_t connect_ms = config_.connect_timeout.count();
  if (bounded) {
    const int64_t left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    connect_ms = std::max<int64_t>(1, std::min(connect_ms, left));
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(std::max<int64_t>(1, left)));
  }
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(connect_ms));
  curl_multi_add_handle(multi, curl);

  bool registered = false;
  if (wakeable) {
    absl::MutexLock lock(&mu_);
    if (!listener_stop_) {
      listener_multi_ = multi;
      registered = true;
    }
  }
  int running = 1;
  CURLcode code = CURLE_OK;
  if (!wakeable || registered) code = RunTransfer(multi, exchange, stop, wakeable, running);
  if (registered) {
    absl::MutexLock lock(&mu_);
    listener_multi_ = nullptr;
  }
  curl_multi_remove_handle(multi, curl);
  curl_easy_cleanup(curl);
  curl_multi_cleanup(multi);

  result.code = code;
  result.status = exchange.status;
  result.is_sse = exchange.is_sse;
  result.stopped = exchange.stopped || running != 0 || (wakeable && !registered);
  result.too_large = exchange.too_large;
  result.body = std::move(exchange.body);
  result.error = error_text[0] != 0 ? error_text : curl_easy_strerror(code);
  if (exchange.sse.has_value()) {
    result.last_event_id = exchange.sse->last_event_id();
    result.retry_ms = exchange.sse->retry_ms();
  }
  result.events = exchange.events;
  return result;
}

absl::Status HttpTransport::ResumeAnswer(std::string last_event_id, long long retry_ms,
                                         const std::string& session_id,
                                         const std::string& protocol_version,
                                         const TransportHandlers& handlers,
                                         const SendOptions& options) {
  const std::function<bool()> stop = [this, &options] {
    return options.answered() || !EpochLive(options.epoch);
  };
  std::chrono::milliseconds base =
      retry_ms >= 0 ? std::chrono::milliseconds(retry_ms) : config_.reconnect_backoff;
  int fruitless = 0;
  for (int attempt = 1;; ++attempt) {
    // The server's `retry:` (SSE, and MCP since 2025-11-25) is the wait
    // before reconnecting, the first time too. The answer may come on the
    // GET stream meanwhile: looked for every 100 ms.
    const Clock::time_point until =
        std::min(options.deadline,
                 Clock::now() + ReconnectDelay(base, config_.reconnect_backoff_max, fruitless));
    while (Clock::now() < until && !options.answered()) {
      if (WaitEpochOver(options.epoch, false, std::min(until, Clock::now() + kAnswerPoll))) break;
    }
    if (options.answered()) return absl::OkStatus();
    if (!EpochLive(options.epoch)) return absl::UnavailableError("the connection is closed");
    if (Clock::now() >= options.deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("no complete answer from ", config_.url,
                       " before the deadline (its stream dropped and was being resumed)"));
    }
    core::LogDebug("mcp answer stream resumed", {{"server", config_.server_name},
                                                 {"last_event_id", last_event_id},
                                                 {"attempt", std::to_string(attempt)}});
    StreamResult r = GetStream(last_event_id, session_id, protocol_version, handlers, stop,
                               options.deadline, false);
    if (options.answered()) return absl::OkStatus();
    if (r.too_large) {
      return absl::ResourceExhaustedError(absl::StrCat("a message from ", config_.url, " exceeded ",
                                                       config_.max_message_bytes, " bytes"));
    }
    if (r.code == CURLE_OPERATION_TIMEDOUT) {
      return absl::DeadlineExceededError(
          absl::StrCat("no complete answer from ", config_.url,
                       " before the deadline (its stream dropped and was being resumed)"));
    }
    if (!r.last_event_id.empty()) last_event_id = r.last_event_id;
    if (r.retry_ms >= 0) base = std::chrono::milliseconds(r.retry_ms);
    if (r.code == CURLE_OK && !r.is_sse) {
      if (r.status == 404 && !session_id.empty()) {
        return SessionExpiredError(
            absl::StrCat(config_.url, " answered 404 to session ", session_id));
      }
      // Busy or briefly failing: try again. Anything else means the server
      // cannot resume this stream.
      if (r.status != 409 && r.status != 429 && r.status < 500) {
        return absl::UnavailableError(
            absl::StrCat("the answer stream from ", config_.url,
                         " dropped before the answer and could not be resumed: ",
                         StatusFromHttp(r.status, config_.url, r.body).message()));
      }
    }
    fruitless = r.events > 0 ? 0 : fruitless + 1;
  }
}

void HttpTransport::Listen(uint64_t epoch) {
  absl::MutexLock listener_lock(&listener_mu_);
  {
    absl::MutexLock lock(&mu_);
    if (!open_ || epoch != epoch_) return;
    if (listener_.joinable()) return;  // already listening for this epoch
    listener_stop_ = false;
  }
  listener_ = std::thread([this, epoch] { RunListener(epoch); });
}

void HttpTransport::StopListener() {
  absl::MutexLock listener_lock(&listener_mu_);
  {
    absl::MutexLock lock(&mu_);
    listener_stop_ = true;
    if (listener_multi_ != nullptr) curl_multi_wakeup(static_cast<CURLM*>(listener_multi_));
  }
  listener_cv_.SignalAll();
  if (listener_.joinable()) listener_.join();
}

void HttpTransport::RunListener(uint64_t epoch) {
  std::shared_ptr<const TransportHandlers> handlers;
  std::string session_id;
  std::string protocol_version;
  {
    absl::MutexLock lock(&mu_);
    if (!open_ || epoch != epoch_ || listener_stop_) return;
    handlers = handlers_;
    session_id = session_id_;
    protocol_version = protocol_version_;
  }
  const std::function<bool()> stop = [this, epoch] {
    absl::MutexLock lock(&mu_);
    return listener_stop_ || !open_ || epoch != epoch_;
  };
  std::string last_event_id;
  std::chrono::milliseconds base = config_.reconnect_backoff;
  bool streamed_once = false;
  bool warned = false;
  int fruitless = 0;
  for (;;) {
    StreamResult r = GetStream(last_event_id, session_id, protocol_version, *handlers, stop,
                               Clock::time_point::max(), true);
    if (r.stopped || stop()) return;
    if (r.too_large) {
      // A reconnection would have the same event replayed.
      core::LogError("mcp GET stream given up: an event exceeded max_message_bytes",
                     {{"server", config_.server_name},
                      {"max_message_bytes", std::to_string(config_.max_message_bytes)}});
      return;
    }
    if (!r.last_event_id.empty()) last_event_id = r.last_event_id;
    if (r.retry_ms >= 0) base = std::chrono::milliseconds(r.retry_ms);
    if (r.is_sse) {
      core::LogDebug("mcp GET stream ended; reopening it",
                     {{"server", config_.server_name}, {"last_event_id", last_event_id}});
      streamed_once = true;
      warned = false;
    } else if (r.code == CURLE_OK) {
      if (r.status == 405 || (r.status == 404 && !streamed_once) ||
          (r.status >= 200 && r.status < 300)) {
        // 405 is the spec's way to say "no GET stream here"; a first 404 or
        // an answer that is no event stream say the same less politely.
        core::LogInfo("mcp server offers no GET stream",
                      {{"server", config_.server_name}, {"status", std::to_string(r.status)}});
        return;
      }
      if (r.status == 404 && !session_id.empty()) {
        core::LogInfo("mcp server forgot the session (GET stream)",
                      {{"server", config_.server_name}, {"url", config_.url}});
        handlers->on_closed(SessionExpiredError(
            absl::StrCat(config_.url, " answered 404 to the GET stream of session ", session_id)));
        return;
      }
      if (r.status >= 400 && r.status < 500 && r.status != 408 && r.status != 409 &&
          r.status != 429) {
        // Asking again the same way would be refused the same way.
        core::LogWarn(
            "mcp GET stream refused; calls go on without it",
            {{"server", config_.server_name},
             {"error", std::string(StatusFromHttp(r.status, config_.url, r.body).message())}});
        return;
      }
    }
    if (!r.is_sse) {
      core::Log(
          warned ? core::LogLevel::kDebug : core::LogLevel::kWarn,
          "mcp GET stream cannot be opened; retrying",
          {{"server", config_.server_name},
           {"error", r.code == CURLE_OK
                         ? std::string(StatusFromHttp(r.status, config_.url, r.body).message())
                         : r.error}});
      warned = true;
    }
    fruitless = r.events > 0 ? 0 : fruitless + 1;
    const auto delay = ReconnectDelay(base, config_.reconnect_backoff_max, fruitless - 1);
    if (WaitEpochOver(epoch, true, Clock::now() + delay)) return;
  }
}

}  // namespace omniforge::mcp
