// The gRPC face of the conversation service: parses requests, reads the
// caller identity, converts protos to ConversationLogic calls and back, and
// keeps blocking work off gRPC's threads.
//
// Methods receive raw bytes and parse them here, so a request gRPC itself
// would reject without a word (a string field holding invalid UTF-8) gets a
// clear INVALID_ARGUMENT instead.
#pragma once

#include <functional>

#include "libs/core/thread_pool.h"
#include "omniforge/conversation/v1/conversation_service.grpc.pb.h"
#include "services/conversation/src/conversation_logic.h"

namespace omniforge::conversation {

namespace pb = ::omniforge::conversation::v1;

using RawConversationService = pb::ConversationService::WithRawCallbackMethod_CreateConversation<
    pb::ConversationService::WithRawCallbackMethod_GetConversation<
        pb::ConversationService::WithRawCallbackMethod_ListConversations<
            pb::ConversationService::WithRawCallbackMethod_AppendMessage<
                pb::ConversationService::WithRawCallbackMethod_ListMessages<
                    pb::ConversationService::WithRawCallbackMethod_GetContextWindow<
                        pb::ConversationService::WithRawCallbackMethod_DeleteConversation<
                            pb::ConversationService::WithRawCallbackMethod_SetDialogueStatus<
                                pb::ConversationService::WithRawCallbackMethod_AppendMessages<
                                    pb::ConversationService::Service>>>>>>>>>;

class ConversationGrpcService final : public RawConversationService {
 public:
  // `workers` runs the blocking calls; both must outlive the service.
  ConversationGrpcService(ConversationLogic& logic, core::ThreadPool& workers)
      : logic_(logic), workers_(workers) {}

  using Reactor = grpc::ServerUnaryReactor;
  using Raw = grpc::ByteBuffer;
  Reactor* CreateConversation(grpc::CallbackServerContext* c, const Raw* q, Raw* r) override;
  Reactor* GetConversation(grpc::CallbackServerContext* c, const Raw* q, Raw* r) override;
  Reactor* ListConversations(grpc::CallbackServerContext* c, const Raw* q, Raw* r) override;
  Reactor* AppendMessage(grpc::CallbackServerContext* c, const Raw* q, Raw* r) override;
  Reactor* AppendMessages(grpc::CallbackServerContext* c, const Raw* q, Raw* r) override;
  Reactor* ListMessages(grpc::CallbackServerContext* c, const Raw* q, Raw* r) override;
  Reactor* GetContextWindow(grpc::CallbackServerContext* c, const Raw* q, Raw* r) override;
  Reactor* DeleteConversation(grpc::CallbackServerContext* c, const Raw* q, Raw* r) override;
  Reactor* SetDialogueStatus(grpc::CallbackServerContext* c, const Raw* q, Raw* r) override;

 private:
  ConversationLogic& logic_;
  core::ThreadPool& workers_;
};

}  // namespace omniforge::conversation
