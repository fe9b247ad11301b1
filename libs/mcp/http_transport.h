// The MCP Streamable HTTP transport over libcurl: every message is a POST to
// the server's MCP endpoint, answered with JSON or with an SSE stream that
// carries the server's notifications and requests before the response; a
// GET stream carries what the server sends on its own.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

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

  const HttpServerConfig config_;
  std::unique_ptr<HandlePool> pool_;

  mutable std::mutex mu_;
  bool open_ = false;
  uint64_t epoch_ = 0;
  std::shared_ptr<const TransportHandlers> handlers_;
  std::string session_id_;
  std::string protocol_version_;

  // The GET stream's thread. StopListener sets listener_stop_, wakes its
  // wait and its transfer (listener_multi_), and joins it.
  std::mutex listener_mu_;  // serializes starting and stopping the thread
  std::thread listener_;
  bool listener_stop_ = false;      // guarded by mu_
  void* listener_multi_ = nullptr;  // CURLM* of the transfer under way; guarded by mu_
  std::condition_variable listener_cv_;
};

}  // namespace omniforge::mcp
