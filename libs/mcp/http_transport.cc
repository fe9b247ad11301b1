#include "libs/mcp/http_transport.h"

#include <curl/curl.h>

#include <algorithm>
#include <mutex>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "libs/core/logging.h"
#include "libs/llm/sse.h"
#include "libs/mcp/json_rpc.h"

namespace omniforge::mcp {
namespace {

constexpr size_t kMaxIdleHandles = 8;
constexpr std::chrono::milliseconds kDeleteTimeout{2'000};

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
};

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* exchange = static_cast<Exchange*>(user);
  const absl::string_view line(data, size * count);
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
  if (!exchange->headers_done) {
    exchange->headers_done = true;
    exchange->is_sse = exchange->status >= 200 && exchange->status < 300 &&
                       absl::StartsWith(exchange->content_type, "text/event-stream");
    if (exchange->is_sse) {
      exchange->sse.emplace([exchange](const llm::SseEvent& event) {
        if ((event.type == "message" || event.type.empty()) && !event.data.empty()) {
          exchange->handlers->on_message(event.data);
        }
        return true;
      });
    }
  }
  if (exchange->is_sse) {
    exchange->sse->Feed(bytes);
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

}  // namespace

class HttpTransport::HandlePool {
 public:
  ~HandlePool() {
    for (CURL* handle : idle_) curl_easy_cleanup(handle);
  }
  CURL* Acquire() {
    {
      std::lock_guard lock(mu_);
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
    std::lock_guard lock(mu_);
    if (idle_.size() < kMaxIdleHandles) {
      idle_.push_back(handle);
      return;
    }
    curl_easy_cleanup(handle);
  }

 private:
  std::mutex mu_;
  std::vector<CURL*> idle_;
};

HttpTransport::HttpTransport(HttpServerConfig config)
    : config_(std::move(config)), pool_(std::make_unique<HandlePool>()) {
  GlobalInit();
}

HttpTransport::~HttpTransport() { Close(); }

absl::Status HttpTransport::Open(TransportHandlers handlers, uint64_t epoch) {
  std::string old_session;
  std::string old_version;
  {
    std::lock_guard lock(mu_);
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
  std::lock_guard lock(mu_);
  protocol_version_ = version;
}

std::string HttpTransport::session_id() const {
  std::lock_guard lock(mu_);
  return session_id_;
}

absl::Status HttpTransport::Send(std::string_view message, const SendOptions& options) {
  std::shared_ptr<const TransportHandlers> handlers;
  std::string session_id;
  std::string protocol_version;
  {
    std::lock_guard lock(mu_);
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
  if (!session_id.empty()) headers.Add("Mcp-Session-Id: " + session_id);
  if (!protocol_version.empty()) headers.Add("MCP-Protocol-Version: " + protocol_version);
  for (const auto& [name, value] : config_.headers) headers.Add(absl::StrCat(name, ": ", value));

  Exchange exchange;
  exchange.max_bytes = config_.max_message_bytes;
  exchange.handlers = handlers.get();
  char error_text[CURL_ERROR_SIZE] = {0};

  CURL* curl = pool_->Acquire();
  if (curl == nullptr) return absl::InternalError("curl_easy_init failed");
  curl_easy_setopt(curl, CURLOPT_URL, config_.url.c_str());
  curl_easy_setopt(curl, CURLOPT_POST, 1L);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, message.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(message.size()));
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.list);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &exchange);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &exchange);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_text);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
  const long connect_ms =
      static_cast<long>(bounded ? std::min<int64_t>(left.count(), config_.connect_timeout.count())
                                : config_.connect_timeout.count());
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
  if (bounded) curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(left.count()));
  const CURLcode code = curl_easy_perform(curl);
  pool_->Release(curl);

  if (exchange.too_large) {
    return absl::ResourceExhaustedError(absl::StrCat("a message from ", config_.url, " exceeded ",
                                                     config_.max_message_bytes, " bytes"));
  }
  if (code == CURLE_OPERATION_TIMEDOUT) {
    return absl::DeadlineExceededError(
        absl::StrCat("no complete answer from ", config_.url, " before the deadline"));
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
      std::lock_guard lock(mu_);
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
  curl_easy_setopt(curl, CURLOPT_URL, config_.url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, "DELETE");
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.list);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &exchange);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &exchange);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(kDeleteTimeout.count()));
  const CURLcode code = curl_easy_perform(curl);
  pool_->Release(curl);
  core::LogDebug("mcp session deleted",
                 {{"server", config_.server_name},
                  {"status", code == CURLE_OK ? std::to_string(exchange.status)
                                              : std::string(curl_easy_strerror(code))}});
}

void HttpTransport::Close() {
  std::string session_id;
  std::string protocol_version;
  {
    std::lock_guard lock(mu_);
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

}  // namespace omniforge::mcp
