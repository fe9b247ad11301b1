// `omniforge chat`: talk to the orchestrator's ChatService and show each step
// of a turn as it streams in (cli/chat_view.h says how).
#pragma once

#include <string>

#include "libs/core/client_tls.h"

namespace omniforge::cli {

struct ChatOptions {
  std::string server = "127.0.0.1:50050";
  std::string api_key;
  std::string conversation_id;  // empty: a new conversation
  std::string message;          // empty: a session, one turn per line of stdin
  std::string context = "global";
  // The item the client shows (a project or task id), sent as entity_id.
  std::string entity_id;
  bool json = false;
  int timeout_s = 120;
  // A decision on a pending action or plan (its preview's action id), sent
  // as a structured ApprovalDecision: exactly that action runs, or is
  // dropped. Needs --conversation; `message` is optional then.
  std::string approve;
  std::string reject;
  // How the channel to the server is secured (the global --tls options).
  core::ChannelSecurity security;
};

// Runs one turn (with a message) or a session: one turn per line of standard
// input in the same conversation, with a prompt when stdin is a terminal,
// until /quit or end of input. With --approve or --reject, one turn that
// carries the decision. Returns 0; 1 when a turn failed (the RPC error is on
// stderr); 2 for bad options.
int RunChat(const ChatOptions& options);

}  // namespace omniforge::cli
