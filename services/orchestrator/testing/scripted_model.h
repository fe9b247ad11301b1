// A planner model that answers from a script, for unit tests of the turn
// with a model: each call takes the next scripted answer (text, or tool
// calls), streams its text as one piece, and is kept for inspection. An
// unscripted call fails as a provider error would; a caller that stops the
// stream ends the call CANCELLED, as with the LLM client.
#pragma once

#include <deque>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "libs/llm/chat_model.h"
#include "libs/llm/usage.h"

namespace omniforge::orchestrator::testing {

class ScriptedModel final : public llm::ChatModel {
 public:
  // The model writes `text` and stops.
  void PushText(const std::string& text);
  // The model calls `tool` with `arguments`.
  void PushToolCall(const std::string& tool, const nlohmann::json& arguments);
  // The model calls each (tool, arguments) in one answer.
  void PushToolCalls(const std::vector<std::pair<std::string, nlohmann::json>>& calls);
  // Runs at the start of each call, before it answers (e.g. a test
  // cancelling the turn while the model writes).
  void OnCall(std::function<void()> hook);

  absl::StatusOr<llm::ChatResponse> Complete(const llm::ChatRequest& request,
                                             const llm::CallContext& context) override;
  absl::StatusOr<llm::ChatResponse> Stream(const llm::ChatRequest& request,
                                           const llm::CallContext& context,
                                           const llm::StreamCallback& on_delta) override;
  std::vector<llm::ChatRequest> requests() const;
  // Each call is reported on the calling thread as the LLM client reports
  // it (its operation, tokens and outcome): to the call's own usage
  // (llm::CallContext::usage) when it has one, else to `sink` (not owned).
  void ReportUsageTo(llm::UsageSink* sink);

 private:
  mutable absl::Mutex mu_;
  std::deque<llm::ChatResponse> script_ ABSL_GUARDED_BY(mu_);
  std::vector<llm::ChatRequest> requests_ ABSL_GUARDED_BY(mu_);
  int next_call_id_ ABSL_GUARDED_BY(mu_) = 0;
  llm::UsageSink* usage_sink_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::function<void()> on_call_ ABSL_GUARDED_BY(mu_);
};

}  // namespace omniforge::orchestrator::testing
