#include "services/conversation/src/grpc_service.h"

#include <google/protobuf/util/time_util.h>

#include <memory>

#include "libs/core/grpc_unary.h"
#include "libs/core/struct_json.h"

namespace omniforge::conversation {
namespace {

using google::protobuf::util::TimeUtil;

template <typename Request, typename Response>
core::UnaryHandler<Request, Response> OnWorker(
    core::ThreadPool& workers,
    std::function<absl::Status(const core::Identity&, const Request&, Response*)> body) {
  return core::OnWorker<Request, Response>(workers, "conversation service is overloaded; retry",
                                           std::move(body));
}

std::string StructToJson(const google::protobuf::Struct& s, bool present) {
  return present ? core::StructToJsonText(s) : std::string();
}

void JsonToStruct(const std::string& json, google::protobuf::Struct* out) {
  // Stored metadata was validated as a JSON object on the way in.
  (void)core::JsonTextToStruct(json, out);
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
  out->set_status(static_cast<pb::DialogueStatus>(c.status));
}

void ToProto(const Message& m, pb::Message* out, bool metadata_as_json = false) {
  out->set_id(m.id);
  out->set_conversation_id(m.conversation_id);
  out->set_seq(m.seq);
  out->set_role(static_cast<pb::Role>(m.role));
  out->set_content(m.content);
  *out->mutable_create_time() = TimeUtil::MicrosecondsToTimestamp(m.created_at);
  if (metadata_as_json) {
    out->set_metadata_json(m.metadata_json);
  } else {
    JsonToStruct(m.metadata_json, out->mutable_metadata());
  }
  out->set_token_count(m.token_count);
}

// What AppendMessage takes, from its request; INVALID_ARGUMENT when both
// forms of metadata are set.
absl::StatusOr<AppendMessageInput> AppendInput(const pb::AppendMessageRequest& request) {
  if (request.has_metadata() && !request.metadata_json().empty()) {
    return absl::InvalidArgumentError("metadata, metadata_json: set at most one of them");
  }
  const bool as_json = !request.metadata_json().empty();
  return AppendMessageInput{
      request.conversation_id(), static_cast<int>(request.role()), request.content(),
      as_json ? request.metadata_json() : StructToJson(request.metadata(), request.has_metadata()),
      request.idempotency_key()};
}

}  // namespace

grpc::ServerUnaryReactor* ConversationGrpcService::CreateConversation(
    grpc::CallbackServerContext* context, const Raw* raw, Raw* raw_response) {
  using Req = pb::CreateConversationRequest;
  using Resp = pb::CreateConversationResponse;
  return core::ServeUnary<Req, Resp>(
      context, raw, raw_response, "CreateConversation",
      OnWorker<Req, Resp>(
          workers_, [this](const core::Identity& who, const Req& request, Resp* response) {
            auto created =
                logic_.Create(who, {request.title(), static_cast<int>(request.kind()),
                                    request.parent_conversation_id(),
                                    StructToJson(request.metadata(), request.has_metadata())});
            if (!created.ok()) return created.status();
            ToProto(*created, response->mutable_conversation());
            return absl::OkStatus();
          }));
}

grpc::ServerUnaryReactor* ConversationGrpcService::GetConversation(
    grpc::CallbackServerContext* context, const Raw* raw, Raw* raw_response) {
  using Req = pb::GetConversationRequest;
  using Resp = pb::GetConversationResponse;
  return core::ServeUnary<Req, Resp>(
      context, raw, raw_response, "GetConversation",
      OnWorker<Req, Resp>(workers_,
                          [this](const core::Identity& who, const Req& request, Resp* response) {
                            auto found = logic_.Get(who, request.conversation_id());
                            if (!found.ok()) return found.status();
                            ToProto(*found, response->mutable_conversation());
                            return absl::OkStatus();
                          }));
}

grpc::ServerUnaryReactor* ConversationGrpcService::ListConversations(
    grpc::CallbackServerContext* context, const Raw* raw, Raw* raw_response) {
  using Req = pb::ListConversationsRequest;
  using Resp = pb::ListConversationsResponse;
  return core::ServeUnary<Req, Resp>(
      context, raw, raw_response, "ListConversations",
      OnWorker<Req, Resp>(workers_,
                          [this](const core::Identity& who, const Req& request, Resp* response) {
                            auto listing = logic_.List(who, request.parent_conversation_id(),
                                                       request.page_size(), request.page_token());
                            if (!listing.ok()) return listing.status();
                            for (const Conversation& c : listing->conversations) {
                              ToProto(c, response->add_conversations());
                            }
                            response->set_next_page_token(listing->next_page_token);
                            return absl::OkStatus();
                          }));
}

grpc::ServerUnaryReactor* ConversationGrpcService::AppendMessage(
    grpc::CallbackServerContext* context, const Raw* raw, Raw* raw_response) {
  using Req = pb::AppendMessageRequest;
  using Resp = pb::AppendMessageResponse;
  // No worker is held while the message waits for its group commit: the
  // queue calls back once the batch holding it has committed.
  return core::ServeUnary<Req, Resp>(
      context, raw, raw_response, "AppendMessage",
      [this](const std::shared_ptr<core::UnaryCall<Req, Resp>>& call,
             const std::function<void(absl::Status)>& done) {
        const Req& request = call->request;
        absl::StatusOr<AppendMessageInput> input = AppendInput(request);
        if (!input.ok()) {
          done(input.status());
          return;
        }
        const bool as_json = !request.metadata_json().empty();
        logic_.Append(call->who, *input,
                      [call, done, as_json](absl::StatusOr<AppendResult> result) {
                        if (!result.ok()) {
                          done(result.status());
                          return;
                        }
                        ToProto(result->message, call->response.mutable_message(), as_json);
                        call->response.set_deduplicated(result->deduplicated);
                        done(absl::OkStatus());
                      });
      });
}

grpc::ServerUnaryReactor* ConversationGrpcService::AppendMessages(
    grpc::CallbackServerContext* context, const Raw* raw, Raw* raw_response) {
  using Req = pb::AppendMessagesRequest;
  using Resp = pb::AppendMessagesResponse;
  // Like AppendMessage, no worker waits: the last message's commit answers.
  return core::ServeUnary<Req, Resp>(
      context, raw, raw_response, "AppendMessages",
      [this](const std::shared_ptr<core::UnaryCall<Req, Resp>>& call,
             const std::function<void(absl::Status)>& done) {
        std::vector<AppendMessageInput> inputs;
        std::vector<absl::Status> refused(call->request.messages_size());
        for (int i = 0; i < call->request.messages_size(); ++i) {
          absl::StatusOr<AppendMessageInput> input = AppendInput(call->request.messages(i));
          // An empty message goes through to keep the positions; its
          // result is replaced by the refusal.
          refused[i] = input.status();
          inputs.push_back(input.ok() ? *std::move(input) : AppendMessageInput{});
        }
        absl::Status started = logic_.AppendMany(
            call->who, inputs,
            [call, done, refused](std::vector<absl::StatusOr<AppendResult>> results) {
              for (size_t i = 0; i < results.size(); ++i) {
                pb::AppendMessagesResult* out = call->response.add_results();
                const absl::Status status = refused[i].ok() ? results[i].status() : refused[i];
                if (!status.ok()) {
                  out->set_error_code(static_cast<int32_t>(status.code()));
                  out->set_error_message(std::string(status.message()));
                  continue;
                }
                const pb::AppendMessageRequest& request =
                    call->request.messages(static_cast<int>(i));
                ToProto(results[i]->message, out->mutable_appended()->mutable_message(),
                        !request.metadata_json().empty());
                out->mutable_appended()->set_deduplicated(results[i]->deduplicated);
              }
              done(absl::OkStatus());
            });
        if (!started.ok()) done(started);
      });
}

grpc::ServerUnaryReactor* ConversationGrpcService::ListMessages(
    grpc::CallbackServerContext* context, const Raw* raw, Raw* raw_response) {
  using Req = pb::ListMessagesRequest;
  using Resp = pb::ListMessagesResponse;
  return core::ServeUnary<Req, Resp>(
      context, raw, raw_response, "ListMessages",
      OnWorker<Req, Resp>(workers_,
                          [this](const core::Identity& who, const Req& request, Resp* response) {
                            auto page = logic_.ListMessages(who, request.conversation_id(),
                                                            request.before_seq(), request.limit());
                            if (!page.ok()) return page.status();
                            for (const Message& m : page->messages)
                              ToProto(m, response->add_messages(), request.metadata_as_json());
                            response->set_has_more(page->has_more);
                            return absl::OkStatus();
                          }));
}

grpc::ServerUnaryReactor* ConversationGrpcService::GetContextWindow(
    grpc::CallbackServerContext* context, const Raw* raw, Raw* raw_response) {
  using Req = pb::GetContextWindowRequest;
  using Resp = pb::GetContextWindowResponse;
  return core::ServeUnary<Req, Resp>(
      context, raw, raw_response, "GetContextWindow",
      OnWorker<Req, Resp>(workers_, [this](const core::Identity& who, const Req& request,
                                           Resp* response) {
        auto window = logic_.GetContextWindow(
            who, request.conversation_id(), request.token_budget(), request.min_recent_exchanges());
        if (!window.ok()) return window.status();
        for (const Message& m : window->messages) {
          ToProto(m, response->add_messages(), request.metadata_as_json());
        }
        response->set_total_tokens(window->total_tokens);
        response->set_truncated(window->truncated);
        response->set_token_estimator(std::string(logic_.estimator().Name()));
        return absl::OkStatus();
      }));
}

grpc::ServerUnaryReactor* ConversationGrpcService::DeleteConversation(
    grpc::CallbackServerContext* context, const Raw* raw, Raw* raw_response) {
  using Req = pb::DeleteConversationRequest;
  using Resp = pb::DeleteConversationResponse;
  return core::ServeUnary<Req, Resp>(
      context, raw, raw_response, "DeleteConversation",
      OnWorker<Req, Resp>(workers_, [this](const core::Identity& who, const Req& request, Resp*) {
        return logic_.Delete(who, request.conversation_id());
      }));
}

grpc::ServerUnaryReactor* ConversationGrpcService::SetDialogueStatus(
    grpc::CallbackServerContext* context, const Raw* raw, Raw* raw_response) {
  using Req = pb::SetDialogueStatusRequest;
  using Resp = pb::SetDialogueStatusResponse;
  return core::ServeUnary<Req, Resp>(
      context, raw, raw_response, "SetDialogueStatus",
      OnWorker<Req, Resp>(workers_,
                          [this](const core::Identity& who, const Req& request, Resp* response) {
                            auto updated = logic_.SetDialogueStatus(
                                who, request.conversation_id(), static_cast<int>(request.status()));
                            if (!updated.ok()) return updated.status();
                            ToProto(*updated, response->mutable_conversation());
                            return absl::OkStatus();
                          }));
}

}  // namespace omniforge::conversation
