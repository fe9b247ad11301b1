// The context windows of the conversations this orchestrator served last,
// so that the next turn on one of them need not read its window again.
//
// A kept window is used only when nothing else was written to the
// conversation since: the turn that kept it knows the seq of the reply it
// stored, and the next turn's user message must get the seq right after it.
// Anything else (a message of another replica's turn, a reply stored from
// the spool, an append by another client) leaves a gap, and the turn reads
// the window as usual. The next window is built from the kept one and the
// turn's two messages by the conversation service's own rule
// (services/conversation/src/context_window.h): newest first, every message
// of the last `min_recent_exchanges` exchanges, then older ones while the
// token total stays within the budget, stopping at the first that does not
// fit. Messages a window left out never fit again (the total before them only
// grows), so the kept window holds all the next one needs.
//
// A kept window is never changed: Advance keeps a new one, Take hands it
// over. Read therefore shares it instead of copying it, and Take moves it
// out unless a reader still holds it.
//
// Bounded by the bytes of the messages kept; least recently used windows go
// first. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "libs/core/identity.h"
#include "omniforge/conversation/v1/conversation_service.pb.h"

namespace omniforge::orchestrator {

struct WindowCacheOptions {
  size_t max_bytes = 32 << 20;  // 0: keep nothing
  int token_budget = 2000;      // as GetContextWindow's token_budget
  int min_recent_exchanges = 3;
  int max_messages = 500;
};

class WindowCache final {
 public:
  explicit WindowCache(WindowCacheOptions options) : options_(options) {}

  // Whether a window of this conversation is kept for `who` (the turn then
  // need not start reading it before its message is stored).
  bool Has(const core::Identity& who, const std::string& conversation_id) const;

  // The window kept for `who`, shared (not copied), and its version (each
  // window kept gets a new one); nullopt when none is kept. The window stays
  // kept, and may be replaced before Take: Take tells its version. A reader
  // lets go of it soon: Take copies a window that is still being read.
  struct Kept {
    std::shared_ptr<const conversation::v1::GetContextWindowResponse> window;
    uint64_t version = 0;
  };
  std::optional<Kept> Read(const core::Identity& who, const std::string& conversation_id) const;

  // The window before `user_message` (just stored): the kept one when the
  // message came right after the kept reply; else nullopt. Either way the
  // conversation's window leaves the cache: the turn hands the next one to
  // Advance when it has stored its reply. `version`, when given, receives
  // the version of the window returned.
  std::optional<conversation::v1::GetContextWindowResponse> Take(
      const core::Identity& who, const std::string& conversation_id,
      const conversation::v1::Message& user_message, uint64_t* version = nullptr);

  // Keeps the window the next turn will see: `history` (the window before
  // `user`: its messages' seqs end right before user's) with `user` and
  // `reply` (stored right after `user`) added. Otherwise, or for a reply not
  // stored, nothing is kept and a kept window is dropped.
  void Advance(const core::Identity& who, const std::string& conversation_id,
               conversation::v1::GetContextWindowResponse history,
               const conversation::v1::Message& user, const conversation::v1::Message& reply);

  // Drops the conversation's window.
  void Forget(const core::Identity& who, const std::string& conversation_id);

  size_t bytes() const;

 private:
  struct Entry {
    std::string user_id;
    int64_t last_seq = 0;  // the newest message of the conversation
    uint64_t version = 0;
    std::shared_ptr<conversation::v1::GetContextWindowResponse> window;  // never null
    size_t bytes = 0;
    std::list<std::string>::iterator lru;
  };

  void EraseLocked(std::unordered_map<std::string, Entry>::iterator it);

  const WindowCacheOptions options_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;  // by tenant and conversation
  std::list<std::string> lru_;                      // most recently used first
  size_t bytes_ = 0;
  uint64_t versions_ = 0;  // the newest version given
};

}  // namespace omniforge::orchestrator
