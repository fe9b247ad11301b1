// The gRPC face of the executor: parses requests, reads the caller identity,
// hands tool calls to the ToolRuntime on worker threads (the caller's
// deadline bounds each call) and converts results to protos.
// Converse runs the executor agent of one plan step (ConverseReactor).
#pragma once

#include "libs/core/thread_pool.h"
#include "omniforge/executor/v1/executor_service.grpc.pb.h"
#include "services/executor/src/dialogue.h"
#include "services/executor/src/dialogue_recorder.h"
#include "services/executor/src/tool_runtime.h"

namespace omniforge::executor {

namespace pb = ::omniforge::executor::v1;

using RawExecutorService = pb::ExecutorService::WithRawCallbackMethod_ListTools<
    pb::ExecutorService::WithRawCallbackMethod_InvokeTool<
        pb::ExecutorService::WithRawCallbackMethod_Converse<pb::ExecutorService::Service>>>;

class ExecutorGrpcService final : public RawExecutorService {
 public:
  // `runtime`, `workers` and `recorder` (optional: dialogues are then not
  // stored) must outlive the service. `agents` makes the executor agent of
  // each Converse stream; by default the local one (LocalDialogue).
  ExecutorGrpcService(const ToolRuntime& runtime, core::ThreadPool& workers,
                      DialogueRecorder* recorder = nullptr, AgentFactory agents = nullptr);

  using Reactor = grpc::ServerUnaryReactor;
  using Raw = grpc::ByteBuffer;
  Reactor* ListTools(grpc::CallbackServerContext* c, const Raw* q, Raw* r) override;
  Reactor* InvokeTool(grpc::CallbackServerContext* c, const Raw* q, Raw* r) override;
  grpc::ServerBidiReactor<Raw, Raw>* Converse(grpc::CallbackServerContext* context) override;

 private:
  const ToolRuntime& runtime_;
  core::ThreadPool& workers_;
  DialogueRecorder* recorder_;
  AgentFactory agents_;
};

}  // namespace omniforge::executor
