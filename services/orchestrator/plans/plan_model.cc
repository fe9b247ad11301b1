#include "services/orchestrator/plans/plan_model.h"

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "libs/core/text.h"
#include "services/orchestrator/api/public_types.h"
#include "services/orchestrator/plans/plan_assessment.h"

namespace omniforge::orchestrator {
namespace {

namespace intentpb = ::omniforge::intent::v1;

constexpr size_t kMaxObjectiveChars = 4000;
constexpr size_t kMaxListEntries = 20;
constexpr size_t kMaxEntryChars = 500;
constexpr size_t kMaxSteps = 20;

// Looks `name` up in a table of (value, name) pairs.
template <typename T, size_t N>
std::optional<T> ByName(const std::array<std::pair<T, std::string_view>, N>& table,
                        std::string_view name) {
  for (const auto& [value, entry] : table) {
    if (entry == name) return value;
  }
  return std::nullopt;
}

template <typename T, size_t N>
std::string_view NameOf(const std::array<std::pair<T, std::string_view>, N>& table, T value) {
  for (const auto& [entry, name] : table) {
    if (entry == value) return name;
  }
  return "";
}

constexpr std::array<std::pair<ExecutionMode, std::string_view>, 3> kModes = {{
    {ExecutionMode::kAutoExecute, "auto_execute"},
    {ExecutionMode::kDraftOnly, "draft_only"},
    {ExecutionMode::kAgentReview, "agent_review"},
}};
constexpr std::array<std::pair<PlanStatus, std::string_view>, 8> kPlanStatuses = {{
    {PlanStatus::kDraft, "draft"},
    {PlanStatus::kPendingReview, "pending_review"},
    {PlanStatus::kApproved, "approved"},
    {PlanStatus::kRunning, "running"},
    {PlanStatus::kWaitingOnUser, "waiting_on_user"},
    {PlanStatus::kCompleted, "completed"},
    {PlanStatus::kFailed, "failed"},
    {PlanStatus::kRejected, "rejected"},
}};
constexpr std::array<std::pair<StepStatus, std::string_view>, 5> kStepStatuses = {{
    {StepStatus::kPending, "pending"},
    {StepStatus::kRunning, "running"},
    {StepStatus::kCompleted, "completed"},
    {StepStatus::kFailed, "failed"},
    {StepStatus::kSkipped, "skipped"},
}};
constexpr std::array<std::pair<ReviewVerdict, std::string_view>, 3> kVerdicts = {{
    {ReviewVerdict::kApproved, "approved"},
    {ReviewVerdict::kRejected, "rejected"},
    {ReviewVerdict::kNeedsChanges, "needs_changes"},
}};
constexpr std::array<std::pair<intentpb::ContextType, std::string_view>, 5> kContextTypes = {{
    {intentpb::CONTEXT_TYPE_GLOBAL, "global"},
    {intentpb::CONTEXT_TYPE_PROJECT, "project"},
    {intentpb::CONTEXT_TYPE_PROJECT_CREATE, "project_create"},
    {intentpb::CONTEXT_TYPE_TASK, "task"},
    {intentpb::CONTEXT_TYPE_PROJECT_AUDIT, "project_audit"},
}};

constexpr char kCreatePlanSchema[] = R"({
  "type": "object",
  "properties": {
    "objective": {"type": "string", "description": "What the plan achieves, in the user's terms (one or two sentences)."},
    "execution_mode": {"type": "string", "enum": ["auto_execute", "draft_only", "agent_review"],
      "description": "auto_execute (default): run the steps now. draft_only: show the plan to the user for review first. agent_review: a reviewer checks the plan first."},
    "auto_execute": {"type": "boolean", "description": "Older form: false means draft_only."},
    "requested_outputs": {"type": "array", "items": {"type": "string"}, "description": "What the user wants to get out of it (a report, a project, ...)."},
    "priority_entities": {"type": "array", "items": {"type": "string"}, "description": "Names the plan must focus on (projects, agents, people)."}
  },
  "required": ["objective"],
  "additionalProperties": false
})";

