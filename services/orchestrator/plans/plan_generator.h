// Making a plan's steps. With a model (operation `plan_generation`,
// structured output): ordered steps with their tools, dependencies,
// expected outputs and, where the model knows them, the tool calls, guided
// by the client context (project_audit: evaluator-style steps;
// project_create: template discovery, then create project, then the
// context document). A plan that breaks a rule (the project_create order,
// a dependency cycle) goes back to the model once with the violation; a
// second violation is an error. Without a model (local mode): a template
// per action, filled from the intent's entities, with every call planned.
//
// Thread-safe; the model (if any) must outlive the generator.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/core/clock.h"
#include "libs/llm/chat_model.h"
#include "omniforge/executor/v1/executor_service.pb.h"
#include "omniforge/intent/v1/intent_service.pb.h"
#include "services/orchestrator/plans/plan_model.h"
#include "services/orchestrator/usage/usage_attribution.h"

namespace omniforge::orchestrator {

// Where the plan is made.
struct PlanContext {
  ::omniforge::intent::v1::ContextType context_type = ::omniforge::intent::v1::CONTEXT_TYPE_GLOBAL;
  // The project or task the client shows.
  std::string entity_id;
  // How the user's message was understood (local templates read its action
  // and entities).
  std::optional<::omniforge::intent::v1::IntentAnalysis> intent;
  // The executor's tools (ListTools); the model plans with these only.
  std::vector<::omniforge::executor::v1::ToolDescriptor> tools;
  // When the model's answer is due; nullopt: the plan engine's model
  // timeout from now.
  std::optional<core::TimePoint> deadline;
  // The turn's model usage (usage_attribution.h), given with each model
  // call and copied for the rows of the steps run; null: the model client's
  // own sink, not metered, and the steps' calls are not stored.
  ModelUsage* usage = nullptr;
  // Local templates even with a model (the tenant's LLM budget is spent).
  bool local_only = false;
  // The planner's model of the turn (its context type's profile,
  // planner.profiles): the plan is made, and revised with a reviewer's
  // notes, by the model that planned the turn. Null: the generator's own
  // model (planner.profile). Must outlive the call.
  llm::ChatModel* model = nullptr;
};

// A revision: the plan so far and what to change.
struct PlanRevision {
  std::vector<PlanStep> previous;
  std::string feedback;
};

class PlanGenerator final {
 public:
  // Null `model`: local templates (unless a PlanContext names a model).
  explicit PlanGenerator(llm::ChatModel* model) : model_(model) {}

  // The steps for `request`, valid (ValidateStepGraph) and, in a
  // project_create context, in order. Errors: the model's own (its status,
  // e.g. UNAVAILABLE); FAILED_PRECONDITION naming the violation when the
  // corrected plan still breaks a rule; INVALID_ARGUMENT when no local
  // template fits (a project audit without a project).
  absl::StatusOr<std::vector<PlanStep>> Generate(
      const PlanRequest& request, const PlanContext& context,
      const std::optional<PlanRevision>& revision = std::nullopt) const;

  bool uses_model() const { return model_ != nullptr; }

 private:
  absl::StatusOr<std::vector<PlanStep>> FromModel(
      llm::ChatModel& model, const PlanRequest& request, const PlanContext& context,
      const std::optional<PlanRevision>& revision) const;

  llm::ChatModel* const model_;
};

// The local template for `request` in `context` (exposed for tests).
absl::StatusOr<std::vector<PlanStep>> LocalPlanTemplate(const PlanRequest& request,
                                                        const PlanContext& context);

// The first rule a plan made in `context` breaks, in words, or nullopt: the
// graph rules, tools that are not in context.tools (when it lists any) and,
// in project_create, the order.
std::optional<std::string> PlanRuleViolation(const std::vector<PlanStep>& steps,
                                             const PlanContext& context);

}  // namespace omniforge::orchestrator
