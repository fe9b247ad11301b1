// What a chat turn needs from the other services: memory (conversation),
// understanding (intent) and hands (executor). Interfaces, so that the turn
// logic is tested on fakes and never includes gRPC; grpc_downstream.h has
// the real clients.
//
// Every call takes its core::Call: whom it acts for, when it ends (a time
// point) and what cancels it (call.cancel; null: nothing). Errors are the downstream
// service's own status (NOT_FOUND, INVALID_ARGUMENT, ...) or UNAVAILABLE /
// DEADLINE_EXCEEDED when it cannot be reached in time. Implementations are
// thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/core/call.h"
#include "omniforge/conversation/v1/conversation_service.pb.h"
#include "omniforge/executor/v1/executor_service.pb.h"
#include "omniforge/intent/v1/intent_service.pb.h"

namespace omniforge::orchestrator {

namespace convpb = ::omniforge::conversation::v1;
namespace intentpb = ::omniforge::intent::v1;
namespace execpb = ::omniforge::executor::v1;

class Memory {
 public:
  virtual ~Memory() = default;
  virtual absl::StatusOr<convpb::CreateConversationResponse> CreateConversation(
      const core::Call& call, const convpb::CreateConversationRequest& request) = 0;
  virtual absl::StatusOr<convpb::GetConversationResponse> GetConversation(
      const core::Call& call, const convpb::GetConversationRequest& request) = 0;
  virtual absl::StatusOr<convpb::ListConversationsResponse> ListConversations(
      const core::Call& call, const convpb::ListConversationsRequest& request) = 0;
  virtual absl::StatusOr<convpb::AppendMessageResponse> AppendMessage(
      const core::Call& call, const convpb::AppendMessageRequest& request) = 0;
  // Appends the request's messages in their order, each as AppendMessage
  // does, with one result per message. This default sends them one at a
  // time and, once storage cannot be reached, answers the rest with that
  // status unsent; the conversation service's client sends them in one call.
  virtual absl::StatusOr<convpb::AppendMessagesResponse> AppendMessages(
      const core::Call& call, const convpb::AppendMessagesRequest& request);
  virtual absl::StatusOr<convpb::ListMessagesResponse> ListMessages(
      const core::Call& call, const convpb::ListMessagesRequest& request) = 0;
  virtual absl::StatusOr<convpb::GetContextWindowResponse> GetContextWindow(
      const core::Call& call, const convpb::GetContextWindowRequest& request) = 0;
  virtual absl::StatusOr<convpb::DeleteConversationResponse> DeleteConversation(
      const core::Call& call, const convpb::DeleteConversationRequest& request) = 0;
};

class Understanding {
 public:
  virtual ~Understanding() = default;
  virtual absl::StatusOr<intentpb::AnalyzeIntentResponse> AnalyzeIntent(
      const core::Call& call, const intentpb::AnalyzeIntentRequest& request) = 0;
};

class Tools {
 public:
  virtual ~Tools() = default;
  virtual absl::StatusOr<execpb::ListToolsResponse> ListTools(
      const core::Call& call, const execpb::ListToolsRequest& request) = 0;
  virtual absl::StatusOr<execpb::InvokeToolResponse> InvokeTool(
      const core::Call& call, const execpb::InvokeToolRequest& request) = 0;
  // The same, answered through `done` (once, on another thread or before
  // this returns), so that the caller can work while the tool runs.
  // `call.cancel` cancels it too, and must outlive it.
  using ToolDone = std::function<void(absl::StatusOr<execpb::InvokeToolResponse>)>;
  // (`done` is taken by value: the overrides keep it until the tool answers.)
  virtual void InvokeToolThen(const core::Call& call, const execpb::InvokeToolRequest& request,
                              ToolDone done) {  // NOLINT(performance-unnecessary-value-param)
    done(InvokeTool(call, request));
  }
};

}  // namespace omniforge::orchestrator
