// Test doubles for the client layer's unit tests: a clock whose sleeps
// advance time instantly, scripted randomness, and a ChatModel that replays
// queued answers, errors and stream deltas.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/llm/chat_model.h"
#include "libs/llm/errors.h"
#include "libs/llm/retry.h"
#include "libs/llm/usage.h"

namespace omniforge::llm {

class FakeClock final : public Clock {
 public:
  explicit FakeClock(int64_t now = 1'700'000'000'000'000) : now_(now) {}

  int64_t NowMicros() override {
    std::lock_guard<std::mutex> lock(mu_);
    return now_;
  }

  bool SleepFor(int64_t micros, const std::function<bool()>& cancelled) override {
    if (cancelled && cancelled()) return false;
    std::lock_guard<std::mutex> lock(mu_);
    sleeps_.push_back(micros);
    now_ += micros;
    return true;
  }

  void Advance(int64_t micros) {
    std::lock_guard<std::mutex> lock(mu_);
    now_ += micros;
  }

  std::vector<int64_t> sleeps() {
    std::lock_guard<std::mutex> lock(mu_);
    return sleeps_;
  }

 private:
  std::mutex mu_;
  int64_t now_;
  std::vector<int64_t> sleeps_;
};

// Returns `value` every time.
class FixedRandom final : public Random {
 public:
  explicit FixedRandom(double value) : value_(value) {}
  double Uniform() override { return value_; }

 private:
  double value_;
};

// One scripted call: the deltas a stream delivers, then the result. The call
// takes `latency_micros` of fake time, or runs into its deadline (kTimeout)
// when that comes first.
struct ScriptedCall {
  std::vector<StreamDelta> deltas;
  absl::StatusOr<ChatResponse> result;
  int64_t latency_micros = 0;
};

inline ChatResponse Answer(std::string content, TokenUsage usage = {}) {
  ChatResponse response;
  response.content = std::move(content);
  response.usage = usage;
  response.finish_reason = FinishReason::kStop;
  return response;
}

inline StreamDelta TextDelta(std::string text) {
  StreamDelta delta;
  delta.text = std::move(text);
  return delta;
}

class FakeChatModel final : public ChatModel {
 public:
  explicit FakeChatModel(FakeClock* clock) : clock_(clock) {}

  void Push(ScriptedCall call) {
    std::lock_guard<std::mutex> lock(mu_);
    script_.push_back(std::move(call));
  }
  void PushAnswer(std::string content, TokenUsage usage = {}, int64_t latency_micros = 0) {
    Push({{}, Answer(std::move(content), usage), latency_micros});
  }
  void PushError(LlmErrorKind kind, std::optional<int64_t> retry_after_micros = std::nullopt) {
    Push({{}, LlmError(kind, "scripted failure", retry_after_micros), 0});
  }

  absl::StatusOr<ChatResponse> Complete(const ChatRequest& request,
                                        const CallContext& context) override {
    return Run(request, context, nullptr);
  }

  absl::StatusOr<ChatResponse> Stream(const ChatRequest& request, const CallContext& context,
                                      const StreamCallback& on_delta) override {
    return Run(request, context, &on_delta);
  }

  std::vector<ChatRequest> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  std::vector<CallContext> contexts() {
    std::lock_guard<std::mutex> lock(mu_);
    return contexts_;
  }
  size_t calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_.size();
  }

 private:
  absl::StatusOr<ChatResponse> Run(const ChatRequest& request, const CallContext& context,
                                   const StreamCallback* on_delta) {
    ScriptedCall call;
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(request);
      contexts_.push_back(context);
      if (script_.empty()) return LlmError(LlmErrorKind::kServerError, "unscripted call");
      call = std::move(script_.front());
      script_.pop_front();
    }
    if (on_delta != nullptr) {
      for (const StreamDelta& delta : call.deltas) {
        if (!(*on_delta)(delta)) return LlmError(LlmErrorKind::kCancelled, "stopped by callback");
      }
    }
    const int64_t now = clock_->NowMicros();
    if (context.deadline_micros > 0 && now + call.latency_micros > context.deadline_micros) {
      clock_->Advance(context.deadline_micros - now);
      return LlmError(LlmErrorKind::kTimeout, "attempt deadline");
    }
    clock_->Advance(call.latency_micros);
    return std::move(call.result);
  }

  FakeClock* const clock_;
  std::mutex mu_;
  std::deque<ScriptedCall> script_;
  std::vector<ChatRequest> requests_;
  std::vector<CallContext> contexts_;
};

class RecordingUsageSink final : public UsageSink {
 public:
  void Record(const UsageRecord& record) override {
    std::lock_guard<std::mutex> lock(mu_);
    records_.push_back(record);
  }
  std::vector<UsageRecord> records() {
    std::lock_guard<std::mutex> lock(mu_);
    return records_;
  }

 private:
  std::mutex mu_;
  std::vector<UsageRecord> records_;
};

}  // namespace omniforge::llm
