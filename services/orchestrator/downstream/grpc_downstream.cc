#include "services/orchestrator/downstream/grpc_downstream.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <optional>

#include "libs/core/call.h"
#include "libs/core/call_cancellation.h"
#include "libs/core/grpc_identity.h"
#include "libs/core/grpc_status.h"
#include "libs/core/grpc_trace.h"
#include "libs/trace/span.h"
#include "omniforge/conversation/v1/conversation_service.grpc.pb.h"
#include "omniforge/executor/v1/executor_service.grpc.pb.h"
#include "omniforge/intent/v1/intent_service.grpc.pb.h"

namespace omniforge::orchestrator {
namespace {

std::shared_ptr<grpc::Channel> Connect(const std::string& address,
                                       const core::ChannelSecurity& security) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 30000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 0);
  // A service back from an outage is reached within seconds (gRPC's own
  // limit is two minutes), so spooled messages reach storage soon after.
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
  // Several replicas behind one DNS name share the calls.
  args.SetLoadBalancingPolicyName("round_robin");
  return core::CreateServiceChannel(address, security, args);
}

// Sets what every outgoing call carries: the caller's identity (asserted
// for `audience`, the service called), deadline and trace context (the
// thread's current span: the call's client span).
void Prepare(grpc::ClientContext& context, const core::Call& call, std::string_view audience) {
  core::AttachIdentity(context, call.who, audience);
  core::AttachTrace(context);
  context.set_deadline(std::chrono::system_clock::time_point(call.deadline));
}

// The service a stub calls, for its caller assertions. Only the services
// that verify callers have one: a stub of any other does not compile here
// (the primary template is incomplete).
template <typename Stub>
struct AudienceOf;
template <>
struct AudienceOf<convpb::ConversationService::Stub> {
  static constexpr const char* kName = core::kConversationAudience;
};
template <>
struct AudienceOf<intentpb::IntentService::Stub> {
  static constexpr const char* kName = core::kIntentAudience;
};
template <>
struct AudienceOf<execpb::ExecutorService::Stub> {
  static constexpr const char* kName = core::kExecutorAudience;
};

// Marks a client span failed when its call did.
void EndClientSpan(trace::Span& span, const grpc::Status& status) {
  if (!status.ok()) span.SetError(status.error_message());
  span.SetAttribute("rpc.grpc.status_code", std::to_string(status.error_code()));
  span.End();
}

// Runs one unary call for `call.who` by `call.deadline`, in a client span
// named `name` ("<service>/<method>").
template <typename Stub, typename Request, typename Response>
absl::StatusOr<Response> Unary(Stub& stub,
                               grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&,
                                                            Response*),
                               const char* name, const core::Call& call, const Request& request) {
  trace::ScopedSpan span(name, trace::SpanKind::kClient);
  grpc::ClientContext context;
  Prepare(context, call, AudienceOf<Stub>::kName);
  // Work cancelled on the caller's side (a cancelled turn) cancels the call.
  if (call.cancel != nullptr && call.cancel->cancelled()) {
    return absl::CancelledError("cancelled");
  }
  core::CancelSubscription cancels(call.cancel, [&context] { context.TryCancel(); });
  Response response;
  grpc::Status status = (stub.*method)(&context, request, &response);
  cancels.Reset();
  EndClientSpan(span.span(), status);
  if (!status.ok()) return core::FromGrpcStatus(status);
  return response;
}

class GrpcMemory final : public Memory {
 public:
  GrpcMemory(const std::string& address, const core::ChannelSecurity& security)
      : stub_(convpb::ConversationService::NewStub(Connect(address, security))) {}

