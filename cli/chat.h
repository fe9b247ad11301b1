// `omniforge chat`: talk to the orchestrator's ChatService and show each step
// of a turn as it streams in.
#pragma once

#include <string>

namespace omniforge::cli {

struct ChatOptions {
  std::string server = "127.0.0.1:50050";
  std::string api_key;
  std::string conversation_id;  // empty: a new conversation
  std::string message;          // empty: read messages from stdin, one per line
  std::string context = "global";
  bool json = false;
  int timeout_s = 120;
};

// Runs one turn (with a message) or a session (one turn per line of stdin).
// Returns 0, or 1 when a turn failed.
int RunChat(const ChatOptions& options);

}  // namespace omniforge::cli
