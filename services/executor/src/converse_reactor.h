// One Converse stream: reads the planner's messages, runs the executor
// agent (an ExecutorAgent) on worker threads, one message at a time, and
// writes its events in order, finishing the stream after the final one.
// It reads raw bytes and parses them itself, so that bytes that are no
// ConverseRequest (a string field that is not UTF-8) end the call with
// INVALID_ARGUMENT instead of looking like the planner closing its side.
//
// Include only from the gRPC layer: it pulls in grpcpp.
#pragma once

#include <deque>
#include <memory>
#include <mutex>
#include <optional>

#include "libs/core/ambient.h"
#include "libs/core/thread_pool.h"
#include "libs/trace/span.h"
#include "omniforge/executor/v1/executor_service.grpc.pb.h"
#include "services/executor/src/dialogue.h"
#include "services/executor/src/dialogue_recorder.h"

namespace omniforge::executor {

class ConverseReactor final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  using Request = ::omniforge::executor::v1::ConverseRequest;
  using Response = ::omniforge::executor::v1::ConverseResponse;

  // Deletes itself once gRPC is done with it and no worker task holds it.
  // With a `recorder`, a dialogue whose assignment names a parent
  // conversation is stored as an agent dialogue under it, and ends completed
  // or failed with its final event, or cancelled when the stream ends first.
  // The recorder must outlive `workers`' queued tasks.
  ConverseReactor(grpc::CallbackServerContext* context, const AgentFactory& agents,
                  core::ThreadPool& workers, DialogueRecorder* recorder);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  void Schedule();                                     // mu_ held
  void Process();                                      // on a worker
  void Handle(const std::optional<Request>& message);  // on a worker
  void Enqueue(const DialogueEvent& event);            // from the dialogue
  void MaybeWrite();                                   // mu_ held
  void Release();
  // Stores one message of the dialogue (on a worker); a storage failure is
  // logged and the dialogue goes on.
  void Record(DialogueRecorder::Speaker speaker, const std::string& content,
              const nlohmann::json& metadata);
  // Stores how the dialogue ended (on a worker); a failure is logged.
  void RecordEnd(DialogueRecorder::Outcome outcome);

  core::ThreadPool& workers_;
  DialogueRecorder* recorder_;
  core::Identity who_;
  trace::Span span_;       // the dialogue's server span, ended in OnDone
  core::Ambient ambient_;  // what the workers run under (set before any read)
  std::unique_ptr<ExecutorAgent> dialogue_;
  // Written by the worker before any event.
  std::string step_id_;
  std::string dialogue_id_;    // the stored dialogue, when there is one
  int recorded_ = 0;           // messages stored so far
  bool ended_ = false;         // its final event was seen
  grpc::ByteBuffer incoming_;  // a ConverseRequest, read

  std::mutex mu_;
  std::deque<std::optional<Request>> inbox_;  // nullopt: the planner closed its side
  bool processing_ = false;
  std::deque<Response> outbox_;
  grpc::ByteBuffer writing_message_;  // a ConverseResponse, being written
  bool writing_ = false;
  bool final_queued_ = false;
  bool finished_ = false;  // Finish was called
  int refs_ = 1;           // gRPC's, plus one per queued or running worker task
};

}  // namespace omniforge::executor
