// The model calls that judge a plan or speak for the planner while it runs:
// the reviewer of agent_review plans (profile `quality`, operation
// `plan_review`) and the answers to executor questions (operation
// `executor_clarification`). Both use structured output.
//
// Thread-safe; the models must outlive the advisor.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/core/clock.h"
#include "libs/llm/chat_model.h"
#include "services/orchestrator/plans/plan_model.h"

namespace omniforge::orchestrator {

struct Review {
  ReviewVerdict verdict = ReviewVerdict::kNeedsChanges;
  std::string notes;
};

// The planner's answer to an executor's question, or the reason it must go
// to the user (a preference, a choice only the user can make).
struct QuestionAnswer {
  bool answered = false;
  std::string answer;
  std::string reason;
};

class PlanAdvisor final {
 public:
  // `reviewer`: the quality profile; `planner`: the planner's profile. Either
  // may be null (local mode): reviews then fail and questions go to the user.
  PlanAdvisor(llm::ChatModel* reviewer, llm::ChatModel* planner)
      : reviewer_(reviewer), planner_(planner) {}

  // The reviewer's verdict with notes; counts it in
  // omniforge_orchestrator_plan_reviews_total{verdict}. FAILED_PRECONDITION
  // without a reviewer model; the model's error otherwise.
  // The model call ends by `deadline` and is given `usage` (null: the model
  // client's own sink).
  absl::StatusOr<Review> ReviewPlan(const Plan& plan, core::TimePoint deadline,
                                    llm::CallUsage* usage = nullptr) const;

  // Whether the planner can answer `question` of `step` from the plan and
  // the earlier steps' results. Without a planner model, or when the model
  // fails, the question goes to the user (answered false, with the reason).
  QuestionAnswer AnswerQuestion(const Plan& plan, const PlanStep& step, const std::string& question,
                                const std::vector<std::string>& options, core::TimePoint deadline,
                                llm::CallUsage* usage = nullptr) const;

 private:
  llm::ChatModel* const reviewer_;
  llm::ChatModel* const planner_;
};

}  // namespace omniforge::orchestrator
