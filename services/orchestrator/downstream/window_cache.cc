#include "services/orchestrator/downstream/window_cache.h"

#include <algorithm>
#include <atomic>
#include <vector>

namespace omniforge::orchestrator {
namespace {

namespace convpb = conversation::v1;

std::string KeyOf(const core::Identity& who, const std::string& conversation_id) {
  return who.tenant_id + '\n' + conversation_id;
}

size_t BytesOf(const convpb::GetContextWindowResponse& window) {
  size_t bytes = sizeof(window);
  for (const convpb::Message& m : window.messages()) {
    bytes += sizeof(m) + m.id().size() + m.conversation_id().size() + m.content().size() +
             m.metadata_json().size();
  }
  return bytes;
}

// The kept window, moved out when the cache holds the last reference to it
// (only Read hands it out, under the cache's lock: nobody else can then
// reach it), else copied. Called with the cache's lock held.
convpb::GetContextWindowResponse TakeWindow(
    const std::shared_ptr<convpb::GetContextWindowResponse>& kept) {
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer does not model fences (GCC refuses atomic_thread_fence
  // under -fsanitize=thread) and would not see the last reader's release
  // reach the move: a TSan build (`make tsan`) copies, which only reads.
  return *kept;
#else
  if (kept.use_count() == 1) {
    // The last reader's release of its reference happens before the move.
    std::atomic_thread_fence(std::memory_order_acquire);
    return std::move(*kept);
  }
  return *kept;
#endif
}

}  // namespace

bool WindowCache::Has(const core::Identity& who, const std::string& conversation_id) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(KeyOf(who, conversation_id));
  return it != entries_.end() && it->second.user_id == who.user_id;
}

std::optional<WindowCache::Kept> WindowCache::Read(const core::Identity& who,
                                                   const std::string& conversation_id) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(KeyOf(who, conversation_id));
  if (it == entries_.end() || it->second.user_id != who.user_id) return std::nullopt;
  return Kept{it->second.window, it->second.version};
}

std::optional<convpb::GetContextWindowResponse> WindowCache::Take(
    const core::Identity& who, const std::string& conversation_id,
    const convpb::Message& user_message, uint64_t* version) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(KeyOf(who, conversation_id));
  if (it == entries_.end()) return std::nullopt;
  std::optional<convpb::GetContextWindowResponse> window;
  if (it->second.user_id == who.user_id && user_message.seq() == it->second.last_seq + 1) {
    window = TakeWindow(it->second.window);
    if (version != nullptr) *version = it->second.version;
  }
  EraseLocked(it);
  return window;
}

void WindowCache::Advance(const core::Identity& who, const std::string& conversation_id,
                          convpb::GetContextWindowResponse history, const convpb::Message& user,
                          const convpb::Message& reply) {
  const std::string key = KeyOf(who, conversation_id);
  const int n = history.messages_size();
  const bool follows = n == 0 ? user.seq() == 1 : history.messages(n - 1).seq() + 1 == user.seq();
  if (options_.max_bytes == 0 || !follows || reply.seq() != user.seq() + 1) {
    Forget(who, conversation_id);
    return;
  }

  // The conversation service's rule, fed newest first (context_window.h).
  std::vector<convpb::Message*> newest_first;
  int total_tokens = 0;
  int exchanges_seen = 0;
  bool complete = false;
  convpb::Message user_copy = user;
  convpb::Message reply_copy = reply;
  auto offer = [&](convpb::Message& m) {
    if (complete) return;
    const bool in_recent_exchanges = exchanges_seen < options_.min_recent_exchanges;
    const bool over_budget = total_tokens + m.token_count() > options_.token_budget;
    if ((!in_recent_exchanges && over_budget) ||
        static_cast<int>(newest_first.size()) >= options_.max_messages) {
      complete = true;
      return;
    }
    if (m.role() == convpb::ROLE_USER) ++exchanges_seen;
    total_tokens += m.token_count();
    newest_first.push_back(&m);
  };
  offer(reply_copy);
  offer(user_copy);
  for (int i = n - 1; i >= 0; --i) offer(*history.mutable_messages(i));

  convpb::GetContextWindowResponse next;
  next.set_total_tokens(total_tokens);
  next.set_truncated(complete || history.truncated());
  next.set_token_estimator(history.token_estimator());
  // NOLINTNEXTLINE(modernize-loop-convert): clang 14 cannot compile libstdc++ 12's views::reverse
  for (auto m = newest_first.rbegin(); m != newest_first.rend(); ++m) {
    *next.add_messages() = std::move(**m);
  }
  const size_t bytes = BytesOf(next);

  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it != entries_.end()) EraseLocked(it);
  if (bytes > options_.max_bytes) return;
  while (bytes_ + bytes > options_.max_bytes && !lru_.empty()) {
    EraseLocked(entries_.find(lru_.back()));
  }
  lru_.push_front(key);
  Entry& entry = entries_[key];
  entry.user_id = who.user_id;
  entry.last_seq = reply.seq();
  entry.version = ++versions_;
  entry.window = std::make_shared<convpb::GetContextWindowResponse>(std::move(next));
  entry.bytes = bytes;
  entry.lru = lru_.begin();
  bytes_ += bytes;
}

void WindowCache::Forget(const core::Identity& who, const std::string& conversation_id) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(KeyOf(who, conversation_id));
  if (it != entries_.end()) EraseLocked(it);
}

size_t WindowCache::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

void WindowCache::EraseLocked(std::unordered_map<std::string, Entry>::iterator it) {
  bytes_ -= it->second.bytes;
  lru_.erase(it->second.lru);
  entries_.erase(it);
}

}  // namespace omniforge::orchestrator
