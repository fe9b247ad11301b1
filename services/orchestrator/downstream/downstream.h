// What a chat turn needs from the other services: memory (conversation),
// understanding (intent) and hands (executor). Interfaces, so that the turn
// logic is tested on fakes and never includes gRPC; grpc_downstream.h has
// the real clients.
//
// Every call acts for `who` and ends by `deadline` (absolute, microseconds
// since the epoch as core::NowMicros gives). Errors are the downstream
// service's own status (NOT_FOUND, INVALID_ARGUMENT, ...) or UNAVAILABLE /
// DEADLINE_EXCEEDED when it cannot be reached in time. Implementations are
// thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/core/identity.h"
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
      const core::Identity& who, const convpb::CreateConversationRequest& request,
      int64_t deadline) = 0;
  virtual absl::StatusOr<convpb::GetConversationResponse> GetConversation(
      const core::Identity& who, const convpb::GetConversationRequest& request,
      int64_t deadline) = 0;
  virtual absl::StatusOr<convpb::ListConversationsResponse> ListConversations(
      const core::Identity& who, const convpb::ListConversationsRequest& request,
      int64_t deadline) = 0;
  virtual absl::StatusOr<convpb::AppendMessageResponse> AppendMessage(
      const core::Identity& who, const convpb::AppendMessageRequest& request, int64_t deadline) = 0;
  virtual absl::StatusOr<convpb::ListMessagesResponse> ListMessages(
      const core::Identity& who, const convpb::ListMessagesRequest& request, int64_t deadline) = 0;
  virtual absl::StatusOr<convpb::GetContextWindowResponse> GetContextWindow(
      const core::Identity& who, const convpb::GetContextWindowRequest& request,
      int64_t deadline) = 0;
};

class Understanding {
 public:
  virtual ~Understanding() = default;
  virtual absl::StatusOr<intentpb::AnalyzeIntentResponse> AnalyzeIntent(
      const core::Identity& who, const intentpb::AnalyzeIntentRequest& request,
      int64_t deadline) = 0;
};

class Tools {
 public:
  virtual ~Tools() = default;
  virtual absl::StatusOr<execpb::ListToolsResponse> ListTools(
      const core::Identity& who, const execpb::ListToolsRequest& request, int64_t deadline) = 0;
  virtual absl::StatusOr<execpb::InvokeToolResponse> InvokeTool(
      const core::Identity& who, const execpb::InvokeToolRequest& request, int64_t deadline) = 0;
  // The same, answered through `done` (once, on another thread or before
  // this returns), so that the caller can work while the tool runs. The
  // caller's cancel signal (core::CallCancellation()) cancels it too, and
  // must outlive it.
  using ToolDone = std::function<void(absl::StatusOr<execpb::InvokeToolResponse>)>;
  virtual void InvokeToolThen(const core::Identity& who, const execpb::InvokeToolRequest& request,
                              int64_t deadline, ToolDone done) {
    done(InvokeTool(who, request, deadline));
  }
};

}  // namespace omniforge::orchestrator
