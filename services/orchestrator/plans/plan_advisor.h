// The model calls that judge a plan or speak for the planner while it runs:
// the reviewer of agent_review plans (profile `quality`, operation
// `plan_review`) and the answers to executor questions (operation
// `executor_clarification`), by the planner model of the plan's context
// type (planner.profiles), as the rest of the turn. Both use structured
// output.
//
// Thread-safe; the models must outlive the advisor.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/core/clock.h"
#include "libs/llm/chat_model.h"
#include "omniforge/intent/v1/intent_service.pb.h"
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
  // `planner_by_context`: the planner model of each context type whose
  // profile is not the planner's own (planner.profiles); the others use
  // `planner`.
  PlanAdvisor(
      llm::ChatModel* reviewer, llm::ChatModel* planner,
      std::map<::omniforge::intent::v1::ContextType, llm::ChatModel*> planner_by_context = {})
      : reviewer_(reviewer),
        planner_(planner),
        planner_by_context_(std::move(planner_by_context)) {}

  // The reviewer's verdict with notes; counts it in
  // omniforge_orchestrator_plan_reviews_total{verdict}. FAILED_PRECONDITION
  // without a reviewer model; the model's error otherwise.
  // The model call ends by `deadline` and is given `usage` (null: the model
  // client's own sink).
  absl::StatusOr<Review> ReviewPlan(const Plan& plan, core::TimePoint deadline,
                                    llm::CallUsage* usage = nullptr) const;

  // Whether the planner can answer `question` of `step` from the plan and
  // the earlier steps' results, asked of the planner model of the plan's
  // context type. Without a planner model, or when the model fails, the
  // question goes to the user (answered false, with the reason).
  QuestionAnswer AnswerQuestion(const Plan& plan, const PlanStep& step, const std::string& question,
                                const std::vector<std::string>& options, core::TimePoint deadline,
                                llm::CallUsage* usage = nullptr) const;

 private:
  // The planner model of `context` (planner_ when it has none of its own).
  llm::ChatModel* PlannerFor(::omniforge::intent::v1::ContextType context) const;

  llm::ChatModel* const reviewer_;
  llm::ChatModel* const planner_;
  const std::map<::omniforge::intent::v1::ContextType, llm::ChatModel*> planner_by_context_;
};

}  // namespace omniforge::orchestrator