// Reads an optional list of strings; INVALID_ARGUMENT naming `field`.
absl::StatusOr<std::vector<std::string>> StringList(const nlohmann::json& args,
                                                    const std::string& field) {
  std::vector<std::string> out;
  auto it = args.find(field);
  if (it == args.end() || it->is_null()) return out;
  if (!it->is_array() || it->size() > kMaxListEntries) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": must be a list of at most ", kMaxListEntries, " strings"));
  }
  for (const auto& entry : *it) {
    if (!entry.is_string() || entry.get<std::string>().size() > kMaxEntryChars) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ": every entry must be a string of at most ", kMaxEntryChars, " characters"));
    }
    out.push_back(entry.get<std::string>());
  }
  return out;
}

// The phases of a project_create plan, in their required order.
enum class Phase { kNone, kDiscovery, kTemplate, kProject, kContext };

Phase PhaseOf(const PlanStep& step) {
  std::set<std::string> tools(step.tools.begin(), step.tools.end());
  for (const PlannedCall& call : step.tool_calls) tools.insert(call.tool);
  // A step that does several things counts as its latest phase.
  if (tools.contains("create_context_document")) return Phase::kContext;
  if (tools.contains("create_project")) return Phase::kProject;
  if (tools.contains("create_project_template")) return Phase::kTemplate;
  if (tools.contains("list_project_templates")) return Phase::kDiscovery;
  return Phase::kNone;
}

const char* PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kDiscovery:
      return "template discovery (list_project_templates)";
    case Phase::kTemplate:
      return "template creation (create_project_template)";
    case Phase::kProject:
      return "project creation (create_project)";
    case Phase::kContext:
      return "the context document (create_context_document)";
    case Phase::kNone:
      break;
  }
  return "other work";
}

// Every step `step_id` depends on, directly or not.
std::set<std::string> Ancestors(const std::vector<PlanStep>& steps, const std::string& step_id) {
  std::map<std::string, const PlanStep*> by_id;
  for (const PlanStep& s : steps) by_id[s.id] = &s;
  std::set<std::string> seen;
  std::vector<std::string> todo = {step_id};
  while (!todo.empty()) {
    const std::string id = todo.back();
    todo.pop_back();
    auto it = by_id.find(id);
    if (it == by_id.end()) continue;
    for (const std::string& dep : it->second->depends_on) {
      if (seen.insert(dep).second) todo.push_back(dep);
    }
  }
  return seen;
}

}  // namespace

std::string ExecutionModeName(ExecutionMode mode) { return std::string(NameOf(kModes, mode)); }
std::optional<ExecutionMode> ParseExecutionMode(std::string_view name) {
  return ByName(kModes, name);
}
std::string PlanStatusName(PlanStatus status) { return std::string(NameOf(kPlanStatuses, status)); }
std::optional<PlanStatus> ParsePlanStatus(std::string_view name) {
  return ByName(kPlanStatuses, name);
}
std::string StepStatusName(StepStatus status) { return std::string(NameOf(kStepStatuses, status)); }
std::optional<StepStatus> ParseStepStatus(std::string_view name) {
  return ByName(kStepStatuses, name);
}
std::string ReviewVerdictName(ReviewVerdict verdict) {
  return std::string(NameOf(kVerdicts, verdict));
}
std::optional<ReviewVerdict> ParseReviewVerdict(std::string_view name) {
  return ByName(kVerdicts, name);
}
std::string ContextTypeName(intentpb::ContextType type) {
  const std::string_view name = NameOf(kContextTypes, type);
  return std::string(name.empty() ? "global" : name);
}
std::optional<intentpb::ContextType> ParseContextType(std::string_view name) {
  return ByName(kContextTypes, name);
}

llm::ToolSpec CreatePlanToolSpec() {
  return {kCreatePlanTool,
          "Make a multi-step plan for a goal that needs several tool calls or executor agents "
          "(set up a project, audit a project, build and schedule an agent). Independent steps "
          "run in parallel. The result reports every step's outcome.",
          kCreatePlanSchema};
}

