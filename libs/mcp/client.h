// A client for one MCP server's tools: tools/list with pagination and
// tools/call with progress, over a session (session.h) that keeps the server
// connected.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libs/core/identity.h"
#include "libs/mcp/transport.h"
#include "libs/mcp/types.h"

namespace omniforge::mcp {

class McpSession;
struct SessionOptions;

struct CallOptions {
  // When the caller stops waiting. Unset: the call deadline of the request
  // being served (core::CallDeadline), if any. The server's configured
  // timeout caps either.
  std::optional<std::chrono::system_clock::time_point> deadline;
  // Receives the server's progress reports for this call (tools/call only).
  // Runs on a transport thread, never after the call returned.
  ProgressCallback on_progress;
  // Whom the call is for. The registry (registry.h) picks the tenant's
  // session of a per_tenant server and puts the identity into the headers
  // the server's `identity_headers` name; McpClient itself ignores it.
  core::Identity caller;
  // Sent with the request (HTTP only), after the configured headers.
  HttpHeaders headers;
};

// Thread-safe; calls may run concurrently.
class McpClient final {
 public:
  McpClient(std::unique_ptr<McpTransport> transport, const SessionOptions& options);
  ~McpClient();

  McpClient(const McpClient&) = delete;
  McpClient& operator=(const McpClient&) = delete;

  // Starts and initializes the server now rather than at the first call.
  absl::Status Connect(const CallOptions& options = {});

  // Every tool the server offers, following nextCursor to the last page.
  // DATA_LOSS when the server sends a malformed page or repeats a cursor;
  // otherwise the errors of McpSession::Request.
  absl::StatusOr<std::vector<Tool>> ListTools(const CallOptions& options = {});

  // Calls `name` with `arguments_json` (a JSON object; empty means {}).
  // INVALID_ARGUMENT, nothing sent, when the arguments are not a JSON object;
  // DATA_LOSS when the result is malformed; otherwise the errors of
  // McpSession::Request (DEADLINE_EXCEEDED, UNAVAILABLE, INVALID_ARGUMENT for
  // a JSON-RPC invalid-params error, ...). A tool that failed is an OK result
  // with is_error set.
  absl::StatusOr<CallToolResult> CallTool(std::string_view name, std::string_view arguments_json,
                                          const CallOptions& options = {});

  // Sends ping and waits for the answer.
  absl::Status Ping(const CallOptions& options = {});

  // Closes the connection; later calls fail with UNAVAILABLE.
  void Shutdown();

  // The initialize answer of the current connection, nullopt before one.
  std::optional<ServerInfo> server_info() const;
  // Called when the server reports that its tool list changed, and when an
  // HTTP server forgot the session (it was restarted; its tools may differ).
  void SetToolsChangedListener(std::function<void()> listener);
  // Restarts of the server so far.
  int restarts() const;

 private:
  std::unique_ptr<McpSession> session_;
};

// Decoders, exposed for tests: one tools/list entry, one tools/call result
// (JSON text). DATA_LOSS when the value does not have the required shape.
absl::StatusOr<Tool> ParseTool(std::string_view json_text);
absl::StatusOr<CallToolResult> ParseCallToolResult(std::string_view json_text);

}  // namespace omniforge::mcp
