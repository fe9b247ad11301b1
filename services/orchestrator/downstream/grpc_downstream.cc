#include "services/orchestrator/downstream/grpc_downstream.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>

#include "libs/core/call_cancellation.h"
#include "libs/core/grpc_identity.h"
#include "libs/core/grpc_status.h"
#include "omniforge/conversation/v1/conversation_service.grpc.pb.h"
#include "omniforge/executor/v1/executor_service.grpc.pb.h"
#include "omniforge/intent/v1/intent_service.grpc.pb.h"

namespace omniforge::orchestrator {
namespace {

std::shared_ptr<grpc::Channel> Connect(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 30000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 0);
  // A service back from an outage is reached within seconds (gRPC's own
  // limit is two minutes), so spooled messages reach storage soon after.
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
  // Several replicas behind one DNS name share the calls.
  args.SetLoadBalancingPolicyName("round_robin");
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

// Runs one unary call for `who` by `deadline`.
template <typename Stub, typename Request, typename Response>
absl::StatusOr<Response> Call(Stub& stub,
                              grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&,
                                                           Response*),
                              const core::Identity& who, const Request& request, int64_t deadline) {
  grpc::ClientContext context;
  core::AttachIdentity(context, who);
  context.set_deadline(std::chrono::system_clock::time_point(std::chrono::microseconds(deadline)));
  // Work cancelled on the caller's side (a cancelled turn) cancels the call.
  core::CancelSignal* const cancel = core::CallCancellation();
  if (cancel != nullptr && cancel->cancelled()) return absl::CancelledError("cancelled");
  core::CancelSubscription cancels(cancel, [&context] { context.TryCancel(); });
  Response response;
  grpc::Status status = (stub.*method)(&context, request, &response);
  cancels.Reset();
  if (!status.ok()) return core::FromGrpcStatus(status);
  return response;
}

class GrpcMemory final : public Memory {
 public:
  explicit GrpcMemory(const std::string& address)
      : stub_(convpb::ConversationService::NewStub(Connect(address))) {}

  absl::StatusOr<convpb::CreateConversationResponse> CreateConversation(
      const core::Identity& who, const convpb::CreateConversationRequest& request,
      int64_t deadline) override {
    return Call(*stub_, &Stub::CreateConversation, who, request, deadline);
  }
  absl::StatusOr<convpb::GetConversationResponse> GetConversation(
      const core::Identity& who, const convpb::GetConversationRequest& request,
      int64_t deadline) override {
    return Call(*stub_, &Stub::GetConversation, who, request, deadline);
  }
  absl::StatusOr<convpb::ListConversationsResponse> ListConversations(
      const core::Identity& who, const convpb::ListConversationsRequest& request,
      int64_t deadline) override {
    return Call(*stub_, &Stub::ListConversations, who, request, deadline);
  }
  absl::StatusOr<convpb::AppendMessageResponse> AppendMessage(
      const core::Identity& who, const convpb::AppendMessageRequest& request,
      int64_t deadline) override {
    return Call(*stub_, &Stub::AppendMessage, who, request, deadline);
  }
  absl::StatusOr<convpb::ListMessagesResponse> ListMessages(
      const core::Identity& who, const convpb::ListMessagesRequest& request,
      int64_t deadline) override {
    return Call(*stub_, &Stub::ListMessages, who, request, deadline);
  }
  absl::StatusOr<convpb::GetContextWindowResponse> GetContextWindow(
      const core::Identity& who, const convpb::GetContextWindowRequest& request,
      int64_t deadline) override {
    return Call(*stub_, &Stub::GetContextWindow, who, request, deadline);
  }

 private:
  using Stub = convpb::ConversationService::Stub;
  std::unique_ptr<Stub> stub_;
};

class GrpcUnderstanding final : public Understanding {
 public:
  explicit GrpcUnderstanding(const std::string& address)
      : stub_(intentpb::IntentService::NewStub(Connect(address))) {}

  absl::StatusOr<intentpb::AnalyzeIntentResponse> AnalyzeIntent(
      const core::Identity& who, const intentpb::AnalyzeIntentRequest& request,
      int64_t deadline) override {
    return Call(*stub_, &Stub::AnalyzeIntent, who, request, deadline);
  }