absl::StatusOr<PlanRequest> ParsePlanRequest(std::string_view arguments_json) {
  const auto args = nlohmann::json::parse(arguments_json, nullptr, false);
  if (!args.is_object()) {
    return absl::InvalidArgumentError("agent_create_plan: the arguments must be a JSON object");
  }
  PlanRequest request;
  auto objective = args.find("objective");
  if (objective == args.end() || !objective->is_string() ||
      objective->get<std::string>().find_first_not_of(" \t\r\n") == std::string::npos) {
    return absl::InvalidArgumentError("objective: required, a non-empty string");
  }
  request.objective = objective->get<std::string>();
  if (request.objective.size() > kMaxObjectiveChars || !core::IsValidUtf8(request.objective)) {
    return absl::InvalidArgumentError(
        absl::StrCat("objective: at most ", kMaxObjectiveChars, " characters of UTF-8"));
  }
  if (auto legacy = args.find("auto_execute"); legacy != args.end() && !legacy->is_null()) {
    if (!legacy->is_boolean()) return absl::InvalidArgumentError("auto_execute: must be a boolean");
    if (!legacy->get<bool>()) request.mode = ExecutionMode::kDraftOnly;
  }
  if (auto mode = args.find("execution_mode"); mode != args.end() && !mode->is_null()) {
    const auto parsed =
        mode->is_string() ? ParseExecutionMode(mode->get<std::string>()) : std::nullopt;
    if (!parsed.has_value()) {
      return absl::InvalidArgumentError(
          "execution_mode: must be one of auto_execute, draft_only, agent_review");
    }
    request.mode = *parsed;
  }
  auto outputs = StringList(args, "requested_outputs");
  if (!outputs.ok()) return outputs.status();
  request.requested_outputs = *std::move(outputs);
  auto entities = StringList(args, "priority_entities");
  if (!entities.ok()) return entities.status();
  request.priority_entities = *std::move(entities);
  return request;
}

const PlanStep* Plan::FindStep(std::string_view step_id) const {
  for (const PlanStep& step : steps) {
    if (step.id == step_id) return &step;
  }
  return nullptr;
}

PlanStep* Plan::FindStep(std::string_view step_id) {
  return const_cast<PlanStep*>(std::as_const(*this).FindStep(step_id));
}

absl::Status ValidateStepGraph(const std::vector<PlanStep>& steps) {
  if (steps.empty() || steps.size() > kMaxSteps) {
    return absl::InvalidArgumentError(absl::StrCat("a plan has 1 to ", kMaxSteps, " steps"));
  }
  std::set<std::string> ids;
  for (const PlanStep& step : steps) {
    if (step.id.empty() || !core::IsSafeToken(step.id, 64)) {
      return absl::InvalidArgumentError("every step needs an id of letters, digits, - or _");
    }
    if (!ids.insert(step.id).second) {
      return absl::InvalidArgumentError(absl::StrCat("step id '", step.id, "' is used twice"));
    }
    if (step.description.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("step ", step.id, " has no description"));
    }
  }
  for (const PlanStep& step : steps) {
    for (const std::string& dep : step.depends_on) {
      if (!ids.contains(dep) || dep == step.id) {
        return absl::InvalidArgumentError(
            absl::StrCat("step ", step.id, " depends on '", dep, "', which is not another step"));
      }
    }
  }
  // Kahn's algorithm: whatever cannot be ordered is on a cycle.
  std::map<std::string, int> waiting;
  for (const PlanStep& step : steps) {
    waiting[step.id] =
        static_cast<int>(std::set(step.depends_on.begin(), step.depends_on.end()).size());
  }
  std::vector<std::string> ready;
  for (const auto& [id, count] : waiting) {
    if (count == 0) ready.push_back(id);
  }
  size_t ordered = 0;
  while (!ready.empty()) {
    const std::string id = ready.back();
    ready.pop_back();
    ++ordered;
    for (const PlanStep& step : steps) {
      const std::set deps(step.depends_on.begin(), step.depends_on.end());
      if (deps.contains(id) && --waiting[step.id] == 0) ready.push_back(step.id);
    }
  }
  if (ordered != steps.size()) {
    std::vector<std::string> cyclic;
    for (const auto& [id, count] : waiting) {
      if (count > 0) cyclic.push_back(id);
    }
    return absl::InvalidArgumentError(
        absl::StrCat("the steps' dependencies form a cycle (", absl::StrJoin(cyclic, ", "), ")"));
  }
  return absl::OkStatus();
}

