#include "services/conversation/src/grpc_service.h"

#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/time_util.h>

#include "libs/core/grpc_identity.h"
#include "libs/core/grpc_status.h"
#include "libs/core/server.h"

namespace omniforge::conversation {
namespace {

using google::protobuf::util::TimeUtil;

absl::StatusOr<std::string> MetadataToJson(const pb::CreateConversationRequest& r) {
  if (!r.has_metadata()) return std::string();
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(r.metadata(), &json).ok()) {
    return absl::InvalidArgumentError("metadata cannot be represented as JSON");
  }
  return json;
}

absl::StatusOr<std::string> StructToJson(const google::protobuf::Struct& s, bool present) {
  if (!present) return std::string();
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(s, &json).ok()) {
    return absl::InvalidArgumentError("metadata cannot be represented as JSON");
  }
  return json;
}

void JsonToStruct(const std::string& json, google::protobuf::Struct* out) {
  // Stored metadata was validated as a JSON object on the way in.
  (void)google::protobuf::util::JsonStringToMessage(json, out);
}

void ToProto(const Conversation& c, pb::Conversation* out) {
  out->set_id(c.id);
  out->set_tenant_id(c.tenant_id);
  out->set_user_id(c.user_id);
  out->set_title(c.title);
  out->set_kind(static_cast<pb::ConversationKind>(c.kind));
  out->set_parent_conversation_id(c.parent_id);
  *out->mutable_create_time() = TimeUtil::MicrosecondsToTimestamp(c.created_at);
  *out->mutable_update_time() = TimeUtil::MicrosecondsToTimestamp(c.updated_at);
  JsonToStruct(c.metadata_json, out->mutable_metadata());
  out->set_message_count(c.message_count);
}

void ToProto(const Message& m, pb::Message* out) {
  out->set_id(m.id);
  out->set_conversation_id(m.conversation_id);
  out->set_seq(m.seq);
  out->set_role(static_cast<pb::Role>(m.role));
  out->set_content(m.content);
  *out->mutable_create_time() = TimeUtil::MicrosecondsToTimestamp(m.created_at);
  JsonToStruct(m.metadata_json, out->mutable_metadata());
  out->set_token_count(m.token_count);
}

}  // namespace

grpc::ServerUnaryReactor* ConversationGrpcService::Blocking(
    grpc::CallbackServerContext* context, const char* method,
    std::function<absl::Status(const core::Identity&)> body) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  auto scope = std::make_shared<core::RpcScope>(method);
  auto who = core::IdentityFromContext(*context);
  if (!who.ok()) {
    scope->Finish(who.status());
    reactor->Finish(core::ToGrpcStatus(who.status()));
    return reactor;
  }
  const bool queued = workers_.Submit([reactor, scope, who = *who, body = std::move(body)] {
    absl::Status status = body(who);
    scope->Finish(status);
    reactor->Finish(core::ToGrpcStatus(status));
  });
  if (!queued) {
    absl::Status busy = absl::ResourceExhaustedError("conversation service is overloaded; retry");
    scope->Finish(busy);
    reactor->Finish(core::ToGrpcStatus(busy));
  }
  return reactor;
}

grpc::ServerUnaryReactor* ConversationGrpcService::CreateConversation(
    grpc::CallbackServerContext* context, const pb::CreateConversationRequest* request,
    pb::CreateConversationResponse* response) {
  return Blocking(context, "CreateConversation", [this, request, response](const core::Identity& who) {
    auto metadata = MetadataToJson(*request);
    if (!metadata.ok()) return metadata.status();
    CreateConversationInput input{request->title(), static_cast<int>(request->kind()),
                                  request->parent_conversation_id(), *metadata};
    auto created = logic_.Create(who, input);
    if (!created.ok()) return created.status();
    ToProto(*created, response->mutable_conversation());
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* ConversationGrpcService::GetConversation(
    grpc::CallbackServerContext* context, const pb::GetConversationRequest* request,
    pb::GetConversationResponse* response) {
  return Blocking(context, "GetConversation", [this, request, response](const core::Identity& who) {
    auto found = logic_.Get(who, request->conversation_id());
    if (!found.ok()) return found.status();
    ToProto(*found, response->mutable_conversation());
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* ConversationGrpcService::ListConversations(
    grpc::CallbackServerContext* context, const pb::ListConversationsRequest* request,
    pb::ListConversationsResponse* response) {
  return Blocking(context, "ListConversations", [this, request, response](const core::Identity& who) {
    auto listing = logic_.List(who, request->parent_conversation_id(), request->page_size(),
                               request->page_token());
    if (!listing.ok()) return listing.status();
    for (const Conversation& c : listing->conversations) ToProto(c, response->add_conversations());
    response->set_next_page_token(listing->next_page_token);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* ConversationGrpcService::AppendMessage(
    grpc::CallbackServerContext* context, const pb::AppendMessageRequest* request,
    pb::AppendMessageResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  auto scope = std::make_shared<core::RpcScope>("AppendMessage");
  auto finish = [reactor, scope](const absl::Status& status) {
    scope->Finish(status);
    reactor->Finish(core::ToGrpcStatus(status));
  };
  auto who = core::IdentityFromContext(*context);
  if (!who.ok()) {
    finish(who.status());
    return reactor;
  }
  auto metadata = StructToJson(request->metadata(), request->has_metadata());
  if (!metadata.ok()) {
    finish(metadata.status());
    return reactor;
  }
  AppendMessageInput input{request->conversation_id(), static_cast<int>(request->role()),
                           request->content(), *metadata, request->idempotency_key()};
  // The group-commit queue calls back after the commit; no worker is held
  // while the message waits for its batch.
  logic_.Append(*who, input, [response, finish](absl::StatusOr<AppendResult> result) {
    if (!result.ok()) {
      finish(result.status());
      return;
    }
    ToProto(result->message, response->mutable_message());
    response->set_deduplicated(result->deduplicated);
    finish(absl::OkStatus());
  });
  return reactor;
}

grpc::ServerUnaryReactor* ConversationGrpcService::ListMessages(
    grpc::CallbackServerContext* context, const pb::ListMessagesRequest* request,
    pb::ListMessagesResponse* response) {
  return Blocking(context, "ListMessages", [this, request, response](const core::Identity& who) {
    auto page = logic_.ListMessages(who, request->conversation_id(), request->before_seq(),
                                    request->limit());
    if (!page.ok()) return page.status();
    for (const Message& m : page->messages) ToProto(m, response->add_messages());
    response->set_has_more(page->has_more);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* ConversationGrpcService::GetContextWindow(
    grpc::CallbackServerContext* context, const pb::GetContextWindowRequest* request,
    pb::GetContextWindowResponse* response) {
  return Blocking(context, "GetContextWindow", [this, request, response](const core::Identity& who) {
    auto window = logic_.GetContextWindow(who, request->conversation_id(), request->token_budget(),
                                          request->min_recent_exchanges());
    if (!window.ok()) return window.status();
    for (const Message& m : window->messages) ToProto(m, response->add_messages());
    response->set_total_tokens(window->total_tokens);
    response->set_truncated(window->truncated);
    response->set_token_estimator(std::string(logic_.estimator().Name()));
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* ConversationGrpcService::DeleteConversation(
    grpc::CallbackServerContext* context, const pb::DeleteConversationRequest* request,
    pb::DeleteConversationResponse* /*response*/) {
  return Blocking(context, "DeleteConversation", [this, request](const core::Identity& who) {
    return logic_.Delete(who, request->conversation_id());
  });
}

}  // namespace omniforge::conversation