 private:
  using Stub = intentpb::IntentService::Stub;
  std::unique_ptr<Stub> stub_;
};

class GrpcTools final : public Tools {
 public:
  explicit GrpcTools(const std::string& address)
      : stub_(execpb::ExecutorService::NewStub(Connect(address))) {}

  absl::StatusOr<execpb::ListToolsResponse> ListTools(const core::Identity& who,
                                                      const execpb::ListToolsRequest& request,
                                                      int64_t deadline) override {
    return Call(*stub_, &Stub::ListTools, who, request, deadline);
  }
  absl::StatusOr<execpb::InvokeToolResponse> InvokeTool(const core::Identity& who,
                                                        const execpb::InvokeToolRequest& request,
                                                        int64_t deadline) override {
    return Call(*stub_, &Stub::InvokeTool, who, request, deadline);
  }
  void InvokeToolThen(const core::Identity& who, const execpb::InvokeToolRequest& request,
                      int64_t deadline, ToolDone done) override {
    // Cancelled, as Call's are, with the caller's work: its signal's hook
    // and the completion share the call, so that a completion run at once
    // by the cancel (on the cancelling thread, inside the hook) leaves the
    // call alive until the hook returns.
    core::CancelSignal* const cancel = core::CallCancellation();
    if (cancel != nullptr && cancel->cancelled()) {
      done(absl::CancelledError("cancelled"));
      return;
    }
    struct Pending {
      grpc::ClientContext context;
      execpb::InvokeToolRequest request;
      execpb::InvokeToolResponse response;
      ToolDone done;
      uint64_t hook = 0;
    };
    auto pending = std::make_shared<Pending>();
    pending->request = request;
    pending->done = std::move(done);
    core::AttachIdentity(pending->context, who);
    pending->context.set_deadline(
        std::chrono::system_clock::time_point(std::chrono::microseconds(deadline)));
    if (cancel != nullptr) {
      pending->hook = cancel->OnCancel([pending] { pending->context.TryCancel(); });
    }
    stub_->async()->InvokeTool(&pending->context, &pending->request, &pending->response,
                               [pending, cancel](grpc::Status status) {
                                 if (cancel != nullptr) cancel->Forget(pending->hook);
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
  GrpcStepDialogue(execpb::ExecutorService::Stub& stub, const core::Identity& who,
                   int64_t deadline_micros) {
    core::AttachIdentity(context_, who);
    context_.set_deadline(
        std::chrono::system_clock::time_point(std::chrono::microseconds(deadline_micros)));
    stream_ = stub.Converse(&context_);
  }

  ~GrpcStepDialogue() override {
    // A dialogue dropped half-way (the plan paused or failed) is cancelled,
    // so the executor stops and Finish does not wait for it.
    if (!finished_) {
      context_.TryCancel();
      stream_->Finish().ok();
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
    return core::FromGrpcStatus(stream_->Finish());
  }

 private:
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<execpb::ConverseRequest, execpb::ConverseResponse>>
      stream_;
  bool finished_ = false;
};

class GrpcStepExecutors final : public StepExecutors {
 public:
  explicit GrpcStepExecutors(const std::string& address)
      : stub_(execpb::ExecutorService::NewStub(Connect(address))) {}

  std::unique_ptr<StepDialogue> Open(const core::Identity& who, int64_t deadline_micros) override {
    return std::make_unique<GrpcStepDialogue>(*stub_, who, deadline_micros);
  }

 private:
  std::unique_ptr<execpb::ExecutorService::Stub> stub_;
};

}  // namespace

std::unique_ptr<Memory> MakeGrpcMemory(const std::string& address) {
  return std::make_unique<GrpcMemory>(address);
}
std::unique_ptr<Understanding> MakeGrpcUnderstanding(const std::string& address) {
  return std::make_unique<GrpcUnderstanding>(address);
}
std::unique_ptr<Tools> MakeGrpcTools(const std::string& address) {
  return std::make_unique<GrpcTools>(address);
}
std::unique_ptr<StepExecutors> MakeGrpcStepExecutors(const std::string& address) {
  return std::make_unique<GrpcStepExecutors>(address);
}

}  // namespace omniforge::orchestrator