std::optional<std::string> ProjectCreateOrderViolation(const std::vector<PlanStep>& steps) {
  // The first step of each phase, by position.
  std::map<Phase, size_t> first;
  for (size_t i = 0; i < steps.size(); ++i) {
    const Phase phase = PhaseOf(steps[i]);
    if (phase != Phase::kNone && !first.contains(phase)) first[phase] = i;
  }
  for (Phase required : {Phase::kDiscovery, Phase::kProject, Phase::kContext}) {
    if (!first.contains(required)) {
      return absl::StrCat(
          "a project_create plan must contain ", PhaseName(required),
          "; the order is template discovery, then create project, then the context document");
    }
  }
  // Every step of a phase must come after, and depend on, a step of each
  // earlier phase present in the plan.
  for (size_t i = 0; i < steps.size(); ++i) {
    const Phase phase = PhaseOf(steps[i]);
    if (phase == Phase::kNone) continue;
    const std::set<std::string> ancestors = Ancestors(steps, steps[i].id);
    for (const auto& [earlier, position] : first) {
      if (earlier >= phase) continue;
      bool depends = false;
      for (const PlanStep& step : steps) {
        if (PhaseOf(step) == earlier && ancestors.contains(step.id)) depends = true;
      }
      if (position > i || !depends) {
        return absl::StrCat("step ", steps[i].id, " (", PhaseName(phase), ") must come after ",
                            PhaseName(earlier), " and list that step in depends_on; the order ",
                            "is template discovery, then create project, then the context "
                            "document");
      }
    }
  }
  return std::nullopt;
}

planpb::StepStatus ToProto(StepStatus status) {
  switch (status) {
    case StepStatus::kPending:
      return planpb::STEP_STATUS_PENDING;
    case StepStatus::kRunning:
      return planpb::STEP_STATUS_RUNNING;
    case StepStatus::kCompleted:
      return planpb::STEP_STATUS_COMPLETED;
    case StepStatus::kFailed:
      return planpb::STEP_STATUS_FAILED;
    case StepStatus::kSkipped:
      return planpb::STEP_STATUS_SKIPPED;
  }
  return planpb::STEP_STATUS_UNSPECIFIED;
}

planpb::ReviewVerdict ToProto(ReviewVerdict verdict) {
  switch (verdict) {
    case ReviewVerdict::kApproved:
      return planpb::REVIEW_VERDICT_APPROVED;
    case ReviewVerdict::kRejected:
      return planpb::REVIEW_VERDICT_REJECTED;
    case ReviewVerdict::kNeedsChanges:
      return planpb::REVIEW_VERDICT_NEEDS_CHANGES;
  }
  return planpb::REVIEW_VERDICT_UNSPECIFIED;
}

planpb::PlanStatus ToProto(PlanStatus status) {
  static const std::map<PlanStatus, planpb::PlanStatus> kStatus = {
      {PlanStatus::kDraft, planpb::PLAN_STATUS_DRAFT},
      {PlanStatus::kPendingReview, planpb::PLAN_STATUS_PENDING_REVIEW},
      {PlanStatus::kApproved, planpb::PLAN_STATUS_APPROVED},
      {PlanStatus::kRunning, planpb::PLAN_STATUS_RUNNING},
      {PlanStatus::kWaitingOnUser, planpb::PLAN_STATUS_WAITING_ON_USER},
      {PlanStatus::kCompleted, planpb::PLAN_STATUS_COMPLETED},
      {PlanStatus::kFailed, planpb::PLAN_STATUS_FAILED},
      {PlanStatus::kRejected, planpb::PLAN_STATUS_REJECTED},
  };
  return kStatus.at(status);
}

