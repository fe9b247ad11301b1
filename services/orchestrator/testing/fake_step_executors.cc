#include "services/orchestrator/testing/fake_step_executors.h"

#include <deque>
#include <nlohmann/json.hpp>
#include <optional>

namespace omniforge::orchestrator::testing {

class FakeStepExecutors::Dialogue final : public StepDialogue {
 public:
  explicit Dialogue(FakeStepExecutors& executors) : executors_(executors) {}

  bool Send(const execpb::ConverseRequest& message) override {
    if (closed_) return false;
    if (message.has_task_assignment()) {
      Assigned(message.task_assignment());
    } else if (message.has_clarification()) {
      {
        absl::MutexLock lock(&executors_.mu_);
        executors_.answers_.push_back(message.clarification().answer());
      }
      Complete("answered: " + message.clarification().answer());
    } else if (message.has_cancel()) {
      closed_ = true;
    }
    return true;
  }

  std::optional<execpb::ConverseResponse> Read() override {
    if (outbox_.empty()) return std::nullopt;
    execpb::ConverseResponse next = std::move(outbox_.front());
    outbox_.pop_front();
    if (next.has_task_complete() || next.has_error()) closed_ = true;
    return next;
  }

  absl::Status Finish() override { return absl::OkStatus(); }

 private:
  void Assigned(const execpb::TaskAssignment& task) {
    task_ = task;
    std::function<void(const execpb::TaskAssignment&)> hook;
    std::optional<Asking> asks;
    std::optional<execpb::ExecutorError> fails;
    {
      absl::MutexLock lock(&executors_.mu_);
      executors_.assignments_.push_back(task);
      hook = executors_.on_assign_;
      for (const execpb::PlannedToolCall& call : task.tool_calls()) {
        auto it = executors_.asking_.find(call.tool_name());
        if (it != executors_.asking_.end()) asks = it->second;
        auto failing = executors_.failing_.find(call.tool_name());
        if (failing != executors_.failing_.end() && failing->second.times > 0) {
          --failing->second.times;
          fails = failing->second.error;
        }
        auto partial = executors_.partial_.find(call.tool_name());
        if (partial != executors_.partial_.end()) partial_ = partial->second;
        if (executors_.empty_.contains(call.tool_name())) empty_ = true;
      }
    }
    if (hook) hook(task);
    if (fails.has_value()) {
      execpb::ConverseResponse error = Header();
      *error.mutable_error() = *fails;
      outbox_.push_back(std::move(error));
      closed_ = true;
      return;
    }
    if (!asks.has_value()) {
      Complete("done");
      return;
    }
    execpb::ConverseResponse question = Header();
    question.mutable_question()->set_question_id("q-" + task.step_id());
    question.mutable_question()->set_text(asks->question);
    for (const std::string& option : asks->options)
      question.mutable_question()->add_options(option);
    outbox_.push_back(std::move(question));
  }

  // The step is done: its summary names the planned tools and `how`.
  void Complete(const std::string& how) {
    nlohmann::json results = nlohmann::json::array();
    std::string tools;
    for (const execpb::PlannedToolCall& call : task_.tool_calls()) {
      results.push_back({{"tool", call.tool_name()}, {"result", {{"ok", true}}}});
      tools += (tools.empty() ? "" : ", ") + call.tool_name();
    }
    execpb::ConverseResponse done = Header();
    execpb::TaskComplete* complete = done.mutable_task_complete();
    complete->set_status(execpb::TASK_STATUS_SUCCESS);
    complete->set_summary((tools.empty() ? task_.task() : tools) + ": " + how);
    complete->set_result_json(empty_ ? "{}" : nlohmann::json({{"results", results}}).dump());
    complete->set_confidence(1.0);
    for (const execpb::PlannedToolCall& call : task_.tool_calls()) {
      execpb::ToolCallRecord* record = complete->add_tool_calls();
      record->set_tool_name(call.tool_name());
      record->set_arguments_json(call.arguments_json());
    }
    if (partial_.has_value()) {
      complete->set_status(execpb::TASK_STATUS_PARTIAL);
      complete->set_confidence(partial_->confidence);
      complete->add_limitations(partial_->limitation);
    }
    outbox_.push_back(std::move(done));
  }

  execpb::ConverseResponse Header() const {
    execpb::ConverseResponse message;
    message.set_step_id(task_.step_id());
    message.set_dialogue_conversation_id("dialogue-" + task_.step_id());
    message.set_turn(1);
    return message;
  }

  FakeStepExecutors& executors_;
  execpb::TaskAssignment task_;
  std::optional<Partial> partial_;
  bool empty_ = false;
  std::deque<execpb::ConverseResponse> outbox_;
  bool closed_ = false;
};

std::unique_ptr<StepDialogue> FakeStepExecutors::Open(const core::Call& call) {
  {
    absl::MutexLock lock(&mu_);
    deadlines_.push_back(call.deadline);
  }
  return std::make_unique<Dialogue>(*this);
}

std::vector<core::TimePoint> FakeStepExecutors::deadlines() const {
  absl::MutexLock lock(&mu_);
  return deadlines_;
}

void FakeStepExecutors::AskWhen(const std::string& tool, const std::string& question,
                                std::vector<std::string> options) {
  absl::MutexLock lock(&mu_);
  asking_[tool] = {question, std::move(options)};
}

void FakeStepExecutors::FailWhen(const std::string& tool, execpb::ExecutorError error, int times) {
  absl::MutexLock lock(&mu_);
  failing_[tool] = {std::move(error), times};
}

void FakeStepExecutors::PartialWhen(const std::string& tool, const std::string& limitation,
                                    double confidence) {
  absl::MutexLock lock(&mu_);
  partial_[tool] = {limitation, confidence};
}

void FakeStepExecutors::EmptyWhen(const std::string& tool) {
  absl::MutexLock lock(&mu_);
  empty_.insert(tool);
}

void FakeStepExecutors::OnAssign(std::function<void(const execpb::TaskAssignment&)> hook) {
  absl::MutexLock lock(&mu_);
  on_assign_ = std::move(hook);
}

std::vector<execpb::TaskAssignment> FakeStepExecutors::assignments() const {
  absl::MutexLock lock(&mu_);
  return assignments_;
}

std::vector<std::string> FakeStepExecutors::answers() const {
  absl::MutexLock lock(&mu_);
  return answers_;
}

}  // namespace omniforge::orchestrator::testing
