#include "libs/llm/llm_client.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/core/call_deadline.h"
#include "libs/core/logging.h"

namespace omniforge::llm {
namespace {

// LLM calls run from a fraction of a second to minutes.
const std::vector<double>& DurationBuckets() {
  static const std::vector<double> buckets = {0.1, 0.25, 0.5, 1,   2.5, 5,  10,
                                              20,  30,   60,  120, 300, 600};
  return buckets;
}

std::string TargetName(const ModelTarget& target) {
  return absl::StrCat(target.provider, "/", target.model);
}

std::string OperationLabel(const std::string& operation) {
  return operation.empty() ? "unspecified" : operation;
}

bool IsCancelled(const CallContext& context) { return context.cancelled && context.cancelled(); }

// Providers should only return LlmErrors; anything else is treated as a
// transient server fault so it is retried rather than mistaken for success
// or for a configuration problem.
absl::Status Normalized(const absl::Status& status) {
  if (ErrorKindOf(status) != LlmErrorKind::kNone) return status;
  return LlmError(LlmErrorKind::kServerError,
                  absl::StrCat("untyped provider error: ", status.ToString()));
}

// What happens after a failed attempt; logged with it.
enum class Next { kRetry, kFallback, kGiveUp };

std::string_view NextName(Next next) {
  switch (next) {
    case Next::kRetry:
      return "retry";
    case Next::kFallback:
      return "fallback";
    case Next::kGiveUp:
      return "give_up";
  }
  return "give_up";
}

// The call's deadline passed, after `last_error` (OK when nothing failed).
absl::Status DeadlineError(const absl::Status& last_error) {
  return LlmError(LlmErrorKind::kTimeout,
                  last_error.ok() ? std::string("the call's deadline passed")
                                  : absl::StrCat("the call's deadline passed; last error: ",
                                                 last_error.message()));
}

struct AttemptResult {
  absl::StatusOr<ChatResponse> response;
  int64_t first_delta_at = -1;  // when output reached the caller; -1: it did not
  bool caller_stopped = false;  // the caller's callback returned false
};

// One request to one target, watching a stream for the moment output first
// reaches the caller (after which it may not be retried).
AttemptResult Attempt(ChatModel& model, const ChatRequest& request, const CallContext& context,
                      const StreamCallback* on_delta, Clock& clock) {
  AttemptResult result;
  if (on_delta == nullptr) {
    result.response = model.Complete(request, context);
    return result;
  }
  const StreamCallback watched = [&](const StreamDelta& delta) {
    if (result.first_delta_at < 0) result.first_delta_at = clock.NowMicros();
    result.caller_stopped = !(*on_delta)(delta);
    return !result.caller_stopped;
  };
  result.response = model.Stream(request, context, watched);
  return result;
}

// Reports an admitted attempt's outcome to its target's breaker exactly
// once. An attempt that throws (a caller's stream callback may) reports as
// cancelled on the way out: a half-open probe that never reported would hold
// the circuit's one probe slot and so refuse every later call for good.
class BreakerAdmission final {
 public:
  BreakerAdmission(CircuitBreaker& breaker, CircuitBreaker::Admission admission)
      : breaker_(breaker), admission_(admission) {}
  ~BreakerAdmission() {
    if (!reported_) breaker_.OnResult(admission_, LlmErrorKind::kCancelled);
  }
  BreakerAdmission(const BreakerAdmission&) = delete;
  BreakerAdmission& operator=(const BreakerAdmission&) = delete;

  void Report(LlmErrorKind kind) {
    reported_ = true;
    breaker_.OnResult(admission_, kind);
  }

 private:
  CircuitBreaker& breaker_;
  const CircuitBreaker::Admission admission_;
  bool reported_ = false;
};

class ProfileChatModel final : public ChatModel {
 public:
  ProfileChatModel(LlmClient& client, std::string profile)
      : client_(client), profile_(std::move(profile)) {}

  absl::StatusOr<ChatResponse> Complete(const ChatRequest& request,
                                        const CallContext& context) override {
    return client_.Complete(profile_, request, context);
  }

  absl::StatusOr<ChatResponse> Stream(const ChatRequest& request, const CallContext& context,
                                      const StreamCallback& on_delta) override {
    return client_.Stream(profile_, request, context, on_delta);
  }

