#include "libs/llm/curl_transport.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "libs/core/ambient.h"
#include "libs/core/clock.h"
#include "libs/llm/errors.h"

namespace omniforge::llm {
namespace {

void InitCurlOnce() {
  // curl_global_init is not thread-safe itself; a function-local static is.
  [[maybe_unused]] static const CURLcode kInitResult = curl_global_init(CURL_GLOBAL_DEFAULT);
}

// The state one exchange shares with curl's callbacks.
struct Exchange {
  const std::function<void(const HttpResponseHead&)>* on_head = nullptr;
  const std::function<bool(std::string_view)>* on_body = nullptr;
  const std::function<bool()>* cancelled = nullptr;
  HttpResponseHead head;
  bool head_delivered = false;
  bool aborted = false;              // on_body asked to stop
  bool cancelled_by_caller = false;  // request.cancelled turned true
  std::exception_ptr exception;

  void DeliverHead() {
    if (head_delivered) return;
    head_delivered = true;
    (*on_head)(head);
  }
};

size_t OnHeaderLine(char* data, size_t size, size_t count, void* user) {
  auto* exchange = static_cast<Exchange*>(user);
  const size_t bytes = size * count;
  if (exchange->head_delivered) return bytes;  // trailers
  absl::string_view line = absl::StripTrailingAsciiWhitespace(absl::string_view(data, bytes));
  if (absl::StartsWith(line, "HTTP/")) {
    // A new response begins (after an interim 1xx): forget the last one.
    exchange->head = HttpResponseHead();
    size_t space = line.find(' ');
    if (space != absl::string_view::npos) {
      // An unreadable code leaves status 0, which no caller takes for success.
      if (!absl::SimpleAtoi(line.substr(space + 1, 3), &exchange->head.status)) {
        exchange->head.status = 0;
      }
    }
    return bytes;
  }
  size_t colon = line.find(':');
  if (colon == absl::string_view::npos) return bytes;
  std::string name = absl::AsciiStrToLower(line.substr(0, colon));
  std::string value(absl::StripAsciiWhitespace(line.substr(colon + 1)));
  auto [it, inserted] = exchange->head.headers.try_emplace(std::move(name), value);
  if (!inserted) absl::StrAppend(&it->second, ", ", value);  // repeated header: a list
  return bytes;
}

size_t OnBodyPiece(char* data, size_t size, size_t count, void* user) {
  auto* exchange = static_cast<Exchange*>(user);
  const size_t bytes = size * count;
  // Exceptions must not unwind through curl's C frames: stop the transfer
  // (any count but `bytes` does) and rethrow once curl has returned.
  try {
    exchange->DeliverHead();
    if (!(*exchange->on_body)(std::string_view(data, bytes))) {
      exchange->aborted = true;
      return 0;
    }
  } catch (...) {
    exchange->exception = std::current_exception();
    return 0;
  }
  return bytes;
}

// Curl calls this about once a second even while nothing arrives, so a
// cancelled call frees its thread without waiting for the model's answer.
int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* exchange = static_cast<Exchange*>(user);
  try {
    if ((*exchange->cancelled)()) {
      exchange->cancelled_by_caller = true;
      return 1;  // non-zero aborts the transfer
    }
  } catch (...) {
    exchange->exception = std::current_exception();
    return 1;
  }
  return 0;
}

bool HasLineBreakOrNul(std::string_view text) {
  return text.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos;
}

// Sets up `curl` to POST `request` with `headers`, its answer going to
// `exchange` and curl's error text to `error_text`.
void AimPost(CURL* curl, const HttpRequest& request, curl_slist* headers, Exchange& exchange,
             char* error_text, long timeout_ms,  // NOLINT(runtime/int): curl's type
             long connect_timeout_ms) {          // NOLINT(runtime/int)
  curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
  curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(curl, CURLOPT_POST, 1L);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeaderLine);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &exchange);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBodyPiece);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &exchange);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, connect_timeout_ms);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_text);
  if (request.cancelled) {
    exchange.cancelled = &request.cancelled;
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, OnProgress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &exchange);
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  }
}

// The error of an exchange curl could not complete (not aborted or cancelled
// by this side). `connect_timed_out`: the connection never came up.
absl::Status FailedExchangeError(const HttpRequest& request, CURLcode result,
                                 const char* error_text, bool connect_timed_out) {
  std::string detail = error_text[0] != '\0'
                           ? absl::StrCat(curl_easy_strerror(result), ": ", error_text)
                           : std::string(curl_easy_strerror(result));
  if (result == CURLE_OPERATION_TIMEDOUT && !connect_timed_out) {
    // Curl times on the monotonic clock, deadlines are wall-clock time: as
    // the two drift apart curl can give up a little before the deadline by
    // this clock, and a caller finding time left would start another attempt
    // with none. A timeout is reported once the deadline has passed. The
    // wait is capped: after a wall-clock step backwards the gap can be large,
    // and the caller would rather hear of the timeout than wait it out.
    constexpr int64_t kMaxDriftMicros = 20'000;
    if (const int64_t early = request.deadline_micros - core::NowMicros();
        request.deadline_micros != 0 && early > 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(std::min(early, kMaxDriftMicros)));
    }
    return LlmError(LlmErrorKind::kTimeout, absl::StrCat("request timed out: ", detail));
  }
  return LlmError(LlmErrorKind::kConnection, absl::StrCat("HTTP exchange failed: ", detail));
}

}  // namespace

