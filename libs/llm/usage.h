// Usage records: one per ChatModel call made through the client, streamed or
// not, successful or not.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "libs/llm/chat.h"
#include "libs/llm/errors.h"

namespace omniforge::llm {

struct UsageRecord {
  std::string operation_type;
  std::string profile;
  std::string provider;  // the provider that answered, or the last one tried
  std::string model;
  // Everything the call was billed: the answer's tokens plus those failed
  // attempts reported (a stream broken after its usage arrived), and their
  // cost by the price table.
  TokenUsage tokens;
  double cost_usd = 0;
  int64_t latency_us = 0;               // the whole call, retries included
  int64_t time_to_first_token_us = -1;  // streamed calls that produced output
  bool streamed = false;
  int32_t attempts = 0;        // HTTP requests made, all providers
  bool fallback_used = false;  // answered by other than the first in the chain
  bool ok = false;
  LlmErrorKind error_kind = LlmErrorKind::kNone;
  std::string error_message;
};

// Receives usage records. Implementations must be thread-safe and must not
// block for long (the orchestrator persists them asynchronously).
class UsageSink {
 public:
  virtual ~UsageSink() = default;
  virtual void Record(const UsageRecord& record) = 0;
};

// The usage of the model calls made for one piece of work (a chat turn, a
// plan step), given with each call (CallContext::usage) so that whom a call
// serves never travels in thread-local state. Record takes the client's
// record of each call, in place of the client's own sink; Answered takes
// each answer as its caller got it, from a wrapper that meters answers (the
// orchestrator's MeteredChatModel). Called on the calling thread.
class CallUsage : public UsageSink {
 public:
  virtual void Answered(const absl::StatusOr<ChatResponse>& answer) = 0;
};

}  // namespace omniforge::llm