  absl::StatusOr<convpb::CreateConversationResponse> CreateConversation(
      const core::Call& call, const convpb::CreateConversationRequest& request) override {
    return Unary(*stub_, &Stub::CreateConversation, "ConversationService/CreateConversation", call,
                 request);
  }
  absl::StatusOr<convpb::GetConversationResponse> GetConversation(
      const core::Call& call, const convpb::GetConversationRequest& request) override {
    return Unary(*stub_, &Stub::GetConversation, "ConversationService/GetConversation", call,
                 request);
  }
  absl::StatusOr<convpb::ListConversationsResponse> ListConversations(
      const core::Call& call, const convpb::ListConversationsRequest& request) override {
    return Unary(*stub_, &Stub::ListConversations, "ConversationService/ListConversations", call,
                 request);
  }
  absl::StatusOr<convpb::AppendMessageResponse> AppendMessage(
      const core::Call& call, const convpb::AppendMessageRequest& request) override {
    return Unary(*stub_, &Stub::AppendMessage, "ConversationService/AppendMessage", call, request);
  }
  absl::StatusOr<convpb::AppendMessagesResponse> AppendMessages(
      const core::Call& call, const convpb::AppendMessagesRequest& request) override {
    absl::StatusOr<convpb::AppendMessagesResponse> response =
        Unary(*stub_, &Stub::AppendMessages, "ConversationService/AppendMessages", call, request);
    // A conversation service of an earlier release takes them one by one.
    if (absl::IsUnimplemented(response.status())) return Memory::AppendMessages(call, request);
    return response;
  }
  absl::StatusOr<convpb::ListMessagesResponse> ListMessages(
      const core::Call& call, const convpb::ListMessagesRequest& request) override {
    return Unary(*stub_, &Stub::ListMessages, "ConversationService/ListMessages", call, request);
  }
  absl::StatusOr<convpb::GetContextWindowResponse> GetContextWindow(
      const core::Call& call, const convpb::GetContextWindowRequest& request) override {
    return Unary(*stub_, &Stub::GetContextWindow, "ConversationService/GetContextWindow", call,
                 request);
  }
  absl::StatusOr<convpb::DeleteConversationResponse> DeleteConversation(
      const core::Call& call, const convpb::DeleteConversationRequest& request) override {
    return Unary(*stub_, &Stub::DeleteConversation, "ConversationService/DeleteConversation", call,
                 request);
  }

 private:
  using Stub = convpb::ConversationService::Stub;
  std::unique_ptr<Stub> stub_;
};

class GrpcUnderstanding final : public Understanding {
 public:
  GrpcUnderstanding(const std::string& address, const core::ChannelSecurity& security)
      : stub_(intentpb::IntentService::NewStub(Connect(address, security))) {}

  absl::StatusOr<intentpb::AnalyzeIntentResponse> AnalyzeIntent(
      const core::Call& call, const intentpb::AnalyzeIntentRequest& request) override {
    return Unary(*stub_, &Stub::AnalyzeIntent, "IntentService/AnalyzeIntent", call, request);
  }

 private:
  using Stub = intentpb::IntentService::Stub;
  std::unique_ptr<Stub> stub_;
};

class GrpcTools final : public Tools {
 public:
  GrpcTools(const std::string& address, const core::ChannelSecurity& security)
      : stub_(execpb::ExecutorService::NewStub(Connect(address, security))) {}

