// The executor agent with an LLM (operation `executor_turn`): the model gets
// a protocol prompt, the step, and only the tools it may use (read-only
// unless the step's writes were approved) plus two protocol tools,
// `ask_planner` and `complete_task`. Its tool calls run through the
// ToolRuntime (a bad call's error goes back to the model to correct); its
// protocol calls become questions and the final event.
#pragma once

#include <chrono>
#include <optional>
#include <set>

#include "libs/llm/chat_model.h"
#include "services/executor/src/dialogue.h"
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
    std::string tool_call_id;
  };

  void Run();
  // Runs one real tool call and adds its result to the conversation.
  void RunTool(const llm::ToolCall& call);
  void Complete(const std::string& arguments);
  void ForgetQuestion() override { pending_.reset(); }
  bool UseTurn();

  llm::ChatModel& model_;
  const ToolRuntime& runtime_;
  core::Identity who_;
  std::chrono::system_clock::time_point deadline_;
  Assignment assignment_;
  std::vector<llm::ToolSpec> tools_;
  std::set<std::string> offered_;  // real tools the model may call
  std::vector<llm::ChatMessage> messages_;
  std::optional<Pending> pending_;
  std::vector<ToolCallRecord> records_;
};

}  // namespace omniforge::executor
