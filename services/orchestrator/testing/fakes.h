// Fakes of every interface a turn uses, for unit tests of the turn and its
// stages without gRPC, PostgreSQL or threads of their own: conversation
// storage (FakeMemory), the intent service (FakeUnderstanding), the
// executor (FakeTools), the flow store, the error log, the clock and the
// event stream. Each records what it was asked, and can be told to fail
// (observed_calls.h logs the core::Call each call comes with).
// Thread-safe: a turn calls some of them from side threads.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "libs/core/clock.h"
#include "omniforge/llm/v1/model_call.pb.h"
#include "services/orchestrator/downstream/downstream.h"
#include "services/orchestrator/flow/flow_store.h"
#include "services/orchestrator/turn/error_log.h"
#include "services/orchestrator/turn/turn_runner.h"

namespace omniforge::orchestrator::testing {

namespace pb = ::omniforge::orchestrator::v1;

// A clock the test moves. Starts at a fixed, realistic time.
class FakeClock final : public core::Clock {
 public:
  core::TimePoint Now() const override;
  void Advance(std::chrono::microseconds by);

 private:
  mutable absl::Mutex mu_;
  core::TimePoint now_ ABSL_GUARDED_BY(mu_) =
      core::TimePointFromMicros(1'790'000'000'000'000);  // 2026-09-21
};

// Conversations and their messages in memory, as the conversation service
// keeps them: a conversation belongs to its creator (NOT_FOUND for anyone
// else), a message is stored once per idempotency key (the second append is
// answered `deduplicated` with the first), seq grows by one.
class FakeMemory final : public Memory {
 public:
  absl::StatusOr<convpb::CreateConversationResponse> CreateConversation(
      const core::Call& call, const convpb::CreateConversationRequest& request) override;
  absl::StatusOr<convpb::GetConversationResponse> GetConversation(
      const core::Call& call, const convpb::GetConversationRequest& request) override;
  absl::StatusOr<convpb::ListConversationsResponse> ListConversations(
      const core::Call& call, const convpb::ListConversationsRequest& request) override;
  absl::StatusOr<convpb::AppendMessageResponse> AppendMessage(
      const core::Call& call, const convpb::AppendMessageRequest& request) override;
  absl::StatusOr<convpb::ListMessagesResponse> ListMessages(
      const core::Call& call, const convpb::ListMessagesRequest& request) override;
  absl::StatusOr<convpb::GetContextWindowResponse> GetContextWindow(
      const core::Call& call, const convpb::GetContextWindowRequest& request) override;
  absl::StatusOr<convpb::DeleteConversationResponse> DeleteConversation(
      const core::Call& call, const convpb::DeleteConversationRequest& request) override;

  // Every call fails UNAVAILABLE while set.
  void SetUnreachable(bool unreachable);
  // The messages of a conversation, oldest first.
  std::vector<convpb::Message> Messages(const std::string& conversation_id) const;
  int appends() const;

 private:
  struct Conversation {
    std::string tenant_id;
    std::string user_id;
    std::vector<convpb::Message> messages;
    std::map<std::string, size_t> by_key;  // idempotency key -> index
  };
  absl::StatusOr<Conversation*> Owned(const core::Identity& who, const std::string& id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::map<std::string, Conversation> conversations_ ABSL_GUARDED_BY(mu_);
  bool unreachable_ ABSL_GUARDED_BY(mu_) = false;
  int appends_ ABSL_GUARDED_BY(mu_) = 0;
};

// The intent service: answers every request with what `answer` makes of
// it (and the model calls it was told the analysis made), and keeps the
// requests. An analysis that says nothing of the reply gets the one the
// service's own rules read (services/intent/src/reply.h) from the request
// and the analysis, as the service does.
class FakeUnderstanding final : public Understanding {
 public:
  using Answer = std::function<absl::StatusOr<intentpb::IntentAnalysis>(
      const intentpb::AnalyzeIntentRequest&)>;
  explicit FakeUnderstanding(Answer answer) : answer_(std::move(answer)) {}
  // Answers with this action type (and entities) whatever the message.
  static Answer Always(intentpb::ActionType action,
                       std::map<std::string, std::string> entities = {});
  // Reads every message as a delete (MANAGE_PLATFORM, operation delete) of the agent it
  // names: beta-digest when it says "beta", else alpha-reports.
  static Answer DeleteOfAlphaOrBeta();
  // Reads the answer to a question with options as the intent service
  // does when the message is an option's words or its number (ANSWER with
  // its position; 0 for neither); any other message as `otherwise`.
  static Answer PicksOptions(Answer otherwise);

