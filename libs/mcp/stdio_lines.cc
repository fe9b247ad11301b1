#include "libs/mcp/stdio_lines.h"

#include <utility>

#include "libs/core/logging.h"

namespace omniforge::mcp {

StdoutLines::StdoutLines(std::string server, size_t max_bytes,
                         std::function<void(std::string_view)> on_message)
    : server_(std::move(server)), max_bytes_(max_bytes), on_message_(std::move(on_message)) {}

void StdoutLines::Take(std::string_view chunk) {
  while (!chunk.empty()) {
    const size_t newline = chunk.find('\n');
    const std::string_view piece = chunk.substr(0, newline);
    if (!dropping_) buffer_.append(piece);
    if (buffer_.size() > max_bytes_) {
      core::LogError("mcp server message too large; dropped",
                     {{"server", server_}, {"limit_bytes", std::to_string(max_bytes_)}});
      buffer_.clear();
      dropping_ = true;
    }
    if (newline == std::string_view::npos) return;
    chunk.remove_prefix(newline + 1);
    if (!dropping_) {
      std::string_view line = buffer_;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.find_first_not_of(" \t") != std::string_view::npos) on_message_(line);
    }
    buffer_.clear();
    dropping_ = false;
  }
}

}  // namespace omniforge::mcp
