// The resilient model client every service calls: a named profile (speed,
// balanced, quality, ...) maps to a fallback chain of provider/model targets,
// and each call gets retries with backoff, per-target circuit breaking,
// fallback, one overall deadline, one usage record and metrics.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/core/metrics.h"
#include "libs/llm/chat_model.h"
#include "libs/llm/circuit_breaker.h"
#include "libs/llm/pricing.h"
#include "libs/llm/retry.h"
#include "libs/llm/usage.h"

namespace omniforge::llm {

// One entry of a fallback chain.
struct ModelTarget {
  std::string provider;  // a key of LlmClientOptions::providers
  std::string model;     // sent as ChatRequest::model

  friend bool operator==(const ModelTarget&, const ModelTarget&) = default;
};

struct LlmClientOptions {
  // Provider name -> a ChatModel making one attempt per call (no retries).
  std::map<std::string, std::shared_ptr<ChatModel>> providers;
  // Profile name -> fallback chain; the first target is the primary.
  std::map<std::string, std::vector<ModelTarget>> profiles;
  RetryPolicy retry;
  CircuitBreakerOptions breaker;
  PriceTable prices;
  // Receives one record per call (a call given its own CallContext::usage
  // reports there instead); may be null.
  std::shared_ptr<UsageSink> usage_sink;
  // The whole call's budget when CallContext::deadline_micros is 0.
  int64_t default_timeout_micros = 120'000'000;
  // Null: the real clock, randomness and the process-wide registry. When
  // given they must outlive the client.
  Clock* clock = nullptr;
  Random* random = nullptr;
  core::MetricsRegistry* metrics = nullptr;
};

// Thread-safe; one instance serves the whole process.
//
// A call walks its profile's chain. For each target (skipped while its circuit
// is open) it asks for the target's model (CallContext::model) and tries up to
// retry.max_attempts times, waiting between attempts (RetryWaitMicros), while
// the error is retryable. Exhausted retries and non-retryable errors (an
// invalid request or bad key may be specific to one provider) move on to the
// next target; kCancelled and kStreamBroken end the call at once. A stream
// whose output reached the caller is never retried or re-routed: its failure is
// returned as kStreamBroken. Every attempt gets the call's remaining time; no
// wait crosses the deadline (the target is given up instead), and a call whose
// deadline passed ends with kTimeout. Errors otherwise are the last target's
// last error (kCircuitOpen when every circuit was open).
// The usage record's time_to_first_token_us counts from the start of the
// call, retries included: what the user waited. Its tokens and cost are
// everything the call was billed: the answer's, plus what failed attempts
// reported (BilledUsageOf), each priced at its own target.
//
// A failed attempt counts against its target's circuit breaker when the
// error is retryable, except a timeout once the call's own deadline (the
// caller's, or the served gRPC call's) has passed: that is the caller's
// budget running out, not the target failing. A per-attempt timeout
// (ProviderOptions::request_timeout_micros) before it does count.
//
// An exception thrown by `on_delta` ends the call and propagates to the
// caller, the attempt's circuit-breaker admission released.
//
// Each call emits exactly one UsageRecord and updates the metrics
// omniforge_llm_calls_total, omniforge_llm_tokens_total,
// omniforge_llm_cost_usd_total, omniforge_llm_call_duration_seconds,
// omniforge_llm_retries_total and omniforge_llm_fallbacks_total. Failed
// attempts are logged (target, operation, error kind, attempt number; never
// message content).
class LlmClient final {
 public:
  // INVALID_ARGUMENT when a profile's chain is empty or names a provider
  // that `options.providers` lacks (or holds as null).
  static absl::StatusOr<std::unique_ptr<LlmClient>> Create(LlmClientOptions options);

  LlmClient(const LlmClient&) = delete;
  LlmClient& operator=(const LlmClient&) = delete;

  // The answer of the first target that gives one. kNotConfigured for an
  // unknown profile; see the class comment for everything else.
  absl::StatusOr<ChatResponse> Complete(std::string_view profile, const ChatRequest& request,
                                        const CallContext& context);

  // Streams the answer to `on_delta` (on the calling thread). A target that
  // fails before its first delta is retried or replaced like in Complete.
  // `on_delta` returning false ends the call with kCancelled.
  absl::StatusOr<ChatResponse> Stream(std::string_view profile, const ChatRequest& request,
                                      const CallContext& context, const StreamCallback& on_delta);

  bool HasProfile(std::string_view profile) const;

  // A ChatModel whose calls go through `profile` (kNotConfigured on every
  // call when it does not exist). The client must outlive it.
  std::unique_ptr<ChatModel> ForProfile(std::string profile);

 private:
  struct Target {
    ModelTarget name;
    ChatModel* model;
    CircuitBreaker* breaker;
  };

  explicit LlmClient(LlmClientOptions options);

  // Complete when `on_delta` is null, else Stream. Emits the usage record.
  absl::StatusOr<ChatResponse> Call(std::string_view profile, const ChatRequest& request,
                                    const CallContext& context, const StreamCallback* on_delta);
  // What stays the same across the attempts of one call.
  struct ChainCall {
    const ChatRequest& request;
    const CallContext& context;
    CallContext attempt_context;  // the context with the deadline and the target's model
    const StreamCallback* on_delta;
    int64_t start_micros;
    int64_t deadline;
    std::string operation;  // its label in logs
  };

  // The call's deadline: the context's, else the default timeout, capped by
  // the deadline of the call being served on this thread.
  int64_t DeadlineOf(const CallContext& context, int64_t start_micros) const;
  // Walks the chain, filling the call-dependent fields of `record`.
  absl::StatusOr<ChatResponse> RunChain(const std::vector<Target>& chain,
                                        const ChatRequest& request, const CallContext& context,
                                        const StreamCallback* on_delta, int64_t start_micros,
                                        UsageRecord& record);
  // Tries `target`, again as the retry policy allows. The call's result when
  // it ends here (an answer, a cancel, a broken stream, the deadline);
  // nullopt to move on to the next target, `last_error` saying why.
  std::optional<absl::StatusOr<ChatResponse>> TryTarget(const Target& target, bool last_target,
                                                        const ChainCall& call, UsageRecord& record,
                                                        absl::Status& last_error);
  // Logs a failed attempt and whether it is retried; true to try `target`
  // again after `wait` microseconds.
  bool RetryAfterFailure(const Target& target, const absl::Status& status, int attempt,
                         bool output_began, bool last_target, const ChainCall& call, int64_t& wait);
  // Adds tokens billed by `target` to `record`, with their cost.
  void AddBilled(const ModelTarget& target, const TokenUsage& usage, UsageRecord& record) const;
  // Completes `record` with the call's outcome and reports it to `sink`
  // (the call's own, or the client's; null: metrics only).
  void Finish(const absl::StatusOr<ChatResponse>& result, int64_t start_micros, UsageRecord& record,
              UsageSink* sink);
  void Report(const UsageRecord& record, UsageSink* sink);

  std::map<std::string, std::shared_ptr<ChatModel>> providers_;
  std::map<std::string, std::unique_ptr<CircuitBreaker>> breakers_;  // by "provider/model"
  std::map<std::string, std::vector<Target>, std::less<>> profiles_;
  const RetryPolicy retry_;
  const PriceTable prices_;
  const std::shared_ptr<UsageSink> usage_sink_;
  const int64_t default_timeout_micros_;
  Clock* const clock_;
  Random* const random_;
  core::MetricsRegistry& metrics_;
};

}  // namespace omniforge::llm