planpb::Plan ToProto(const Plan& plan) {
  static const std::map<ExecutionMode, planpb::ExecutionMode> kMode = {
      {ExecutionMode::kAutoExecute, planpb::EXECUTION_MODE_AUTO_EXECUTE},
      {ExecutionMode::kDraftOnly, planpb::EXECUTION_MODE_DRAFT_ONLY},
      {ExecutionMode::kAgentReview, planpb::EXECUTION_MODE_AGENT_REVIEW},
  };
  planpb::Plan out;
  out.set_plan_id(plan.id);
  out.set_objective(plan.objective);
  out.set_execution_mode(kMode.at(plan.mode));
  out.set_status(ToProto(plan.status));
  out.set_context_type(PublicContextType(plan.context_type));
  for (const PlanStep& step : plan.steps) {
    planpb::PlanStep* s = out.add_steps();
    s->set_step_id(step.id);
    s->set_description(step.description);
    for (const std::string& tool : step.tools) s->add_tools(tool);
    s->set_needs_executor(step.needs_executor);
    for (const std::string& dep : step.depends_on) s->add_depends_on(dep);
    s->set_expected_output(step.expected_output);
    s->set_status(ToProto(step.status));
    s->set_result_summary(step.result_summary);
  }
  return out;
}

absl::StatusOr<std::vector<PlanStep>> StepsFromJson(const nlohmann::json& steps) {
  if (!steps.is_array()) return absl::InvalidArgumentError("steps: must be a list");
  std::vector<PlanStep> out;
  for (size_t i = 0; i < steps.size(); ++i) {
    const nlohmann::json& s = steps[i];
    const std::string where = absl::StrCat("steps[", i, "]: ");
    if (!s.is_object()) return absl::InvalidArgumentError(where + "must be an object");
    PlanStep step;
    try {
      step.id = s.value("id", "");
      step.description = s.value("description", "");
      step.tools = s.value("tools", std::vector<std::string>{});
      step.needs_executor = s.value("needs_executor", true);
      step.depends_on = s.value("depends_on", std::vector<std::string>{});
      step.expected_output = s.value("expected_output", "");
      for (const auto& call : s.value("tool_calls", nlohmann::json::array())) {
        PlannedCall planned{call.at("tool").get<std::string>(),
                            call.value("arguments", nlohmann::json::object())};
        if (!planned.arguments.is_object()) {
          return absl::InvalidArgumentError(where + "tool_calls: arguments must be objects");
        }
        step.tool_calls.push_back(std::move(planned));
      }
    } catch (const nlohmann::json::exception& e) {
      return absl::InvalidArgumentError(where + "malformed step (" + std::string(e.what()) + ")");
    }
    // A planned call's tool is one of the step's tools.
    for (const PlannedCall& call : step.tool_calls) {
      if (std::find(step.tools.begin(), step.tools.end(), call.tool) == step.tools.end()) {
        step.tools.push_back(call.tool);
      }
    }
    out.push_back(std::move(step));
  }
  return out;
}

nlohmann::json StepsToJson(const std::vector<PlanStep>& steps) {
  nlohmann::json out = nlohmann::json::array();
  for (const PlanStep& step : steps) {
    nlohmann::json calls = nlohmann::json::array();
    for (const PlannedCall& call : step.tool_calls) {
      calls.push_back({{"tool", call.tool}, {"arguments", call.arguments}});
    }
    out.push_back({{"id", step.id},
                   {"description", step.description},
                   {"tools", step.tools},
                   {"needs_executor", step.needs_executor},
                   {"depends_on", step.depends_on},
                   {"expected_output", step.expected_output},
                   {"tool_calls", calls}});
  }
  return out;
}

namespace {

// A plan that ran to its end: done, or done with the limitations its
// assessment found.
std::string CompletedText(const Plan& plan) {
  const Assessment assessed = AssessPlan(plan);
  if (!PlanRan(plan) || assessed.verdict == Verdict::kComplete) {
    return absl::StrCat("Done: the plan for \"", plan.objective, "\".");
  }
  std::vector<std::string> reasons;
  for (const std::string& reason : assessed.reasons) {
    reasons.emplace_back(absl::StripSuffix(reason, "."));
  }
  return absl::StrCat(
      "Done, with ", reasons.size(),
      reasons.size() == 1 ? " limitation: " : " limitations: ", absl::StrJoin(reasons, "; "),
      ". The plan for \"", plan.objective, "\" scored ", assessed.score, "/100.");
}

}  // namespace