 private:
  LlmClient& client_;
  const std::string profile_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<LlmClient>> LlmClient::Create(LlmClientOptions options) {
  for (const auto& [profile, chain] : options.profiles) {
    if (chain.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("LLM profile \"", profile, "\" is empty"));
    }
    for (const ModelTarget& target : chain) {
      const auto provider = options.providers.find(target.provider);
      if (provider == options.providers.end() || provider->second == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(
            "LLM profile \"", profile, "\" names unknown provider \"", target.provider, "\""));
      }
    }
  }
  return std::unique_ptr<LlmClient>(new LlmClient(std::move(options)));
}

LlmClient::LlmClient(LlmClientOptions options)
    : providers_(std::move(options.providers)),
      retry_(options.retry),
      prices_(std::move(options.prices)),
      usage_sink_(std::move(options.usage_sink)),
      default_timeout_micros_(options.default_timeout_micros),
      clock_(options.clock != nullptr ? options.clock : &DefaultClock()),
      random_(options.random != nullptr ? options.random : &DefaultRandom()),
      metrics_(options.metrics != nullptr ? *options.metrics : core::MetricsRegistry::Global()) {
  for (const auto& [profile, chain] : options.profiles) {
    std::vector<Target>& targets = profiles_[profile];
    for (const ModelTarget& target : chain) {
      const std::string name = TargetName(target);
      std::unique_ptr<CircuitBreaker>& breaker = breakers_[name];
      if (breaker == nullptr) {
        breaker = std::make_unique<CircuitBreaker>(name, options.breaker, clock_);
      }
      targets.push_back(Target{target, providers_.at(target.provider).get(), breaker.get()});
    }
  }
}

absl::StatusOr<ChatResponse> LlmClient::Complete(std::string_view profile,
                                                 const ChatRequest& request,
                                                 const CallContext& context) {
  return Call(profile, request, context, nullptr);
}

absl::StatusOr<ChatResponse> LlmClient::Stream(std::string_view profile, const ChatRequest& request,
                                               const CallContext& context,
                                               const StreamCallback& on_delta) {
  return Call(profile, request, context, &on_delta);
}

bool LlmClient::HasProfile(std::string_view profile) const {
  return profiles_.find(profile) != profiles_.end();
}

std::unique_ptr<ChatModel> LlmClient::ForProfile(std::string profile) {
  return std::make_unique<ProfileChatModel>(*this, std::move(profile));
}

absl::StatusOr<ChatResponse> LlmClient::Call(std::string_view profile, const ChatRequest& request,
                                             const CallContext& context,
                                             const StreamCallback* on_delta) {
  const int64_t start = clock_->NowMicros();
  UsageRecord record;
  record.operation_type = context.operation_type;
  record.profile = std::string(profile);
  record.streamed = on_delta != nullptr;
  // The caller's collector of its calls when it gave one, else the client's.
  UsageSink* const sink = context.usage != nullptr ? context.usage : usage_sink_.get();

  absl::StatusOr<ChatResponse> result;
  const auto chain = profiles_.find(profile);
  if (chain == profiles_.end()) {
    result = LlmError(LlmErrorKind::kNotConfigured,
                      absl::StrCat("no LLM profile \"", std::string(profile), "\" is configured"));
  } else {
    try {
      result = RunChain(chain->second, request, context, on_delta, start, record);
    } catch (...) {
      // The caller's stream callback threw: the call still leaves its record
      // before the exception goes on to the caller.
      Finish(LlmError(LlmErrorKind::kCancelled, "the call ended with an exception"), start, record,
             sink);
      throw;
    }
  }
  Finish(result, start, record, sink);
  if (result.ok()) result->cost_usd = record.cost_usd;
  return result;
}

void LlmClient::Finish(const absl::StatusOr<ChatResponse>& result, int64_t start_micros,
                       UsageRecord& record, UsageSink* sink) {
  record.latency_us = clock_->NowMicros() - start_micros;
  record.ok = result.ok();
  if (result.ok()) {
    AddBilled(ModelTarget{record.provider, record.model}, result->usage, record);
  } else {
    record.error_kind = ErrorKindOf(result.status());
    record.error_message = std::string(result.status().message());
  }
  Report(record, sink);
}

int64_t LlmClient::DeadlineOf(const CallContext& context, int64_t start_micros) const {
  // Only 0 means "none given"; a negative deadline has long passed.
  int64_t deadline = context.deadline_micros != 0 ? context.deadline_micros
                                                  : start_micros + default_timeout_micros_;
  // Without an explicit deadline, the call being served on this thread
  // bounds the model call: nobody waits for an answer after it ends.
  if (const auto served = core::CallDeadline(); context.deadline_micros == 0 && served) {
    deadline = std::min(
        deadline,
        std::chrono::duration_cast<std::chrono::microseconds>(served->time_since_epoch()).count());
  }
  return deadline;
}

absl::StatusOr<ChatResponse> LlmClient::RunChain(const std::vector<Target>& chain,
                                                 const ChatRequest& request,
                                                 const CallContext& context,
                                                 const StreamCallback* on_delta,
                                                 int64_t start_micros, UsageRecord& record) {
  ChainCall call{request,
                 context,
                 context,
                 on_delta,
                 start_micros,
                 DeadlineOf(context, start_micros),
                 OperationLabel(context.operation_type)};
  call.attempt_context.deadline_micros = call.deadline;
  absl::Status last_error;
  for (size_t index = 0; index < chain.size(); ++index) {
    const Target& target = chain[index];
    if (index > 0) {
      const ModelTarget& previous = chain[index - 1].name;
      metrics_
          .GetCounter("omniforge_llm_fallbacks_total",
                      "Calls that gave up on a target and moved on to the next in their chain, "
                      "by the target given up and the reason.",
                      {{"provider", previous.provider},
                       {"model", previous.model},
                       {"reason", std::string(ErrorKindName(ErrorKindOf(last_error)))}})
          .Inc();
    }
    record.provider = target.name.provider;
    record.model = target.name.model;
    record.fallback_used = index > 0;
    call.attempt_context.model = target.name.model;
    std::optional<absl::StatusOr<ChatResponse>> ended =
        TryTarget(target, index + 1 == chain.size(), call, record, last_error);
    if (ended.has_value()) return *std::move(ended);
  }
  if (clock_->NowMicros() >= call.deadline) return DeadlineError(last_error);
  return last_error;
}

std::optional<absl::StatusOr<ChatResponse>> LlmClient::TryTarget(const Target& target,
                                                                 bool last_target,
                                                                 const ChainCall& call,
                                                                 UsageRecord& record,
                                                                 absl::Status& last_error) {
  for (int attempt = 1;; ++attempt) {
    if (IsCancelled(call.context)) {
      return LlmError(LlmErrorKind::kCancelled, "the caller cancelled the call");
    }
    if (clock_->NowMicros() >= call.deadline) return DeadlineError(last_error);
    const CircuitBreaker::Admission admission = target.breaker->TryAcquire();
    if (admission == CircuitBreaker::Admission::kRefused) {
      last_error = LlmError(LlmErrorKind::kCircuitOpen,
                            absl::StrCat(TargetName(target.name), ": circuit open"));
      return std::nullopt;
    }
    BreakerAdmission admitted(*target.breaker, admission);

    ++record.attempts;
    const int64_t attempt_start = clock_->NowMicros();
    auto [response, first_delta_at, caller_stopped] =
        Attempt(*target.model, call.request, call.attempt_context, call.on_delta, *clock_);
    if (response.ok()) {
      admitted.Report(LlmErrorKind::kNone);
      if (response->time_to_first_token_us >= 0) {
        record.time_to_first_token_us =
            attempt_start - call.start_micros + response->time_to_first_token_us;
      } else if (first_delta_at >= 0) {
        record.time_to_first_token_us = first_delta_at - call.start_micros;
      }
      return std::move(response);
    }

    if (const std::optional<TokenUsage> billed = BilledUsageOf(response.status())) {
      AddBilled(target.name, *billed, record);
    }
    // Our caller ending the stream says nothing about the target.
    const absl::Status status =
        caller_stopped ? LlmError(LlmErrorKind::kCancelled, "the caller stopped the stream")
                       : Normalized(response.status());
    const LlmErrorKind kind = ErrorKindOf(status);
    // Nor does running out of the call's own time (the caller's deadline or
    // the served call's): only a target too slow within its per-attempt
    // timeout counts against it. Attempts never run past the call's
    // deadline, so a timeout at or after it is the call's.
    const bool call_deadline_passed =
        kind == LlmErrorKind::kTimeout && clock_->NowMicros() >= call.deadline;
    admitted.Report(call_deadline_passed ? LlmErrorKind::kCancelled : kind);
    last_error = status;

    // Cancellation is the caller's choice, not a failure worth a warning.
    if (kind == LlmErrorKind::kCancelled) return status;
    const bool output_began = first_delta_at >= 0;
    if (output_began) record.time_to_first_token_us = first_delta_at - call.start_micros;
    int64_t wait = 0;
    const bool retry =
        RetryAfterFailure(target, status, attempt, output_began, last_target, call, wait);
    if (output_began && kind != LlmErrorKind::kStreamBroken) {
      return LlmError(LlmErrorKind::kStreamBroken,
                      absl::StrCat("the stream failed after output began: ", status.message()));
    }
    if (kind == LlmErrorKind::kStreamBroken) return status;
    if (!retry) return std::nullopt;

    metrics_
        .GetCounter("omniforge_llm_retries_total",
                    "Attempts repeated on the same target after a retryable failure.",
                    {{"provider", target.name.provider},
                     {"model", target.name.model},
                     {"reason", std::string(ErrorKindName(kind))}})
        .Inc();
    if (!clock_->SleepFor(wait, call.context.cancelled)) {
      return LlmError(LlmErrorKind::kCancelled, "the caller cancelled the call");
    }
  }
}

bool LlmClient::RetryAfterFailure(const Target& target, const absl::Status& status, int attempt,
                                  bool output_began, bool last_target, const ChainCall& call,
                                  int64_t& wait) {
  const LlmErrorKind kind = ErrorKindOf(status);
  Next next = Next::kGiveUp;
  if (kind == LlmErrorKind::kStreamBroken || output_began) {
    next = Next::kGiveUp;
  } else if (IsRetryable(kind) && attempt < retry_.max_attempts) {
    wait = RetryWaitMicros(retry_, attempt, random_->Uniform(), RetryAfterMicrosOf(status));
    next = clock_->NowMicros() + wait < call.deadline ? Next::kRetry : Next::kFallback;
  } else {
    next = Next::kFallback;
  }
  if (next == Next::kFallback && last_target) next = Next::kGiveUp;
  core::LogWarn("llm attempt failed", {{"provider", target.name.provider},
                                       {"model", target.name.model},
                                       {"operation", call.operation},
                                       {"error_kind", std::string(ErrorKindName(kind))},
                                       {"attempt", absl::StrCat(attempt)},
                                       {"next", std::string(NextName(next))}});
  return next == Next::kRetry;
}

void LlmClient::AddBilled(const ModelTarget& target, const TokenUsage& usage,
                          UsageRecord& record) const {
  record.tokens.prompt_tokens += usage.prompt_tokens;
  record.tokens.completion_tokens += usage.completion_tokens;
  record.tokens.cached_tokens += usage.cached_tokens;
  record.tokens.cache_write_tokens += usage.cache_write_tokens;
  // Priced and counted per target: a fallback's tokens may cost differently.
  const double cost = prices_.Cost(target.provider, target.model, usage);
  record.cost_usd += cost;
  const std::pair<const char*, int64_t> kinds[] = {{"prompt", usage.prompt_tokens},
                                                   {"completion", usage.completion_tokens},
                                                   {"cached", usage.cached_tokens},
                                                   {"cache_write", usage.cache_write_tokens}};
  for (const auto& [kind, count] : kinds) {
    metrics_
        .GetCounter("omniforge_llm_tokens_total",
                    "Tokens billed for LLM calls, by the target that billed them (failed "
                    "attempts included when the provider reported usage); cached and "
                    "cache_write are the parts of prompt read from and written to the "
                    "provider's cache.",
                    {{"provider", target.provider}, {"model", target.model}, {"kind", kind}})
        .Inc(static_cast<double>(count));
  }
  metrics_
      .GetCounter("omniforge_llm_cost_usd_total",
                  "Cost of LLM calls in USD by the price table, failed attempts' billed tokens "
                  "included.",
                  {{"provider", target.provider}, {"model", target.model}})
      .Inc(cost);
}

void LlmClient::Report(const UsageRecord& record, UsageSink* sink) {
  const std::string operation = OperationLabel(record.operation_type);
  const std::string outcome =
      record.ok ? std::string("ok") : std::string(ErrorKindName(record.error_kind));
  metrics_
      .GetCounter("omniforge_llm_calls_total",
                  "LLM calls (retries and fallbacks included in one), by the target that "
                  "answered or was tried last and the outcome (ok or the error kind).",
                  {{"provider", record.provider},
                   {"model", record.model},
                   {"operation", operation},
                   {"outcome", outcome}})
      .Inc();
  metrics_
      .GetHistogram(
          "omniforge_llm_call_duration_seconds",
          "Duration of LLM calls, retries and fallbacks included.",
          {{"provider", record.provider}, {"model", record.model}, {"operation", operation}},
          DurationBuckets())
      .Observe(static_cast<double>(record.latency_us) / 1e6);
  if (sink != nullptr) sink->Record(record);
}

}  // namespace omniforge::llm
