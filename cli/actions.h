// `omniforge actions`: the approval trail of one of the caller's
// conversations, from the orchestrator's ChatService.ListActions
// (cli/action_view.h says how it is shown).
#pragma once

#include <string>

#include "libs/core/client_tls.h"

namespace omniforge::cli {

struct ActionsOptions {
  std::string server = "127.0.0.1:50050";
  std::string api_key;
  std::string conversation_id;
  int limit = 0;  // 1 to 500; 0: the server's default (100)
  bool json = false;
  int timeout_s = 10;
  // How the channel to the server is secured (the global --tls options).
  core::ChannelSecurity security;
};

// Prints the conversation's decisions, newest first. Returns 0; 1 when the
// call failed (the RPC error is on stderr); 2 without an API key.
int RunActions(const ActionsOptions& options);

}  // namespace omniforge::cli
