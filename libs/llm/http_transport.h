// The HTTP seam under the providers: one POST with a streamed response body.
// The real implementation is libcurl (curl_transport.h); tests may substitute
// their own.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace omniforge::llm {

struct HttpRequest {
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // Absolute deadline (core::NowMicros() time) for the whole exchange; 0: none.
  int64_t deadline_micros = 0;
  int64_t connect_timeout_micros = 5'000'000;
  // Optional: polled while the exchange runs, also while it waits for the
  // first byte (a model may think for minutes); true aborts it.
  std::function<bool()> cancelled;
};

struct HttpResponseHead {
  int status = 0;
  // Header names lower-cased.
  std::map<std::string, std::string> headers;
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;

  // Sends `request`. `on_head` runs once when the status line and headers are
  // in; `on_body` for every piece of the body as it arrives (return false to
  // abort: the call then returns CANCELLED, as it does once
  // request.cancelled returns true). Returns OK when the body ended
  // normally, whatever the HTTP status; otherwise an LlmError of kind
  // kConnection or kTimeout (or kCancelled). Thread-safe.
  virtual absl::Status Post(const HttpRequest& request,
                            const std::function<void(const HttpResponseHead&)>& on_head,
                            const std::function<bool(std::string_view)>& on_body) = 0;
};

}  // namespace omniforge::llm
