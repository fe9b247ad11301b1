// Chooses the messages a planner sees before a turn.
//
// Fed newest-first, it keeps every message of the last N exchanges (an
// exchange starts at a message of the opening role: the user's in a chat,
// the planner's in an agent dialogue), then older messages while the running
// total stays within the token budget, stopping at the first that does not
// fit so the window has no holes. Hard caps on the number of messages and
// on their bytes (content and metadata) bound the window even when the
// recent exchanges are huge, so that it always fits in one response; the
// newest message is kept whatever its size. The result is oldest-first.
#pragma once

#include <vector>

#include "services/conversation/src/model.h"

namespace omniforge::conversation {

struct ContextWindowOptions {
  int token_budget = 2000;
  int min_recent_exchanges = 3;
  Role exchange_opener = Role::kUser;
  int max_messages = 500;
  // 2 MiB: with the response's framing, well within gRPC's default 4 MiB.
  size_t max_bytes = size_t{2} * 1024 * 1024;
};

struct ContextWindow {
  std::vector<Message> messages;  // ascending seq
  int total_tokens = 0;
  bool truncated = false;  // older messages were left out
};

class ContextWindowAssembler final {
 public:
  explicit ContextWindowAssembler(ContextWindowOptions options) : options_(options) {}

  // Offers the next older message. Returns false once the window is complete:
  // this message (and anything older) was left out.
  bool Offer(Message message);

  // The window, oldest first. `older_remain` says whether messages older than
  // the last one offered exist.
  ContextWindow Finish(bool older_remain) &&;

 private:
  ContextWindowOptions options_;
  std::vector<Message> newest_first_;
  int total_tokens_ = 0;
  size_t total_bytes_ = 0;
  int exchanges_seen_ = 0;
  bool complete_ = false;
};

}  // namespace omniforge::conversation
