// The executor agent with an LLM (operation `executor_turn`): the model gets
// a protocol prompt, the step, and only the tools it may use (read-only
// unless the step's writes were approved) plus two protocol tools,
// `ask_planner` and `complete_task`. Its tool calls run through the
// ToolRuntime (a bad call's error goes back to the model to correct); its
// protocol calls become questions and the final event. Every call first
// passes the step's bounds (CheckStepCall): a refused call does not run,
// the model reads why as the call's error, the planner sees it as a
// progress update and an error partial result, and a model that keeps
// trying refused writes makes the agent ask the planner. Writes carry
// StepWriteKeys' keys.
#pragma once

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "libs/llm/chat_model.h"
#include "services/executor/src/dialogue.h"
#include "services/executor/src/step_bounds.h"
#include "services/executor/src/tool_runtime.h"

namespace omniforge::executor {

class LlmDialogue final : public ExecutorAgent {
 public:
  // `model` and `runtime` must outlive the dialogue.
  LlmDialogue(llm::ChatModel& model, const ToolRuntime& runtime, core::Identity who,
              std::chrono::system_clock::time_point deadline, EventSink sink)
      : ExecutorAgent(std::move(sink)),
        model_(model),
        runtime_(runtime),
        who_(std::move(who)),
        deadline_(deadline) {}

  void Start(Assignment assignment) override;
  void Answer(const std::string& question_id, const std::string& answer) override;
  bool ApplyCancel() override;

 private:
  struct Pending {
    std::string question_id;
    std::string tool_call_id;  // empty: the agent's own question, answered in a user message
  };

  void Run();
  // One model call on the conversation so far, its usage recorded in
  // model_calls_ (its CallContext::usage) for the planner.
  absl::StatusOr<llm::ChatResponse> AskModel();
  // Runs one real tool call, or refuses it, and adds its result to the
  // conversation.
  void RunTool(const llm::ToolCall& call);
  // The call's result is `refusal`: it did not run.
  void Refuse(const llm::ToolCall& call, ToolRisk risk, const CallRefusal& refusal);
  // Asks the planner about the writes the model keeps trying.
  void AskAboutRefusedWrites();
  void Complete(const std::string& arguments);
  void ForgetQuestion() override { pending_.reset(); }
  bool UseTurn();

  llm::ChatModel& model_;
  const ToolRuntime& runtime_;
  core::Identity who_;
  std::chrono::system_clock::time_point deadline_;
  Assignment assignment_;
  std::vector<llm::ToolSpec> tools_;
  StepWriteKeys write_keys_;
  // The planned calls (by index) whose approved write ran: each runs once.
  std::set<size_t> spent_calls_;
  // The WRITE and HIGH calls refused in this step, and the last of them.
  int refused_writes_ = 0;
  std::string last_refused_;
  std::vector<llm::ChatMessage> messages_;
  std::optional<Pending> pending_;
  std::vector<ToolCallRecord> records_;
};

// The executor agents of a service with a model: each an LlmDialogue on
// `model` and `runtime` (both must outlive the factory's agents).
AgentFactory LlmAgents(llm::ChatModel& model, const ToolRuntime& runtime);

}  // namespace omniforge::executor
