// An executor agent's side of a plan step: the planner↔executor dialogue
// (Converse) as plain data, apart from gRPC. The planner assigns a task;
// the executor reports progress, partial results and questions, and ends
// with exactly one final event: complete or error.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "libs/core/identity.h"
#include "libs/llm/recorded_calls.h"
#include "libs/llm/usage.h"
#include "services/executor/src/tool.h"

namespace omniforge::executor {

struct PlannedCall {
  std::string tool_name;
  std::string arguments_json;  // a JSON object; empty means {}
};

struct Assignment {
  std::string task;
  std::string goal;
  std::vector<std::string> allowed_tools;  // empty: every READ tool
  bool writes_approved = false;
  // The user approved the writes as previewed: WRITE and HIGH calls only on
  // the targets of the planned calls (CheckStepCall).
  bool approved_targets_only = false;
  int max_turns = 0;  // 0: kDefaultMaxTurns
  std::string parent_conversation_id;
  std::string step_id;
  std::string inputs_json;
  std::string idempotency_key;
  std::vector<PlannedCall> tool_calls;
};

inline constexpr int kDefaultMaxTurns = 10;
inline constexpr int kMaxTurnsLimit = 50;

// Why a dialogue ended without completing (values match
// omniforge.executor.v1.ErrorCode).
enum class DialogueError {
  kProtocol = 1,
  kInvalidAssignment = 2,
  kMaxTurns = 3,
  kToolFailed = 4,
  kModelFailed = 5,
  kCancelled = 6,
  kWriteNotApproved = 7,
  kInternal = 8,
};

struct ToolCallRecord {
  std::string tool_name;
  std::string arguments_json;
  bool is_error = false;
  int64_t duration_us = 0;
};

struct PartialResult {
  std::string tool_name;
  std::string result_json;
  bool is_error = false;
  ToolRisk risk = ToolRisk::kRead;
};

// One message from the executor to the planner.
struct DialogueEvent {
  enum class Kind { kProgress, kPartialResult, kQuestion, kComplete, kError };
  Kind kind = Kind::kProgress;
  int turn = 0;
  // kProgress
  std::string message;  // also kError's message
  std::string tool_name;
  std::string arguments_json;
  double fraction = -1;
  // kPartialResult
  PartialResult partial;
  // kQuestion
  std::string question_id;
  std::string question;
  std::vector<std::string> options;
  // kComplete
  bool partial_success = false;
  std::string summary;
  std::string result_json;
  double confidence = 0;
  std::vector<std::string> limitations;
  std::vector<ToolCallRecord> tool_calls;
  // kError
  DialogueError error = DialogueError::kInternal;
  std::vector<PartialResult> partial_results;
  bool retryable = false;
  // Every kind: the model calls the agent made since its last event, for
  // the planner's accounts (an LlmDialogue's; none for a LocalDialogue).
  std::vector<llm::UsageRecord> model_calls;

  bool final() const { return kind == Kind::kComplete || kind == Kind::kError; }
};

using EventSink = std::function<void(DialogueEvent)>;

// The executor's side of one dialogue: LocalDialogue (no LLM) or
// LlmDialogue. Events go to the sink given at construction, synchronously,
// during these calls. Use from one thread at a time; RequestCancel from any.
class ExecutorAgent {
 public:
  virtual ~ExecutorAgent() = default;

  // Checks the assignment (an error event, nothing run, when it is invalid)
  // and works until it needs an answer or ends.
  virtual void Start(Assignment assignment) = 0;
  // The planner's answer to the pending question; a kProtocol error when no
  // question is pending or the id does not match.
  virtual void Answer(const std::string& question_id, const std::string& answer) = 0;
  // Asks the agent to stop at the next safe point (before its next tool or
  // model call). Thread-safe.
  void RequestCancel() { cancel_requested_ = true; }
  // Ends the dialogue now with kCancelled when a cancel was requested and
  // the agent is waiting (for an answer or its assignment); true when it did.
  virtual bool ApplyCancel() = 0;
  // Ends the dialogue with kProtocol (a message that does not fit), unless
  // it already ended.
  void ProtocolError(const std::string& message);

  bool started() const { return started_; }
  bool finished() const { return finished_; }

 protected:
  explicit ExecutorAgent(EventSink sink) : sink_(std::move(sink)) {}

  // Sends `event` stamped with the current turn and carrying the model
  // calls made since the last event; a final event ends the dialogue.
  void Emit(DialogueEvent event);
  // Ends the dialogue with an error carrying the partial results so far.
  void Fail(DialogueError code, const std::string& message, bool retryable = false);
  // Drops the question waiting for an answer, if any (the dialogue ended).
  virtual void ForgetQuestion() = 0;

  std::atomic<bool> cancel_requested_ = false;
  EventSink sink_;
  int turns_ = 0;
  std::vector<PartialResult> partials_;
  // The model calls not yet handed on with an event: each model call of
  // the dialogue is given it as its llm::CallContext::usage.
  llm::RecordedCalls model_calls_;
  bool started_ = false;
  bool finished_ = false;
};

// Makes the agent of one Converse stream.
using AgentFactory = std::function<std::unique_ptr<ExecutorAgent>(
    core::Identity who, std::chrono::system_clock::time_point deadline, EventSink sink)>;

}  // namespace omniforge::executor