std::string PlanReplyText(const Plan& plan) {
  auto step_line = [&plan](size_t i) {
    const PlanStep& step = plan.steps[i];
    std::string line = absl::StrCat("\n", i + 1, ". ", step.description);
    if (!step.depends_on.empty()) {
      std::vector<std::string> after;
      for (const std::string& id : step.depends_on) {
        for (size_t j = 0; j < plan.steps.size(); ++j) {
          if (plan.steps[j].id == id) after.push_back(absl::StrCat(j + 1));
        }
      }
      if (!after.empty()) absl::StrAppend(&line, " (after ", absl::StrJoin(after, ", "), ")");
    }
    return line;
  };
  auto outcome_line = [&plan](size_t i) {
    const PlanStep& step = plan.steps[i];
    std::string line = absl::StrCat("\n", i + 1, ". ", step.description, ": ");
    switch (step.status) {
      case StepStatus::kCompleted:
        absl::StrAppend(&line, step.result_summary.empty() ? "done" : step.result_summary);
        break;
      case StepStatus::kFailed:
        absl::StrAppend(&line, "failed", step.error.empty() ? "" : " (" + step.error + ")");
        break;
      case StepStatus::kSkipped:
        absl::StrAppend(&line, "not run");
        break;
      case StepStatus::kRunning:
        absl::StrAppend(&line, "interrupted, runs again when the plan goes on");
        break;
      case StepStatus::kPending:
        absl::StrAppend(&line, "not started");
        break;
    }
    return line;
  };
  std::string text;
  switch (plan.status) {
    case PlanStatus::kDraft:
    case PlanStatus::kPendingReview:
      text = absl::StrCat("Here is the plan for \"", plan.objective, "\":");
      for (size_t i = 0; i < plan.steps.size(); ++i) absl::StrAppend(&text, step_line(i));
      if (plan.review_verdict.has_value() && !plan.review_notes.empty()) {
        absl::StrAppend(&text, "\nThe reviewer's notes: ", plan.review_notes);
      }
      absl::StrAppend(&text, "\n", kPlanReviewQuestion);
      return text;
    case PlanStatus::kRejected:
      return absl::StrCat("OK, I dropped the plan for \"", plan.objective,
                          "\"; nothing more of it will run.");
    case PlanStatus::kWaitingOnUser:
      text = absl::StrCat("The plan for \"", plan.objective, "\" needs your answer to go on.");
      for (size_t i = 0; i < plan.steps.size(); ++i) absl::StrAppend(&text, outcome_line(i));
      if (plan.pending_question.has_value()) {
        absl::StrAppend(&text, "\n", plan.pending_question->question);
        if (!plan.pending_question->options.empty()) {
          absl::StrAppend(&text, " (", absl::StrJoin(plan.pending_question->options, " / "), ")");
        }
      }
      return text;
    case PlanStatus::kApproved:
    case PlanStatus::kRunning:
      text = absl::StrCat("The plan for \"", plan.objective, "\" stopped before its end:");
      for (size_t i = 0; i < plan.steps.size(); ++i) absl::StrAppend(&text, outcome_line(i));
      absl::StrAppend(&text,
                      "\nSay \"continue\" to finish it; steps that are done will not run again.");
      return text;
    case PlanStatus::kCompleted:
      text = CompletedText(plan);
      break;
    case PlanStatus::kFailed:
      text = absl::StrCat("The plan for \"", plan.objective, "\" failed",
                          plan.summary.empty() ? "" : ": " + plan.summary, ".");
      break;
  }
  for (size_t i = 0; i < plan.steps.size(); ++i) absl::StrAppend(&text, outcome_line(i));
  return text;
}

bool LeftOutByUser(const PlanStep& step) {
  return step.status == StepStatus::kSkipped && step.error.starts_with(kLeftOutByUser);
}

}  // namespace omniforge::orchestrator
