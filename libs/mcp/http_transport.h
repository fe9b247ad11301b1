// The MCP Streamable HTTP transport over libcurl: every message is a POST to
// the server's MCP endpoint, answered with JSON or with an SSE stream that
// carries the server's notifications and requests before the response.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
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
};

// Keeps the Mcp-Session-Id the server assigned in its initialize answer and
// sends it, with MCP-Protocol-Version, on every later request; a 404 to a
// request carrying it is reported as SessionExpiredError. Close DELETEs the
// session. The optional GET stream for unsolicited server messages is not
// opened: answers and their notifications arrive on the POSTs.
// Thread-safe; concurrent Sends use separate connections, idle ones are kept.
class HttpTransport final : public McpTransport {
 public:
  explicit HttpTransport(HttpServerConfig config);
  ~HttpTransport() override;

  absl::Status Open(TransportHandlers handlers, uint64_t epoch) override;
  absl::Status Send(std::string_view message, const SendOptions& options) override;
  void SetProtocolVersion(const std::string& version) override;
  bool AnswersWithinSend() const override { return true; }
  void Close() override;
  std::string Describe() const override { return config_.url; }

  // The session id the server assigned; empty when none (tests).
  std::string session_id() const;

 private:
  class HandlePool;
  void DeleteSession(const std::string& session_id, const std::string& protocol_version);

  const HttpServerConfig config_;
  std::unique_ptr<HandlePool> pool_;

  mutable std::mutex mu_;
  bool open_ = false;
  uint64_t epoch_ = 0;
  std::shared_ptr<const TransportHandlers> handlers_;
  std::string session_id_;
  std::string protocol_version_;
};

}  // namespace omniforge::mcp
