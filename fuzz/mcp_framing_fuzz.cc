// MCP JSON-RPC framing (libs/mcp): a server's stdout, cut into chunks, goes
// through the stdio line framing (stdio_lines.h), and every line it passes
// on through ParseIncoming (json_rpc.h), as StdioTransport and McpSession
// do. Checks that the cuts change nothing, that a line passed on is within
// the size limit, holds no LF and is not blank (a CR before the LF is
// removed, one more is JSON whitespace), and that every message parsed can
// be encoded again and parsed back as the same kind.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "libs/core/logging.h"
#include "libs/mcp/json_rpc.h"
#include "libs/mcp/stdio_lines.h"

namespace {

using omniforge::mcp::IncomingMessage;

// Small enough that the fuzzer reaches the too-long-line path.
constexpr size_t kMaxLineBytes = 512;

std::vector<std::string> Lines(std::string_view stream, size_t chunk) {
  std::vector<std::string> lines;
  omniforge::mcp::StdoutLines framing("fuzz", kMaxLineBytes, [&](std::string_view line) {
    OMNIFORGE_FUZZ_CHECK(line.size() <= kMaxLineBytes);
    OMNIFORGE_FUZZ_CHECK(line.find('\n') == std::string_view::npos);
    OMNIFORGE_FUZZ_CHECK(line.find_first_not_of(" \t") != std::string_view::npos);
    lines.emplace_back(line);
  });
  for (size_t pos = 0; pos < stream.size(); pos += chunk) framing.Take(stream.substr(pos, chunk));
  return lines;
}

// The message encoded as a client or server would send it.
std::string Encode(const IncomingMessage& message) {
  switch (message.kind) {
    case IncomingMessage::Kind::kRequest:
      return nlohmann::json{{"jsonrpc", "2.0"},
                            {"id", message.id},
                            {"method", message.method},
                            {"params", message.params}}
          .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    case IncomingMessage::Kind::kNotification:
      return omniforge::mcp::EncodeNotification(message.method, message.params);
    case IncomingMessage::Kind::kResult:
      return omniforge::mcp::EncodeResult(message.id, message.result);
    case IncomingMessage::Kind::kError:
      return omniforge::mcp::EncodeError(message.id, message.error_code, message.error_message);
  }
  return {};
}

void CheckMessages(std::string_view line) {
  auto messages = omniforge::mcp::ParseIncoming(line);
  if (!messages.ok()) {
    OMNIFORGE_FUZZ_CHECK(messages.status().code() == absl::StatusCode::kInvalidArgument);
    return;
  }
  OMNIFORGE_FUZZ_CHECK(!messages->empty());
  for (const IncomingMessage& message : *messages) {
    const auto again = omniforge::mcp::ParseIncoming(Encode(message));
    OMNIFORGE_FUZZ_CHECK(again.ok() && again->size() == 1);
    OMNIFORGE_FUZZ_CHECK(again->front().kind == message.kind);
    if (message.kind == IncomingMessage::Kind::kError) {
      const absl::Status status = omniforge::mcp::StatusFromJsonRpcError(
          "fuzz", message.method, message.error_code, message.error_message);
      OMNIFORGE_FUZZ_CHECK(!status.ok());
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = [] {
    omniforge::core::SetLogSinkForTesting([](const std::string&) {});
    return true;
  }();
  (void)quiet;
  const std::string_view stream(reinterpret_cast<const char*>(data), size);
  const std::vector<std::string> whole = Lines(stream, stream.size() + 1);
  OMNIFORGE_FUZZ_CHECK(Lines(stream, 1) == whole);
  OMNIFORGE_FUZZ_CHECK(Lines(stream, 1 + size % 61) == whole);
  for (const std::string& line : whole) CheckMessages(line);
  return 0;
}
