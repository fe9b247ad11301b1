// JSON-RPC 2.0 as MCP uses it: encoding the messages a client sends,
// classifying what a server sends, and turning JSON-RPC errors into
// absl::Status with the most specific code.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace omniforge::mcp {

// Protocol revisions this client speaks, newest first. The first is offered
// in initialize; a server answering with any of them is accepted.
inline constexpr const char* kSupportedProtocolVersions[] = {"2025-06-18", "2025-03-26",
                                                             "2024-11-05"};
bool IsSupportedProtocolVersion(std::string_view version);

// Standard JSON-RPC error codes.
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
// MCP: a resource the request named does not exist.
inline constexpr int kResourceNotFound = -32002;

std::string EncodeRequest(int64_t id, std::string_view method, const nlohmann::json& params);
std::string EncodeNotification(std::string_view method, const nlohmann::json& params);
std::string EncodeResult(const nlohmann::json& id, const nlohmann::json& result);
std::string EncodeError(const nlohmann::json& id, int code, std::string_view message);

// One message received from a server.
// NOLINTNEXTLINE(bugprone-exception-escape): ~nlohmann::json may allocate (not ours)
struct IncomingMessage {
  enum class Kind { kRequest, kNotification, kResult, kError };
  Kind kind = Kind::kNotification;
  nlohmann::json id;      // requests and responses
  std::string method;     // requests and notifications
  nlohmann::json params;  // requests and notifications; null when absent
  nlohmann::json result;  // kResult
  int error_code = 0;     // kError
  std::string error_message;
  nlohmann::json error_data;
};

// Parses one line or body: a single message or a batch (array). Returns
// INVALID_ARGUMENT for text that is not JSON or not a JSON-RPC message; a
// batch with some bad elements yields the good ones and drops the rest.
absl::StatusOr<std::vector<IncomingMessage>> ParseIncoming(std::string_view text);

// The status for a JSON-RPC error answering `method`: invalid params ->
// INVALID_ARGUMENT, method not found -> UNIMPLEMENTED, resource not found ->
// NOT_FOUND, internal and parse errors -> INTERNAL, anything else UNKNOWN.
// The message names the server, the method, the server's text and the code.
absl::Status StatusFromJsonRpcError(std::string_view server, std::string_view method, int code,
                                    std::string_view message);

// absl::StrCat takes absl::string_view, which is not std::string_view here.
inline absl::string_view Sv(std::string_view text) { return {text.data(), text.size()}; }

// Shortens untrusted text for a log line or an error message.
std::string Excerpt(std::string_view text, size_t max_bytes = 300);

}  // namespace omniforge::mcp
