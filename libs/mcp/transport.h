// The channel under an MCP session: stdio to a spawned process, Streamable
// HTTP to a URL, or an in-process script in tests. A transport moves JSON-RPC
// message text; the session (session.h) gives it meaning.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace omniforge::mcp {

using Clock = std::chrono::steady_clock;

// HTTP header names and values, in the order sent.
using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

// Receives what a transport hears. Both may run on a transport's own thread
// (stdio) or inside Send on the caller's thread (HTTP); neither may call
// Open or Close of the same transport.
struct TransportHandlers {
  // One message, or a JSON array of messages, as the server sent it.
  std::function<void(std::string_view message)> on_message;
  // The connection ended without Close (the process exited, its stdout
  // closed): UNAVAILABLE with the reason.
  std::function<void(const absl::Status& reason)> on_closed;
};

struct SendOptions {
  Clock::time_point deadline = Clock::time_point::max();
  bool is_initialize = false;  // HTTP: sent without a session id; the answer may set one
  // The Open this message belongs to: a message from before the latest Open
  // is refused (UNAVAILABLE) instead of reaching a new server that never
  // saw its initialize.
  uint64_t epoch = 0;
  // For a request: whether its answer has arrived (thread-safe). HTTP asks
  // it when an answer stream ends, to resume a stream that dropped before
  // the answer; unset for a message that expects no answer.
  std::function<bool()> answered;
  // Sent with this message only, after the configured headers (HTTP: the
  // caller's identity headers); other transports ignore them.
  HttpHeaders headers;
};

class McpTransport {
 public:
  virtual ~McpTransport() = default;

  // Opens a new connection (stdio: spawns the server; HTTP: forgets any
  // session, so the next initialize starts a new one), closing an earlier
  // one first. UNAVAILABLE when the server cannot be started.
  virtual absl::Status Open(TransportHandlers handlers, uint64_t epoch) = 0;

  // Sends one message. HTTP delivers whatever the server answers on this
  // exchange to on_message before returning. Errors: DEADLINE_EXCEEDED,
  // UNAVAILABLE (not open, process gone, unreachable), a session-expired
  // status (IsSessionExpired) when an HTTP server forgot the session, or the
  // code matching an HTTP error status. Thread-safe.
  virtual absl::Status Send(std::string_view message, const SendOptions& options) = 0;

  // The protocol version negotiated by initialize (HTTP sends it on every
  // later request as MCP-Protocol-Version).
  virtual void SetProtocolVersion(const std::string& version) = 0;

  // The handshake of connection `epoch` is complete: from now on the server
  // may send requests and notifications of its own. HTTP opens its GET
  // stream for them; transports that hear everything anyway (stdio) do
  // nothing. Messages arrive through the handlers of that Open.
  virtual void Listen(uint64_t /*epoch*/) {}

  // Whether the answer to a request always arrives within Send (HTTP), so a
  // Send that returned OK without one means it will never come.
  virtual bool AnswersWithinSend() const = 0;

  // Ends the connection gracefully (stdio: close stdin, wait, SIGTERM,
  // SIGKILL; HTTP: DELETE the session). No handler runs after it returns.
  virtual void Close() = 0;

  // For logs and errors: the command or URL.
  virtual std::string Describe() const = 0;
};

// The status an HTTP transport returns when the server answered 404 to a
// request carrying its session id: the session ended and must be
// re-initialized.
absl::Status SessionExpiredError(std::string_view detail);
bool IsSessionExpired(const absl::Status& status);

}  // namespace omniforge::mcp