class CurlTransport::HandlePool {
 public:
  explicit HandlePool(size_t max_idle) : max_idle_(max_idle) {}

  ~HandlePool() {
    for (CURL* handle : idle_) curl_easy_cleanup(handle);
  }

  // A handle with default options but the connections of its last use;
  // nullptr when curl cannot make one.
  CURL* Acquire() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!idle_.empty()) {
        // The most recently used handle has the connection most likely alive.
        CURL* handle = idle_.back();
        idle_.pop_back();
        curl_easy_reset(handle);
        return handle;
      }
    }
    return curl_easy_init();
  }

  void Release(CURL* handle) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (idle_.size() < max_idle_) {
        idle_.push_back(handle);
        return;
      }
    }
    curl_easy_cleanup(handle);
  }

 private:
  const size_t max_idle_;
  std::mutex mu_;
  std::vector<CURL*> idle_;
};

CurlTransport::CurlTransport(size_t max_idle_handles)
    : pool_(std::make_unique<HandlePool>(max_idle_handles)) {
  InitCurlOnce();
}

CurlTransport::~CurlTransport() = default;

absl::Status CurlTransport::Post(const HttpRequest& request,
                                 const std::function<void(const HttpResponseHead&)>& on_head,
                                 const std::function<bool(std::string_view)>& on_body) {
  // A line break would let a header value smuggle in more headers.
  for (const auto& [name, value] : request.headers) {
    if (HasLineBreakOrNul(name) || HasLineBreakOrNul(value)) {
      return LlmError(LlmErrorKind::kInvalidRequest,
                      absl::StrCat("HTTP header \"", name, "\" has a line break"));
    }
  }
  long timeout_ms = 0;  // NOLINT(runtime/int): curl's type
  if (request.deadline_micros != 0) {
    int64_t remaining = request.deadline_micros - core::NowMicros();
    if (remaining <= 0) {
      return LlmError(LlmErrorKind::kTimeout, "deadline passed before the request was sent");
    }
    timeout_ms = static_cast<long>((remaining + 999) / 1000);  // NOLINT(runtime/int)
  }
  long connect_timeout_ms =  // NOLINT(runtime/int)
      std::max<long>(1, static_cast<long>(request.connect_timeout_micros / 1000));  // NOLINT
  if (timeout_ms > 0) connect_timeout_ms = std::min(connect_timeout_ms, timeout_ms);

  CURL* curl = pool_->Acquire();
  if (curl == nullptr) return LlmError(LlmErrorKind::kConnection, "cannot create a curl handle");

  curl_slist* headers = nullptr;
  for (const auto& [name, value] : request.headers) {
    headers = curl_slist_append(headers, absl::StrCat(name, ": ", value).c_str());
  }
  // The model call's trace context (the thread's current span).
  const core::Ambient& ambient = core::CurrentAmbient();
  if (ambient.span.valid()) {
    headers = curl_slist_append(
        headers, absl::StrCat("traceparent: ", core::FormatTraceparent(ambient.span)).c_str());
    if (!ambient.tracestate.empty()) {
      headers =
          curl_slist_append(headers, absl::StrCat("tracestate: ", ambient.tracestate).c_str());
    }
  }
  // No "Expect: 100-continue" round trip before large bodies.
  headers = curl_slist_append(headers, "Expect:");

  Exchange exchange;
  exchange.on_head = &on_head;
  exchange.on_body = &on_body;
  char error_text[CURL_ERROR_SIZE] = {};
  AimPost(curl, request, headers, exchange, error_text, timeout_ms, connect_timeout_ms);

  CURLcode result = curl_easy_perform(curl);
  long request_bytes = 0;  // NOLINT(runtime/int): curl's type
  curl_easy_getinfo(curl, CURLINFO_REQUEST_SIZE, &request_bytes);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, nullptr);  // error_text dies with this frame
  curl_slist_free_all(headers);
  pool_->Release(curl);

  if (exchange.exception) std::rethrow_exception(exchange.exception);
  if (result == CURLE_OK) {
    exchange.DeliverHead();  // an empty body never reached OnBodyPiece
    return absl::OkStatus();
  }
  if (exchange.aborted) return LlmError(LlmErrorKind::kCancelled, "response aborted by receiver");
  if (exchange.cancelled_by_caller) {
    return LlmError(LlmErrorKind::kCancelled, "exchange cancelled by the caller");
  }
  // Curl reports a connect timeout as a timeout too, but an unreachable
  // host is a connection failure; only the deadline running out is a timeout.
  // Nothing sent means the connection never came up.
  const bool connect_timed_out =
      request_bytes == 0 && (timeout_ms == 0 || connect_timeout_ms < timeout_ms);
  return FailedExchangeError(request, result, error_text, connect_timed_out);
}

}  // namespace omniforge::llm
