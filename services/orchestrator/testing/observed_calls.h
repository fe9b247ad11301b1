// The turn's downstream calls as the services they reach see them, for
// tests of what a turn asks: each collaborator wrapped (ObservedMemory,
// ObservedUnderstanding, ObservedTools, ObservedFlowStore) logs in a
// CallLog what was called, when on the test's clock, the deadline it
// carried, and whether it could be, and was, cancelled while it ran.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "libs/core/call.h"
#include "libs/core/call_cancellation.h"
#include "libs/core/clock.h"
#include "services/orchestrator/downstream/downstream.h"
#include "services/orchestrator/flow/flow_store.h"

namespace omniforge::orchestrator::testing {

// What one downstream call carried, as the service it reached saw it.
struct SeenCall {
  std::string what;    // the method (and the tool, or the role of a message)
  core::TimePoint at;  // when it started
  core::TimePoint deadline;
  bool cancellable = false;  // it carried a cancel signal
  bool saw_cancel = false;   // that signal fired before the call returned
};

// Keeps what each downstream call carried, in the order they returned.
// Thread-safe: a turn calls from side threads too.
class CallLog final {
 public:
  explicit CallLog(const core::Clock& clock) : clock_(clock) {}

  // Runs `run` as a client would run `call`: subscribed to its cancel signal.
  template <typename Run>
  auto Observe(std::string what, const core::Call& call, Run run) {
    const core::TimePoint at = clock_.Now();
    std::atomic<bool> fired{false};
    core::CancelSubscription cancels(call.cancel, [&fired] { fired = true; });
    auto result = run();
    cancels.Reset();
    absl::MutexLock lock(&mu_);
    calls_.push_back({std::move(what), at, call.deadline, call.cancel != nullptr, fired.load()});
    return result;
  }
  std::vector<SeenCall> calls() const {
    absl::MutexLock lock(&mu_);
    return calls_;
  }
  // The one call named `what` (a test failure when there is not exactly one).
  SeenCall Only(const std::string& what) const {
    std::vector<SeenCall> found;
    for (const SeenCall& call : calls()) {
      if (call.what == what) found.push_back(call);
    }
    EXPECT_EQ(found.size(), 1u) << what;
    return found.empty() ? SeenCall{} : found.front();
  }

 private:
  const core::Clock& clock_;
  mutable absl::Mutex mu_;
  std::vector<SeenCall> calls_ ABSL_GUARDED_BY(mu_);
};

class ObservedMemory final : public Memory {
 public:
  ObservedMemory(Memory& inner, CallLog& log) : inner_(inner), log_(log) {}
  absl::StatusOr<convpb::CreateConversationResponse> CreateConversation(
      const core::Call& call, const convpb::CreateConversationRequest& request) override {
    return log_.Observe("CreateConversation", call,
                        [&] { return inner_.CreateConversation(call, request); });
  }
  absl::StatusOr<convpb::GetConversationResponse> GetConversation(
      const core::Call& call, const convpb::GetConversationRequest& request) override {
    return log_.Observe("GetConversation", call,
                        [&] { return inner_.GetConversation(call, request); });
  }
  absl::StatusOr<convpb::ListConversationsResponse> ListConversations(
      const core::Call& call, const convpb::ListConversationsRequest& request) override {
    return log_.Observe("ListConversations", call,
                        [&] { return inner_.ListConversations(call, request); });
  }
  absl::StatusOr<convpb::AppendMessageResponse> AppendMessage(
      const core::Call& call, const convpb::AppendMessageRequest& request) override {
    return log_.Observe("AppendMessage " + convpb::Role_Name(request.role()), call,
                        [&] { return inner_.AppendMessage(call, request); });
  }
  absl::StatusOr<convpb::AppendMessagesResponse> AppendMessages(
      const core::Call& call, const convpb::AppendMessagesRequest& request) override {
    return log_.Observe("AppendMessages", call,
                        [&] { return inner_.AppendMessages(call, request); });
  }
  absl::StatusOr<convpb::ListMessagesResponse> ListMessages(
      const core::Call& call, const convpb::ListMessagesRequest& request) override {
    return log_.Observe("ListMessages", call, [&] { return inner_.ListMessages(call, request); });
  }
  absl::StatusOr<convpb::GetContextWindowResponse> GetContextWindow(
      const core::Call& call, const convpb::GetContextWindowRequest& request) override {
    return log_.Observe("GetContextWindow", call,
                        [&] { return inner_.GetContextWindow(call, request); });
  }
  absl::StatusOr<convpb::DeleteConversationResponse> DeleteConversation(
      const core::Call& call, const convpb::DeleteConversationRequest& request) override {
    return log_.Observe("DeleteConversation", call,
                        [&] { return inner_.DeleteConversation(call, request); });
  }

 private:
  Memory& inner_;
  CallLog& log_;
};

class ObservedUnderstanding final : public Understanding {
 public:
  ObservedUnderstanding(Understanding& inner, CallLog& log) : inner_(inner), log_(log) {}
  absl::StatusOr<intentpb::AnalyzeIntentResponse> AnalyzeIntent(
      const core::Call& call, const intentpb::AnalyzeIntentRequest& request) override {
    return log_.Observe("AnalyzeIntent", call, [&] { return inner_.AnalyzeIntent(call, request); });
  }

 private:
  Understanding& inner_;
  CallLog& log_;
};

// InvokeToolThen is the interface's own: it answers through InvokeTool.
class ObservedTools final : public Tools {
 public:
  ObservedTools(Tools& inner, CallLog& log) : inner_(inner), log_(log) {}
  absl::StatusOr<execpb::ListToolsResponse> ListTools(
      const core::Call& call, const execpb::ListToolsRequest& request) override {
    return log_.Observe("ListTools", call, [&] { return inner_.ListTools(call, request); });
  }
  absl::StatusOr<execpb::InvokeToolResponse> InvokeTool(
      const core::Call& call, const execpb::InvokeToolRequest& request) override {
    return log_.Observe("InvokeTool " + request.tool_name(), call,
                        [&] { return inner_.InvokeTool(call, request); });
  }

 private:
  Tools& inner_;
  CallLog& log_;
};

class ObservedFlowStore final : public FlowStore {
 public:
  ObservedFlowStore(FlowStore& inner, CallLog& log) : inner_(inner), log_(log) {}
  absl::StatusOr<FlowState> Load(const core::Call& call, const std::string& flow_id) override {
    return log_.Observe("LoadFlow", call, [&] { return inner_.Load(call, flow_id); });
  }
  absl::Status Save(const core::Call& call, const FlowState& state,
                    int64_t expected_revision) override {
    return log_.Observe("SaveFlow", call,
                        [&] { return inner_.Save(call, state, expected_revision); });
  }
  absl::StatusOr<int> Forget(const core::Call& call, const std::string& conversation_id) override {
    return log_.Observe("ForgetFlows", call, [&] { return inner_.Forget(call, conversation_id); });
  }

 private:
  FlowStore& inner_;
  CallLog& log_;
};

}  // namespace omniforge::orchestrator::testing
