// How the plan engine talks to executor agents: one planner↔executor
// dialogue (the executor's bidi Converse) per step. An interface, so the
// engine never includes gRPC; plan_grpc_executor.h has the real client.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "libs/core/call.h"
#include "omniforge/executor/v1/executor_service.pb.h"

namespace omniforge::orchestrator {

namespace execpb = ::omniforge::executor::v1;

// One open dialogue. Used from one thread; Send and Read alternate as the
// protocol says (a task_assignment first, a clarification after a question).
class StepDialogue {
 public:
  virtual ~StepDialogue() = default;
  // Sends one message; false when the stream is already closed.
  virtual bool Send(const execpb::ConverseRequest& message) = 0;
  // The executor's next message; nullopt once the stream ended (after the
  // final event, or broken: Finish says why).
  virtual std::optional<execpb::ConverseResponse> Read() = 0;
  // Closes the planner's side and returns the call's status (the
  // executor's own, or UNAVAILABLE / DEADLINE_EXCEEDED).
  virtual absl::Status Finish() = 0;
};

// Opens dialogues. Thread-safe.
class StepExecutors {
 public:
  virtual ~StepExecutors() = default;
  // A dialogue acting for `call.who` that ends by `call.deadline` (the
  // identity need not outlive the dialogue).
  virtual std::unique_ptr<StepDialogue> Open(const core::Call& call) = 0;
};

}  // namespace omniforge::orchestrator
