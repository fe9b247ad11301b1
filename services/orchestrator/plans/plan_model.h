// Plans as data: what `agent_create_plan` asks for, the steps a plan is
// made of, the rules a plan must keep (a dependency graph without cycles,
// the project_create order), and the plan as the ChatEvent messages show it.
//
// Pure functions and value types: no I/O, thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libs/llm/chat.h"
#include "omniforge/intent/v1/intent_service.pb.h"
#include "omniforge/orchestrator/v1/chat_service.pb.h"
#include "services/orchestrator/plans/assessment.h"

namespace omniforge::orchestrator {

namespace planpb = ::omniforge::orchestrator::v1;

// The meta tool the planner offers the model.
inline constexpr char kCreatePlanTool[] = "agent_create_plan";

enum class ExecutionMode { kAutoExecute, kDraftOnly, kAgentReview };

// pending_review: waits for the user's review; waiting_on_user: a step asked
// a question the planner could not answer and the plan waits for the user.
enum class PlanStatus {
  kDraft,
  kPendingReview,
  kApproved,
  kRunning,
  kWaitingOnUser,
  kCompleted,
  kFailed,
  kRejected,
};

enum class StepStatus { kPending, kRunning, kCompleted, kFailed, kSkipped };

enum class ReviewVerdict { kApproved, kRejected, kNeedsChanges };

// The names stored in the database and used in JSON ("auto_execute",
// "pending_review", "completed", "needs_changes"); Parse* return nullopt for
// an unknown name.
std::string ExecutionModeName(ExecutionMode mode);
std::optional<ExecutionMode> ParseExecutionMode(std::string_view name);
std::string PlanStatusName(PlanStatus status);
std::optional<PlanStatus> ParsePlanStatus(std::string_view name);
std::string StepStatusName(StepStatus status);
std::optional<StepStatus> ParseStepStatus(std::string_view name);
std::string ReviewVerdictName(ReviewVerdict verdict);
std::optional<ReviewVerdict> ParseReviewVerdict(std::string_view name);
// "project_create", "project_audit", ... (the guidance names of DESIGN.md).
std::string ContextTypeName(::omniforge::intent::v1::ContextType type);
std::optional<::omniforge::intent::v1::ContextType> ParseContextType(std::string_view name);

// The arguments of agent_create_plan.
struct PlanRequest {
  std::string objective;
  ExecutionMode mode = ExecutionMode::kAutoExecute;
  std::vector<std::string> requested_outputs;
  std::vector<std::string> priority_entities;
};

// The tool the planner model is offered (name, description, JSON schema).
llm::ToolSpec CreatePlanToolSpec();

// Reads agent_create_plan's arguments (a JSON object as the model wrote it).
// `auto_execute: false` (the older form) means draft_only unless
// execution_mode says otherwise. INVALID_ARGUMENT naming the field for
// anything else: a missing or empty objective (at most 4,000 characters),
// an unknown execution_mode, lists that are not lists of strings (at most 20
// entries of 500 characters).
absl::StatusOr<PlanRequest> ParsePlanRequest(std::string_view arguments_json);

// One tool call a step consists of, when the planner knows it.
struct PlannedCall {
  std::string tool;
  nlohmann::json arguments = nlohmann::json::object();
};

// A question an executor asked during a step and the answer it got (from the
// planner's model or from the user), so a re-run step gets the same answer.
struct StepAnswer {
  std::string question;
  std::string answer;
  std::string answered_by;  // "planner" or "user"
};

struct PlanStep {
  std::string id;  // "s1", "s2", ... unique within the plan
  std::string description;
  std::vector<std::string> tools;
  bool needs_executor = true;
  std::vector<std::string> depends_on;
  std::string expected_output;
  std::vector<PlannedCall> tool_calls;
  // Where the step is, and what it produced.
  StepStatus status = StepStatus::kPending;
  std::string result_summary;
  nlohmann::json result = nlohmann::json::object();
  std::string error;
  std::vector<StepAnswer> answers;
  std::string dialogue_conversation_id;
  int attempts = 0;
  int64_t started_micros = 0;
  int64_t finished_micros = 0;
  // How well it did, judged when it finished (plan_assessment.h); unset
  // before that.
  std::optional<Assessment> assessment;
};

// How the error of a step the user chose to leave out after it failed
// begins (PlanEngine::RecoverStep): the plan goes on without it, and
// completes without it.
inline constexpr char kLeftOutByUser[] = "left out at the user's word";
bool LeftOutByUser(const PlanStep& step);

// A question of a step waiting for the user's answer.
struct PendingQuestion {
  std::string step_id;
  std::string question;
  std::vector<std::string> options;
};

struct Plan {
  std::string id;
  std::string tenant_id;
  std::string user_id;
  std::string conversation_id;  // empty when the plan belongs to no conversation
  std::string objective;
  ::omniforge::intent::v1::ContextType context_type = ::omniforge::intent::v1::CONTEXT_TYPE_GLOBAL;
  std::string entity_id;
  ExecutionMode mode = ExecutionMode::kAutoExecute;
  PlanStatus status = PlanStatus::kDraft;
  std::vector<std::string> requested_outputs;
  std::vector<std::string> priority_entities;
  // The steps' writes run without asking again (the user or the reviewer
  // approved the plan, or it was made to run at once).
  bool writes_approved = false;
  std::optional<ReviewVerdict> review_verdict;
  std::string review_notes;
  std::optional<PendingQuestion> pending_question;
  // How the plan ended, in words (failed: why).
  std::string summary;
  std::vector<PlanStep> steps;

  const PlanStep* FindStep(std::string_view step_id) const;
  PlanStep* FindStep(std::string_view step_id);
};

// INVALID_ARGUMENT unless the steps form a plan that can run: 1 to 20 steps
// with unique non-empty ids and descriptions, every depends_on naming
// another step of the plan, and no dependency cycle.
absl::Status ValidateStepGraph(const std::vector<PlanStep>& steps);

// The project_create rule: template discovery, then create project, then a
// context document, in that order (an optional template creation between
// discovery and the project). A step's phase is read from its tools and
// planned calls. Returns the violation in words, for the model to correct,
// or nullopt when the steps keep the order. Each later phase must come
// after the earlier one both in the step order and through depends_on (so
// that it never runs in parallel with it).
std::optional<std::string> ProjectCreateOrderViolation(const std::vector<PlanStep>& steps);

// The plan in words for the chat reply, by where it stands: the steps and
// the review question (pending_review), each step's outcome (completed,
// failed), the question a step asks (waiting_on_user), what is left
// (running: stopped before its end), or that it was dropped (rejected).
std::string PlanReplyText(const Plan& plan);

// The words that end a plan shown for review: what the user can answer.
inline constexpr char kPlanReviewQuestion[] =
    R"(Shall I run it? Say "looks good, run it", tell me what to change, or "cancel".)";

// The plan as ChatEvents carry it.
planpb::Plan ToProto(const Plan& plan);
planpb::PlanStatus ToProto(PlanStatus status);
planpb::StepStatus ToProto(StepStatus status);
planpb::ReviewVerdict ToProto(ReviewVerdict verdict);

// The steps as the model wrote them (the "steps" array of the generation
// schema) or as stored; INVALID_ARGUMENT naming the first bad entry.
absl::StatusOr<std::vector<PlanStep>> StepsFromJson(const nlohmann::json& steps);
// The definition of steps (ids, descriptions, tools, dependencies, calls),
// without their progress: what the model and the reviewer read.
nlohmann::json StepsToJson(const std::vector<PlanStep>& steps);

}  // namespace omniforge::orchestrator
