// The executor's agents as the plan engine meets them (StepExecutors), in
// memory, for unit tests of the turn with plans: each step's dialogue ends
// with the step done, unless the test makes a tool's step ask a question
// first. Keeps every task assigned. Thread-safe: steps run in parallel.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "services/orchestrator/downstream/plan_executor.h"

namespace omniforge::orchestrator::testing {

// Like the executor: a step that plans a call of an asking tool asks its
// question each time it runs, and completes once the question is answered
// (its summary names the answer); a step that plans a call of a failing
// tool ends with its error, and one of a partial tool completes in part; a
// step told to cancel ends without a result. A completed step reports its
// planned calls as made.
class FakeStepExecutors final : public StepExecutors {
 public:
  std::unique_ptr<StepDialogue> Open(const core::Call& call) override;

  // Steps that plan a call of `tool` ask `question` with `options`.
  void AskWhen(const std::string& tool, const std::string& question,
               std::vector<std::string> options);
  // Steps that plan a call of `tool` end with `error` the first `times`
  // times they run.
  void FailWhen(const std::string& tool, execpb::ExecutorError error, int times);
  // Steps that plan a call of `tool` complete with TASK_STATUS_PARTIAL,
  // `limitation` and `confidence`.
  void PartialWhen(const std::string& tool, const std::string& limitation, double confidence);
  // Steps that plan a call of `tool` complete with an empty result (the
  // call found nothing).
  void EmptyWhen(const std::string& tool);
  // Runs when a step's task is assigned (e.g. a test cancelling the turn).
  void OnAssign(std::function<void(const execpb::TaskAssignment&)> hook);
  // The tasks assigned, in order.
  std::vector<execpb::TaskAssignment> assignments() const;
  // The answers the steps' questions were given, in order.
  std::vector<std::string> answers() const;
  // The deadline of each step's dialogue, in the order they were opened.
  std::vector<core::TimePoint> deadlines() const;

 private:
  class Dialogue;
  struct Asking {
    std::string question;
    std::vector<std::string> options;
  };

  mutable absl::Mutex mu_;
  std::map<std::string, Asking> asking_ ABSL_GUARDED_BY(mu_);
  struct Failing {
    execpb::ExecutorError error;
    int times = 0;
  };
  std::map<std::string, Failing> failing_ ABSL_GUARDED_BY(mu_);
  struct Partial {
    std::string limitation;
    double confidence = 1;
  };
  std::map<std::string, Partial> partial_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> empty_ ABSL_GUARDED_BY(mu_);
  std::function<void(const execpb::TaskAssignment&)> on_assign_ ABSL_GUARDED_BY(mu_);
  std::vector<execpb::TaskAssignment> assignments_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> answers_ ABSL_GUARDED_BY(mu_);
  std::vector<core::TimePoint> deadlines_ ABSL_GUARDED_BY(mu_);
};

}  // namespace omniforge::orchestrator::testing