  absl::StatusOr<intentpb::AnalyzeIntentResponse> AnalyzeIntent(
      const core::Call& call, const intentpb::AnalyzeIntentRequest& request) override;
  std::vector<intentpb::AnalyzeIntentRequest> requests() const;
  // Runs before each answer (e.g. a test moving a fake clock).
  void OnCall(std::function<void()> hook);
  // Every answer carries these model calls, as the service reports those
  // its analysis made.
  void AnswerWithCalls(std::vector<::omniforge::llm::v1::ModelCall> calls);

 private:
  Answer answer_;
  mutable absl::Mutex mu_;
  std::vector<::omniforge::llm::v1::ModelCall> model_calls_ ABSL_GUARDED_BY(mu_);
  std::vector<intentpb::AnalyzeIntentRequest> requests_ ABSL_GUARDED_BY(mu_);
  std::function<void()> on_call_ ABSL_GUARDED_BY(mu_);
};

// The executor: a catalog of tools with their risk, each answered by a
// handler (default: list_agents lists `agents`, any other tool returns
// {"ok": true}); keeps every invocation.
class FakeTools final : public Tools {
 public:
  using Handler =
      std::function<absl::StatusOr<execpb::InvokeToolResponse>(const execpb::InvokeToolRequest&)>;
  FakeTools();
  void AddTool(const std::string& name, execpb::ToolRisk risk, Handler handler = nullptr);
  void SetAgents(nlohmann::json agents);

  absl::StatusOr<execpb::ListToolsResponse> ListTools(
      const core::Call& call, const execpb::ListToolsRequest& request) override;
  absl::StatusOr<execpb::InvokeToolResponse> InvokeTool(
      const core::Call& call, const execpb::InvokeToolRequest& request) override;
  // The invocations, in order (list_agents included).
  std::vector<execpb::InvokeToolRequest> calls() const;
  // The invocations of one tool.
  std::vector<execpb::InvokeToolRequest> CallsOf(const std::string& tool) const;
  // Runs before each invocation.
  void OnCall(std::function<void(const execpb::InvokeToolRequest&)> hook);

 private:
  mutable absl::Mutex mu_;
  std::vector<execpb::ToolDescriptor> catalog_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Handler> handlers_ ABSL_GUARDED_BY(mu_);
  nlohmann::json agents_ ABSL_GUARDED_BY(mu_) = nlohmann::json::array();
  std::vector<execpb::InvokeToolRequest> calls_ ABSL_GUARDED_BY(mu_);
  std::function<void(const execpb::InvokeToolRequest&)> on_call_ ABSL_GUARDED_BY(mu_);
};

class FakeErrorLog final : public TurnErrorLog {
 public:
  void Record(TurnError error) override;
  std::vector<TurnError> errors() const;

 private:
  mutable absl::Mutex mu_;
  std::vector<TurnError> errors_ ABSL_GUARDED_BY(mu_);
};

// The turn's events, as the client receives them.
class RecordingSink final : public EventSink {
 public:
  void Emit(pb::ChatEvent event) override { events.push_back(std::move(event)); }
  // The events of one kind, in order.
  std::vector<pb::ChatEvent> Of(pb::ChatEvent::EventCase kind) const;
  // The error codes of the error events, in order.
  std::vector<pb::ChatErrorCode> ErrorCodes() const;
  // The agent states, in order.
  std::vector<pb::AgentState> States() const;
  std::string Text() const;

  std::vector<pb::ChatEvent> events;
};

}  // namespace omniforge::orchestrator::testing
