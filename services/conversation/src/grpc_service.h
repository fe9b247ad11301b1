// The gRPC face of the conversation service: reads the caller identity,
// converts protos to ConversationLogic calls and back, and keeps blocking
// work off gRPC's threads.
#pragma once

#include "libs/core/thread_pool.h"
#include "omniforge/conversation/v1/conversation_service.grpc.pb.h"
#include "services/conversation/src/conversation_logic.h"

namespace omniforge::conversation {

namespace pb = ::omniforge::conversation::v1;

class ConversationGrpcService final : public pb::ConversationService::CallbackService {
 public:
  // `workers` runs the blocking calls; both must outlive the service.
  ConversationGrpcService(ConversationLogic& logic, core::ThreadPool& workers)
      : logic_(logic), workers_(workers) {}

  grpc::ServerUnaryReactor* CreateConversation(grpc::CallbackServerContext* context,
                                               const pb::CreateConversationRequest* request,
                                               pb::CreateConversationResponse* response) override;
  grpc::ServerUnaryReactor* GetConversation(grpc::CallbackServerContext* context,
                                            const pb::GetConversationRequest* request,
                                            pb::GetConversationResponse* response) override;
  grpc::ServerUnaryReactor* ListConversations(grpc::CallbackServerContext* context,
                                              const pb::ListConversationsRequest* request,
                                              pb::ListConversationsResponse* response) override;
  grpc::ServerUnaryReactor* AppendMessage(grpc::CallbackServerContext* context,
                                          const pb::AppendMessageRequest* request,
                                          pb::AppendMessageResponse* response) override;
  grpc::ServerUnaryReactor* ListMessages(grpc::CallbackServerContext* context,
                                         const pb::ListMessagesRequest* request,
                                         pb::ListMessagesResponse* response) override;
  grpc::ServerUnaryReactor* GetContextWindow(grpc::CallbackServerContext* context,
                                             const pb::GetContextWindowRequest* request,
                                             pb::GetContextWindowResponse* response) override;
  grpc::ServerUnaryReactor* DeleteConversation(grpc::CallbackServerContext* context,
                                               const pb::DeleteConversationRequest* request,
                                               pb::DeleteConversationResponse* response) override;

 private:
  // Runs `body` on a worker with the caller's identity and finishes the call
  // with its status.
  grpc::ServerUnaryReactor* Blocking(grpc::CallbackServerContext* context, const char* method,
                                     std::function<absl::Status(const core::Identity&)> body);

  ConversationLogic& logic_;
  core::ThreadPool& workers_;
};

}  // namespace omniforge::conversation
