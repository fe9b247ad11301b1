// The executor agent without an LLM (local mode): a deterministic runner
// that carries out a step's planned tool calls in order, streams what it
// does, and asks the planner when a name in the arguments is ambiguous
// (two projects match "marketing") or unknown but close to some. Each call
// passes the step's bounds (CheckStepCall) first and writes carry
// StepWriteKeys' keys, as with LlmDialogue; with approved_targets_only a
// write's names are not resolved to other targets (a not_found ends the step).
//
// Use from one thread at a time (the gRPC layer serialises the calls);
// Cancel may be called from any thread and takes effect before the next
// tool call.
#pragma once

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>

#include "services/executor/src/dialogue.h"
#include "services/executor/src/step_bounds.h"
#include "services/executor/src/tool_runtime.h"

namespace omniforge::executor {

class LocalDialogue final : public ExecutorAgent {
 public:
  // `runtime` must outlive the dialogue. Tool calls run as `who`, each
  // bounded by `deadline`.
  LocalDialogue(const ToolRuntime& runtime, core::Identity who,
                std::chrono::system_clock::time_point deadline, EventSink sink)
      : ExecutorAgent(std::move(sink)),
        runtime_(runtime),
        who_(std::move(who)),
        deadline_(deadline) {}

  // Errors kInvalidAssignment or kWriteNotApproved before anything runs.
  void Start(Assignment assignment) override;
  void Answer(const std::string& question_id, const std::string& answer) override;
  // A cancel takes effect at once while waiting for an answer, else after
  // the running tool call; the error carries the partial results.
  bool ApplyCancel() override;

  bool waiting_for_answer() const { return pending_.has_value(); }

 private:
  struct Pending {
    std::string question_id;
    std::string field;                                         // the argument being resolved
    std::vector<std::pair<std::string, std::string>> options;  // name, id
  };

  void Run();
  // Runs call `next_`; false when the dialogue stopped (question or end).
  bool RunCall();
  // For a not_found on a name: asks, or substitutes the one match and
  // returns true to retry.
  bool ResolveName(const std::string& field, const std::string& name);
  void ForgetQuestion() override { pending_.reset(); }
  bool CheckCancel();
  bool UseTurn();

  const ToolRuntime& runtime_;
  core::Identity who_;
  std::chrono::system_clock::time_point deadline_;
  Assignment assignment_;
  std::vector<nlohmann::json> arguments_;  // per planned call, resolved names substituted
  size_t next_ = 0;
  StepWriteKeys write_keys_;
  int questions_ = 0;
  std::optional<Pending> pending_;
  std::vector<ToolCallRecord> records_;
  nlohmann::json results_ = nlohmann::json::array();
  std::vector<std::string> limitations_;
};

// Checks an assignment against the catalog: task 1..10,000 characters,
// max_turns 0..50, allowed tools known, up to 20 planned calls (at least one
// when `require_planned_calls`) of allowed tools with JSON-object
// arguments. WRITE and HIGH calls need writes_approved (kWriteNotApproved).
// Returns the problem, or nullopt.
std::optional<std::pair<DialogueError, std::string>> CheckAssignment(
    const ToolCatalog& catalog, const Assignment& a, bool require_planned_calls = true);

}  // namespace omniforge::executor
