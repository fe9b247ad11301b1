// HttpTransport on libcurl: HTTP/1.1 POSTs over kept-alive connections, for
// the providers' calls. Connections stay open between calls so a call to a
// nearby model server (or the fake provider) pays no connection set-up.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string_view>

#include "absl/status/status.h"
#include "libs/llm/http_transport.h"

namespace omniforge::llm {

// Thread-safe. Each call borrows an easy handle from a pool and returns it
// afterwards with its connection cache, so a later call reuses the
// connection; concurrent calls use separate handles (and connections).
class CurlTransport final : public HttpTransport {
 public:
  // Keeps at most `max_idle_handles` idle handles (and their connections);
  // more concurrent calls than that still run, their handles are freed after.
  explicit CurlTransport(size_t max_idle_handles = 32);
  ~CurlTransport() override;

  CurlTransport(const CurlTransport&) = delete;
  CurlTransport& operator=(const CurlTransport&) = delete;

  // See HttpTransport. The deadline becomes curl's total timeout (kTimeout
  // when it passes, or has already passed before sending); the connect
  // timeout is capped by it, and running out of it first is kConnection (the
  // host is unreachable). request.cancelled is polled about once a second
  // while nothing arrives, and as data does; it turning true is kCancelled.
  // Refused, unresolvable, reset and cut connections are
  // kConnection; so is anything else curl reports, with its error text. A
  // header with a line break is kInvalidRequest, nothing sent. on_head runs
  // once before the first body byte, or after the exchange when the body is
  // empty. An exception thrown by a callback aborts the exchange and
  // propagates from Post.
  absl::Status Post(const HttpRequest& request,
                    const std::function<void(const HttpResponseHead&)>& on_head,
                    const std::function<bool(std::string_view)>& on_body) override;

 private:
  class HandlePool;  // keeps curl's headers out of this one

  std::unique_ptr<HandlePool> pool_;
};

}  // namespace omniforge::llm
