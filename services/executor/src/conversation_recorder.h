// DialogueRecorder through the conversation service (gRPC), on one
// long-lived channel. Thread-safe.
#pragma once

#include <chrono>
#include <memory>

#include "omniforge/conversation/v1/conversation_service.grpc.pb.h"
#include "services/executor/src/dialogue_recorder.h"

namespace omniforge::executor {

class ConversationRecorder final : public DialogueRecorder {
 public:
  ConversationRecorder(std::shared_ptr<grpc::Channel> channel, std::chrono::milliseconds timeout);

  absl::StatusOr<std::string> Open(const core::Identity& who,
                                   const std::string& parent_conversation_id,
                                   const std::string& title,
                                   const std::string& metadata_json) override;
  absl::Status Append(const core::Identity& who, const std::string& dialogue_id, Speaker speaker,
                      const std::string& content, const std::string& metadata_json,
                      const std::string& idempotency_key) override;
  absl::Status End(const core::Identity& who, const std::string& dialogue_id,
                   Outcome outcome) override;

 private:
  std::unique_ptr<grpc::ClientContext> Context(const core::Identity& who) const;

  std::unique_ptr<::omniforge::conversation::v1::ConversationService::Stub> stub_;
  std::chrono::milliseconds timeout_;
};

}  // namespace omniforge::executor
