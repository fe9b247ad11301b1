#include "services/executor/src/conversation_recorder.h"

#include <grpcpp/channel.h>

#include "libs/core/call_deadline.h"
#include "libs/core/grpc_identity.h"
#include "libs/core/grpc_status.h"
#include "libs/core/struct_json.h"

namespace omniforge::executor {
namespace {

namespace cpb = ::omniforge::conversation::v1;

absl::Status FromGrpc(const grpc::Status& status, const char* what) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      std::string(what) + ": " + status.error_message());
}

}  // namespace

ConversationRecorder::ConversationRecorder(std::shared_ptr<grpc::Channel> channel,
                                           std::chrono::milliseconds timeout)
    : stub_(cpb::ConversationService::NewStub(std::move(channel))), timeout_(timeout) {}

std::unique_ptr<grpc::ClientContext> ConversationRecorder::Context(
    const core::Identity& who) const {
  auto context = std::make_unique<grpc::ClientContext>();
  core::AttachIdentity(*context, who, core::kConversationAudience);
  auto deadline = std::chrono::system_clock::now() + timeout_;
  if (auto call = core::CallDeadline(); call.has_value()) deadline = std::min(deadline, *call);
  context->set_deadline(deadline);
  return context;
}

absl::StatusOr<std::string> ConversationRecorder::Open(const core::Identity& who,
                                                       const std::string& parent_conversation_id,
                                                       const std::string& title,
                                                       const std::string& metadata_json) {
  cpb::CreateConversationRequest request;
  request.set_title(title);
  request.set_kind(cpb::CONVERSATION_KIND_AGENT_DIALOGUE);
  request.set_parent_conversation_id(parent_conversation_id);
  if (!core::JsonTextToStruct(metadata_json, request.mutable_metadata())) {
    return absl::InvalidArgumentError("dialogue metadata is not a JSON object");
  }
  cpb::CreateConversationResponse response;
  if (absl::Status s = FromGrpc(stub_->CreateConversation(Context(who).get(), request, &response),
                                "creating the agent dialogue");
      !s.ok()) {
    return s;
  }
  return response.conversation().id();
}

absl::Status ConversationRecorder::Append(const core::Identity& who, const std::string& dialogue_id,
                                          Speaker speaker, const std::string& content,
                                          const std::string& metadata_json,
                                          const std::string& idempotency_key) {
  cpb::AppendMessageRequest request;
  request.set_conversation_id(dialogue_id);
  request.set_role(speaker == Speaker::kPlanner ? cpb::ROLE_PLANNER : cpb::ROLE_EXECUTOR);
  request.set_content(content);
  request.set_idempotency_key(idempotency_key);
  if (!core::JsonTextToStruct(metadata_json, request.mutable_metadata())) {
    return absl::InvalidArgumentError("message metadata is not a JSON object");
  }
  cpb::AppendMessageResponse response;
  return FromGrpc(stub_->AppendMessage(Context(who).get(), request, &response),
                  "storing a dialogue message");
}

absl::Status ConversationRecorder::End(const core::Identity& who, const std::string& dialogue_id,
                                       Outcome outcome) {
  cpb::SetDialogueStatusRequest request;
  request.set_conversation_id(dialogue_id);
  switch (outcome) {
    case Outcome::kCompleted:
      request.set_status(cpb::DIALOGUE_STATUS_COMPLETED);
      break;
    case Outcome::kFailed:
      request.set_status(cpb::DIALOGUE_STATUS_FAILED);
      break;
    case Outcome::kCancelled:
      request.set_status(cpb::DIALOGUE_STATUS_CANCELLED);
      break;
  }
  cpb::SetDialogueStatusResponse response;
  return FromGrpc(stub_->SetDialogueStatus(Context(who).get(), request, &response),
                  "ending the agent dialogue");
}

}  // namespace omniforge::executor
