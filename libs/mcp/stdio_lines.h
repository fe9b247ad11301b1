// The framing of the MCP stdio transport: a server writes one JSON-RPC
// message per line on its stdout. Kept apart from the process handling so
// the framing can be tested and fuzzed on its own.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace omniforge::mcp {

// Splits a server's stdout into messages, one per line, from chunks cut
// anywhere. A line's trailing CR is removed and blank lines (spaces and tabs
// only) are skipped; a line longer than `max_bytes` is dropped and logged,
// and reading goes on with the next line. Not thread-safe: one per stream.
class StdoutLines final {
 public:
  // `on_message` receives each line (valid during the call only).
  StdoutLines(std::string server, size_t max_bytes,
              std::function<void(std::string_view)> on_message);

  // Consumes the next bytes of the stream, passing on every line they end.
  void Take(std::string_view chunk);

 private:
  const std::string server_;  // for the log
  const size_t max_bytes_;
  const std::function<void(std::string_view)> on_message_;
  std::string buffer_;
  bool dropping_ = false;  // inside a line longer than max_bytes_
};

}  // namespace omniforge::mcp
