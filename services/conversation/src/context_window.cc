#include "services/conversation/src/context_window.h"

#include <algorithm>

namespace omniforge::conversation {

bool ContextWindowAssembler::Offer(Message message) {
  if (complete_) return false;
  const bool in_recent_exchanges = exchanges_seen_ < options_.min_recent_exchanges;
  const bool over_budget = total_tokens_ + message.token_count > options_.token_budget;
  const size_t bytes = message.content.size() + message.metadata_json.size();
  const bool over_bytes = !newest_first_.empty() && total_bytes_ + bytes > options_.max_bytes;
  if ((!in_recent_exchanges && over_budget) || over_bytes ||
      static_cast<int>(newest_first_.size()) >= options_.max_messages) {
    complete_ = true;
    return false;
  }
  if (message.role == options_.exchange_opener) ++exchanges_seen_;
  total_tokens_ += message.token_count;
  total_bytes_ += bytes;
  newest_first_.push_back(std::move(message));
  return true;
}

ContextWindow ContextWindowAssembler::Finish(bool older_remain) && {
  ContextWindow window;
  window.total_tokens = total_tokens_;
  window.truncated = complete_ || older_remain;
  window.messages = std::move(newest_first_);
  std::reverse(window.messages.begin(), window.messages.end());
  return window;
}

}  // namespace omniforge::conversation
