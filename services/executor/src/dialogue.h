// An executor agent's side of a plan step: the planner↔executor dialogue
// (Converse) as plain data, apart from gRPC. The planner assigns a task;
// the executor reports progress, partial results and questions, and ends
// with exactly one final event: complete or error.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

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

  bool final() const { return kind == Kind::kComplete || kind == Kind::kError; }
};

using EventSink = std::function<void(DialogueEvent)>;

}  // namespace omniforge::executor