  absl::StatusOr<execpb::ListToolsResponse> ListTools(
      const core::Call& call, const execpb::ListToolsRequest& request) override {
    return Unary(*stub_, &Stub::ListTools, "ExecutorService/ListTools", call, request);
  }
  absl::StatusOr<execpb::InvokeToolResponse> InvokeTool(
      const core::Call& call, const execpb::InvokeToolRequest& request) override {
    return Unary(*stub_, &Stub::InvokeTool, "ExecutorService/InvokeTool", call, request);
  }
  void InvokeToolThen(const core::Call& call, const execpb::InvokeToolRequest& request,
                      ToolDone done) override {
    // Cancelled, as unary calls are, with the caller's work: the
    // subscription's hook and the completion share the call, so that a
    // completion run at once by the cancel (on the cancelling thread, inside
    // the hook) leaves the call alive until the hook returns. The
    // completion ends the subscription, which also breaks that cycle.
    if (call.cancel != nullptr && call.cancel->cancelled()) {
      done(absl::CancelledError("cancelled"));
      return;
    }
    struct Pending {
      grpc::ClientContext context;
      execpb::InvokeToolRequest request;
      execpb::InvokeToolResponse response;
      ToolDone done;
      std::optional<core::CancelSubscription> cancels;
      trace::Span span;
    };
    auto pending = std::make_shared<Pending>();
    pending->request = request;
    pending->done = std::move(done);
    {
      trace::ScopedSpan span("ExecutorService/InvokeTool", trace::SpanKind::kClient);
      Prepare(pending->context, call, core::kExecutorAudience);
      pending->span = std::move(span.span());
    }
    pending->cancels.emplace(call.cancel, [pending] { pending->context.TryCancel(); });
    stub_->async()->InvokeTool(&pending->context, &pending->request, &pending->response,
                               [pending](const grpc::Status& status) {
                                 pending->cancels.reset();
                                 EndClientSpan(pending->span, status);
                                 if (!status.ok()) {
                                   pending->done(core::FromGrpcStatus(status));
                                 } else {
                                   pending->done(std::move(pending->response));
                                 }
                               });
  }

 private:
  using Stub = execpb::ExecutorService::Stub;
  std::unique_ptr<Stub> stub_;
};

// One plan step's dialogue with an executor agent (Converse).
class GrpcStepDialogue final : public StepDialogue {
 public:
  GrpcStepDialogue(execpb::ExecutorService::Stub& stub, const core::Call& call) {
    trace::ScopedSpan span("ExecutorService/Converse", trace::SpanKind::kClient);
    Prepare(context_, call, core::kExecutorAudience);
    span_ = std::move(span.span());
    stream_ = stub.Converse(&context_);
  }

  ~GrpcStepDialogue() override {
    // A dialogue dropped half-way (the plan paused or failed) is cancelled,
    // so the executor stops and Finish does not wait for it.
    if (!finished_) {
      context_.TryCancel();
      EndClientSpan(span_, stream_->Finish());
    }
  }

  bool Send(const execpb::ConverseRequest& message) override { return stream_->Write(message); }

  std::optional<execpb::ConverseResponse> Read() override {
    execpb::ConverseResponse response;
    if (!stream_->Read(&response)) return std::nullopt;
    return response;
  }

  absl::Status Finish() override {
    finished_ = true;
    stream_->WritesDone();
    const grpc::Status status = stream_->Finish();
    EndClientSpan(span_, status);
    return core::FromGrpcStatus(status);
  }

 private:
  trace::Span span_;  // the dialogue's client span
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<execpb::ConverseRequest, execpb::ConverseResponse>>
      stream_;
  bool finished_ = false;
};

class GrpcStepExecutors final : public StepExecutors {
 public:
  GrpcStepExecutors(const std::string& address, const core::ChannelSecurity& security)
      : stub_(execpb::ExecutorService::NewStub(Connect(address, security))) {}

  std::unique_ptr<StepDialogue> Open(const core::Call& call) override {
    return std::make_unique<GrpcStepDialogue>(*stub_, call);
  }

 private:
  std::unique_ptr<execpb::ExecutorService::Stub> stub_;
};

}  // namespace

std::unique_ptr<Memory> MakeGrpcMemory(const std::string& address,
                                       const core::ChannelSecurity& security) {
  return std::make_unique<GrpcMemory>(address, security);
}
std::unique_ptr<Understanding> MakeGrpcUnderstanding(const std::string& address,
                                                     const core::ChannelSecurity& security) {
  return std::make_unique<GrpcUnderstanding>(address, security);
}
std::unique_ptr<Tools> MakeGrpcTools(const std::string& address,
                                     const core::ChannelSecurity& security) {
  return std::make_unique<GrpcTools>(address, security);
}
std::unique_ptr<StepExecutors> MakeGrpcStepExecutors(const std::string& address,
                                                     const core::ChannelSecurity& security) {
  return std::make_unique<GrpcStepExecutors>(address, security);
}

}  // namespace omniforge::orchestrator
