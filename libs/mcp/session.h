// An MCP client session over one transport: the initialize handshake and
// version negotiation, requests with ids and deadlines, cancellation of
// requests that ran out of time, progress routing, answers to the server's
// own requests, and reconnection when the server went away.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "libs/mcp/transport.h"
#include "libs/mcp/types.h"
#include "nlohmann/json.hpp"

namespace omniforge::mcp {

struct SessionOptions {
  std::string server_name = "server";  // in logs and error messages
  std::string client_name = "omniforge";
  std::string client_version = "0.1.0";
  // Upper bound of any request; a caller's deadline can only shorten it.
  std::chrono::milliseconds request_timeout{60'000};
  // Upper bound of starting the server and the initialize handshake.
  std::chrono::milliseconds initialize_timeout{30'000};
  // Restarts in a row without one successful request before the session
  // gives up: calls then fail at once with UNAVAILABLE, and one more restart
  // is tried after each `restart_backoff_max` (never when max_restarts is 0).
  int max_restarts = 5;
  // The first restart after a healthy run is immediate; each further one in
  // a row waits twice as long as the one before, from `restart_backoff` up
  // to `restart_backoff_max`.
  std::chrono::milliseconds restart_backoff{250};
  std::chrono::milliseconds restart_backoff_max{10'000};
  // How long a fire-and-forget message (a cancellation, an answer to a
  // server's request) may take to send.
  std::chrono::milliseconds notification_timeout{5'000};
};

struct RequestOptions {
  Clock::time_point deadline = Clock::time_point::max();
  // Receives notifications/progress for this request. Runs on a transport
  // thread, never after Request returned; it must not block for long.
  ProgressCallback on_progress;
  // Sent with this request only (HTTP; see SendOptions::headers).
  HttpHeaders headers;
};

// Thread-safe: any number of requests may run at once over one connection.
class McpSession final {
 public:
  McpSession(std::unique_ptr<McpTransport> transport, SessionOptions options);
  ~McpSession();  // Shutdown()

  McpSession(const McpSession&) = delete;
  McpSession& operator=(const McpSession&) = delete;

  // Starts the server and initializes it unless that is done. Errors as for
  // Request.
  absl::Status Connect(Clock::time_point deadline);

  // Sends `method` with `params` (an object, or null for none) and returns
  // the result. Connects first (restarting a server that went away).
  // Errors: DEADLINE_EXCEEDED (notifications/cancelled was sent),
  // UNAVAILABLE (cannot start or reach the server, it went away during the
  // request, or restarts were given up), FAILED_PRECONDITION (the server
  // speaks no protocol version this client supports), or the code mapped
  // from a JSON-RPC error (json_rpc.h). An HTTP session the server forgot is
  // re-initialized once and the request retried.
  absl::StatusOr<nlohmann::json> Request(std::string_view method, const nlohmann::json& params,
                                         const RequestOptions& options);

  // Fails pending requests (UNAVAILABLE) and closes the transport. Later
  // requests fail with UNAVAILABLE. Idempotent.
  void Shutdown();

  // The initialize result of the current connection; nullopt before one.
  std::optional<ServerInfo> server_info() const;

  // Called (on a transport thread) when the server sends
  // notifications/tools/list_changed, and when an HTTP server forgot the
  // session while nothing was asked of it (its tools may be others now).
  void SetToolsChangedListener(std::function<void()> listener);

  // Restarts so far (each reconnection after the first connection).
  int restarts() const;

  const SessionOptions& options() const { return options_; }

 private:
  struct Pending;
  enum class State { kIdle, kConnecting, kReady, kFailed, kShutdown };

  // How a request sent ended, as seen with mu_ held.
  enum class Ending { kAnswered, kCancelled, kTimedOut, kNotAnswered };

  // The epoch of a ready session: waits while another caller connects or a
  // restart backs off, else connects (and initializes) itself.
  absl::StatusOr<uint64_t> EnsureReady(Clock::time_point deadline) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status ShutDownError() const;
  // Why no restart is tried before the cool-down after too many in a row.
  absl::Status GivenUpErrorLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Too many restarts in a row: no more until the cool-down is over.
  void GiveUpLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // This caller connects: the new epoch, the state connecting.
  uint64_t StartConnectLocked(bool restart) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records how the handshake of `epoch` went; the epoch when it is ready.
  absl::StatusOr<uint64_t> EndConnectLocked(uint64_t epoch, absl::Status status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Handshake(uint64_t epoch, Clock::time_point deadline);
  absl::StatusOr<nlohmann::json> SendRequest(uint64_t epoch, std::string_view method,
                                             nlohmann::json params, Clock::time_point deadline,
                                             const RequestOptions& options, bool is_initialize)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Waits for the answer to a request sent (`sent`: how the send went) until
  // `deadline`, unless it cannot come or the caller's work was cancelled.
  Ending AwaitAnswerLocked(Pending& pending, const absl::Status& sent, Clock::time_point deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Tells the server request `id` is given up, for `reason`.
  void PostCancelled(uint64_t epoch, int64_t id, const char* reason) ABSL_LOCKS_EXCLUDED(mu_);
  // The error of a request whose answer cannot come: the send failed, or
  // the answer stream ended without it.
  absl::Status NotAnsweredError(uint64_t epoch, int64_t id, std::string_view method,
                                const absl::Status& sent, bool is_initialize)
      ABSL_LOCKS_EXCLUDED(mu_);
  void OnMessage(uint64_t epoch, std::string_view text) ABSL_LOCKS_EXCLUDED(mu_);
  void OnClosed(uint64_t epoch, const absl::Status& reason) ABSL_LOCKS_EXCLUDED(mu_);
  // The server went away (not an expired HTTP session): fails the requests
  // waiting and backs off before the next start.
  void ServerWentAwayLocked(const absl::Status& reason) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HandleNotification(const std::string& method, const nlohmann::json& params)
      ABSL_LOCKS_EXCLUDED(mu_);
  void Post(uint64_t epoch, std::string message) ABSL_LOCKS_EXCLUDED(mu_);
  // CANCELLED for `method` of work its caller cancelled
  // (core::CallCancellation()).
  absl::Status CancelledByCaller(std::string_view method) const;
  void RunOutbox() ABSL_LOCKS_EXCLUDED(mu_);
  void FailPendingLocked(const absl::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Clock::duration BackoffLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const SessionOptions options_;
  const std::unique_ptr<McpTransport> transport_;

  mutable absl::Mutex mu_;
  absl::CondVar state_cv_;
  State state_ ABSL_GUARDED_BY(mu_) = State::kIdle;
  uint64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;  // bumped by every Open
  bool opened_once_ ABSL_GUARDED_BY(mu_) = false;
  bool connect_in_progress_ ABSL_GUARDED_BY(mu_) = false;
  // The HTTP session expired: no backoff, not a restart.
  bool reinitialize_now_ ABSL_GUARDED_BY(mu_) = false;
  int restarts_in_a_row_ ABSL_GUARDED_BY(mu_) = 0;
  int restarts_total_ ABSL_GUARDED_BY(mu_) = 0;
  Clock::time_point next_restart_at_ ABSL_GUARDED_BY(mu_){};
  absl::Status last_failure_ ABSL_GUARDED_BY(mu_);
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<int64_t, std::shared_ptr<Pending>> pending_ ABSL_GUARDED_BY(mu_);
  std::optional<ServerInfo> server_info_ ABSL_GUARDED_BY(mu_);
  std::function<void()> tools_changed_ ABSL_GUARDED_BY(mu_);

  // Fire-and-forget messages, sent in order by one thread so that no
  // transport thread ever waits on a write.
  absl::CondVar outbox_cv_;
  std::deque<std::pair<uint64_t, std::string>> outbox_ ABSL_GUARDED_BY(mu_);
  bool outbox_stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread outbox_thread_;
};

}  // namespace omniforge::mcp
