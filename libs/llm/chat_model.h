// The one interface every service uses to talk to a model. Implementations:
// the HTTP providers (OpenAI-compatible, Anthropic) and the resilient client
// that adds profiles, retries, circuit breaking, fallback and usage records.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "libs/llm/chat.h"
#include "libs/llm/usage.h"

namespace omniforge::llm {

// Per-call context. Deadlines are absolute, in core::NowMicros() time.
struct CallContext {
  // The whole call (retries and fallbacks included) ends by then; 0 means the
  // configured default timeout, cut short by the deadline of the call this
  // thread is serving (core::ScopedCallDeadline) when there is one.
  int64_t deadline_micros = 0;
  // What the call is for: intent_analysis, planner_stream, plan_generation,
  // plan_review, executor_turn, ... Recorded with usage.
  std::string operation_type;
  // Optional: returns true once the caller has given up; checked between
  // attempts and while streaming.
  std::function<bool()> cancelled;
  // The model to ask for in place of ChatRequest::model; LlmClient sets it
  // to each target's model, so the caller's request is sent as it is,
  // without a copy per call.
  std::string model;
  // Where this call's usage goes (its record and its answer), in place of
  // the client's own sink; null: the client's sink. Outlives the call.
  CallUsage* usage = nullptr;
};

// Receives the increments of a streamed answer, in order, on the calling
// thread. Returning false cancels the stream (the call then ends CANCELLED).
using StreamCallback = std::function<bool(const StreamDelta&)>;

// Thread-safe: one instance serves concurrent calls.
class ChatModel {
 public:
  virtual ~ChatModel() = default;

  // Sends the request and returns the complete answer.
  // Errors carry an LlmErrorKind (errors.h).
  virtual absl::StatusOr<ChatResponse> Complete(const ChatRequest& request,
                                                const CallContext& context) = 0;

  // Streams the answer to `on_delta` and returns the assembled answer (the
  // same ChatResponse Complete would give). A stream that breaks after output
  // began ends with kStreamBroken; it is never silently truncated.
  virtual absl::StatusOr<ChatResponse> Stream(const ChatRequest& request,
                                              const CallContext& context,
                                              const StreamCallback& on_delta) = 0;
};

}  // namespace omniforge::llm
