// The MCP Streamable HTTP transport over libcurl: every message is a POST to
// the server's MCP endpoint, answered with JSON or with an SSE stream that
// carries the server's notifications and requests before the response; a
// GET stream carries what the server sends on its own.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "libs/mcp/transport.h"

namespace omniforge::mcp {

struct HttpServerConfig {
  std::string server_name;  // for logs
  std::string url;          // the MCP endpoint, e.g. http://127.0.0.1:3001/mcp
  // Sent on every request (e.g. Authorization).
  std::vector<std::pair<std::string, std::string>> headers;
  std::chrono::milliseconds connect_timeout{10'000};
  // A larger JSON body or SSE event fails its request (RESOURCE_EXHAUSTED).
  size_t max_message_bytes = 16u << 20;
  // The wait before reconnecting a dropped SSE stream, doubled after each
  // attempt that brought no event, up to the max. A server's `retry:`
  // replaces the first value.
  std::chrono::milliseconds reconnect_backoff{250};
  std::chrono::milliseconds reconnect_backoff_max{10'000};
};

// Keeps the Mcp-Session-Id the server assigned in its initialize answer and
// sends it, with MCP-Protocol-Version, on every later request; a 404 to a
// request carrying it is reported as SessionExpiredError. Close DELETEs the
// session.
//
// After the handshake (Listen) a thread keeps a GET stream open for the
// requests and notifications the server sends on its own; a 405 means the
// server offers none (other client errors end it too; server errors and
// broken connections are retried). Streams are resumable (MCP "Resumability and
// Redelivery"): when the GET stream, or a POST's answer stream before its
// answer, drops, it is reopened with GET and Last-Event-ID set to the id of
// the last event received, so the server replays what was missed and
// nothing arrives twice; attempts back off, a POST's until its deadline.
// A server that answers the GET stream's reconnection with 404 forgot the
// session: on_closed gets a SessionExpiredError.
// Thread-safe; concurrent Sends use separate connections, idle ones are kept.
class HttpTransport final : public McpTransport {
 public:
  explicit HttpTransport(HttpServerConfig config);
  ~HttpTransport() override;

  absl::Status Open(TransportHandlers handlers, uint64_t epoch) override;
  absl::Status Send(std::string_view message, const SendOptions& options) override;
  void SetProtocolVersion(const std::string& version) override;
  void Listen(uint64_t epoch) override;
  bool AnswersWithinSend() const override { return true; }
  void Close() override;
  std::string Describe() const override { return config_.url; }

  // The session id the server assigned; empty when none (tests).
  std::string session_id() const;

 private:
  class HandlePool;
  struct StreamResult;
  void DeleteSession(const std::string& session_id, const std::string& protocol_version);
  // One GET of an SSE stream, delivering its events until it ends, `stop`
  // says so (checked between reads and after each event) or `deadline`.
  StreamResult GetStream(const std::string& last_event_id, const std::string& session_id,
                         const std::string& protocol_version, const TransportHandlers& handlers,
                         const std::function<bool()>& stop, Clock::time_point deadline,
                         bool wakeable);
  // Reopens a POST's answer stream after it dropped, until the answer came.
  absl::Status ResumeAnswer(std::string last_event_id, long long retry_ms,
                            const std::string& session_id, const std::string& protocol_version,
                            const TransportHandlers& handlers, const SendOptions& options);
  void RunListener(uint64_t epoch);
  void StopListener();
  bool EpochLive(uint64_t epoch) const;
  // Waits until `until` or until `epoch` is over (the transport closed or
  // reopened; with `listener`, also the listener told to stop). True when it
  // is over.
  bool WaitEpochOver(uint64_t epoch, bool listener, Clock::time_point until);

  const HttpServerConfig config_;
  std::unique_ptr<HandlePool> pool_;

  mutable absl::Mutex mu_;
  bool open_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;
  std::shared_ptr<const TransportHandlers> handlers_ ABSL_GUARDED_BY(mu_);
  std::string session_id_ ABSL_GUARDED_BY(mu_);
  std::string protocol_version_ ABSL_GUARDED_BY(mu_);

  // The GET stream's thread. StopListener sets listener_stop_, wakes its
  // wait and its transfer (listener_multi_), and joins it.
  absl::Mutex listener_mu_ ABSL_ACQUIRED_BEFORE(mu_);  // serializes starting and stopping it
  std::thread listener_ ABSL_GUARDED_BY(listener_mu_);
  bool listener_stop_ ABSL_GUARDED_BY(mu_) = false;
  void* listener_multi_ ABSL_GUARDED_BY(mu_) = nullptr;  // CURLM* of the transfer under way
  absl::CondVar listener_cv_;                            // waited on with mu_ held
};

}  // namespace omniforge::mcp
