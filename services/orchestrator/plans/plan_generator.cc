#include "services/orchestrator/plans/plan_generator.h"

#include <algorithm>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "libs/core/text.h"
#include "libs/llm/structured_output.h"

namespace omniforge::orchestrator {
namespace {

namespace intentpb = ::omniforge::intent::v1;
namespace execpb = ::omniforge::executor::v1;

constexpr char kStepsSchema[] = R"({
  "type": "object",
  "properties": {
    "steps": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {
          "id": {"type": "string", "description": "s1, s2, ... unique within the plan."},
          "description": {"type": "string", "description": "What the step does, for an executor agent."},
          "tools": {"type": "array", "items": {"type": "string"}, "description": "The tools it may use (names from the tool list)."},
          "needs_executor": {"type": "boolean", "description": "True when it needs an agent's judgement (several calls, reading results); false for one known tool call."},
          "depends_on": {"type": "array", "items": {"type": "string"}, "description": "Ids of the steps whose results it needs; steps without a dependency between them run in parallel."},
          "expected_output": {"type": "string", "description": "What it should produce."},
          "tool_calls": {"type": "array", "description": "The calls it consists of when they are known now (may be empty).",
            "items": {"type": "object", "properties": {"tool": {"type": "string"}, "arguments": {"type": "object"}},
                      "required": ["tool", "arguments"]}}
        },
        "required": ["id", "description", "tools", "needs_executor", "depends_on", "expected_output", "tool_calls"]
      }
    }
  },
  "required": ["steps"]
})";

constexpr char kPlannerRole[] =
    "You plan work for the executor agents of an agent-building platform. Break the objective "
    "into ordered steps; each step is carried out by an executor agent with the tools you list "
    "for it. Use only the tools listed below. Give each step the ids of the steps whose results "
    "it needs in depends_on; steps that do not need each other run in parallel, so only add a "
    "dependency that is real. Give tool_calls with their arguments when you know them now "
    "(names and values from the request); leave them empty when a call depends on an earlier "
    "step's result. Keep plans short: 2 to 8 steps. Answer with the JSON object only.";

std::string Guidance(intentpb::ContextType context) {
  switch (context) {
    case intentpb::CONTEXT_TYPE_PROJECT_CREATE:
      return "Context project_create: the user is creating a project. The plan must be, in this "
             "order, each step depending on the one before: (1) template discovery with "
             "list_project_templates; (2) only when no template fits, create_project_template; "
             "(3) create_project (from the template found); (4) create_context_document for the "
             "new project with the brief, goals and constraints.";
    case intentpb::CONTEXT_TYPE_PROJECT_AUDIT:
      return "Context project_audit: the user wants the project evaluated. Plan evaluator-style "
             "steps: gather the facts in parallel (get_project_details, list_tasks by status), "
             "then evaluation steps that judge progress, blocked and overdue work, risks and gaps "
             "against the project's goal, then one step that states findings and "
             "recommendations. Audits only read: no write tools.";
    case intentpb::CONTEXT_TYPE_PROJECT:
      return "Context project: the user is looking at one project; plan around it.";
    case intentpb::CONTEXT_TYPE_TASK:
      return "Context task: the user is looking at one task; plan around it and its project.";
    default:
      return "Context global: the user's whole workspace.";
  }
}

std::string ToolList(const std::vector<execpb::ToolDescriptor>& tools) {
  std::string out;
  for (const execpb::ToolDescriptor& tool : tools) {
    const char* risk = tool.risk() == execpb::TOOL_RISK_READ   ? "read"
                       : tool.risk() == execpb::TOOL_RISK_HIGH ? "high risk"
                                                               : "write";
    absl::StrAppend(&out, "- ", tool.name(), " (", risk,
                    "): ", core::Shortened(tool.description(), 300), "\n");
  }
  return out;
}

std::string UserMessage(const PlanRequest& request, const PlanContext& context) {
  std::string out = absl::StrCat("Objective: ", request.objective);
  if (!request.requested_outputs.empty()) {
    absl::StrAppend(&out, "\nRequested outputs: ", absl::StrJoin(request.requested_outputs, "; "));
  }
  if (!request.priority_entities.empty()) {
    absl::StrAppend(&out, "\nFocus on: ", absl::StrJoin(request.priority_entities, "; "));
  }
  if (!context.entity_id.empty()) {
    absl::StrAppend(&out, "\nThe ", ContextTypeName(context.context_type),
                    " the user looks at: ", context.entity_id);
  }
  if (context.intent.has_value() && !context.intent->entities().empty()) {
    std::vector<std::string> entities;
    for (const auto& [key, value] : context.intent->entities()) {
      entities.push_back(absl::StrCat(key, "=", value));
    }
    std::sort(entities.begin(), entities.end());
    absl::StrAppend(&out, "\nEntities in the user's message: ", absl::StrJoin(entities, ", "));
  }
  return out;
}

std::string Dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

PlanStep Step(std::string id, std::string description, std::vector<std::string> depends_on,
              std::string expected_output, std::vector<PlannedCall> calls) {
  PlanStep step;
  step.id = std::move(id);
  step.description = std::move(description);
  step.depends_on = std::move(depends_on);
  step.expected_output = std::move(expected_output);
  step.needs_executor = calls.size() != 1;
  for (const PlannedCall& call : calls) step.tools.push_back(call.tool);
  step.tool_calls = std::move(calls);
  return step;
}

std::string Entity(const PlanContext& context, const std::string& key) {
  if (!context.intent.has_value()) return "";
  auto it = context.intent->entities().find(key);
  return it == context.intent->entities().end() ? "" : it->second;
}

std::string FirstOf(std::initializer_list<std::string> values) {
  for (const std::string& v : values) {
    if (!v.empty()) return v;
  }
  return "";
}

// A project's name from the words that asked for it: "Set up a project
// for the spring campaign launch" names "Spring campaign launch". Empty
// when nothing is left once the request words are gone.
std::string ProjectNameFrom(const std::string& objective) {
  static const std::set<std::string> kLeading = {
      "please", "can",  "could",  "you",   "set",     "up",    "create", "start", "make",
      "build",  "open", "new",    "a",     "an",      "the",   "me",     "us",    "our",
      "my",     "for",  "called", "named", "project", "about", "on",     "i",     "we",
      "want",   "need", "to",     "would", "like",    "let's", "lets"};
  std::string rest = objective;
  for (;;) {
    const size_t start = rest.find_first_not_of(" \t,.:;!?");
    if (start == std::string::npos) return "";
    const size_t end = rest.find_first_of(" \t,.:;!?", start);
    const std::string word = absl::AsciiStrToLower(rest.substr(start, end - start));
    if (kLeading.count(word) == 0) {
      rest = rest.substr(start);
      break;
    }
    if (end == std::string::npos) return "";
    rest = rest.substr(end);
  }
  while (!rest.empty() && std::string_view(" \t,.:;!?").find(rest.back()) != std::string::npos) {
    rest.pop_back();
  }
  rest = core::Shortened(rest, 80);
  if (!rest.empty()) rest[0] = absl::ascii_toupper(static_cast<unsigned char>(rest[0]));
  return rest;
}

// The local templates, one per kind of request. `focus` is the first
// priority entity (empty: none).

std::vector<PlanStep> ProjectCreatePlan(const PlanRequest& request, const PlanContext& context,
                                        const std::string& focus) {
  const std::string name =
      FirstOf({Entity(context, "project_name"), focus, ProjectNameFrom(request.objective),
               core::Shortened(request.objective, 80)});
  const std::string template_name = Entity(context, "template");
  nlohmann::json discovery = nlohmann::json::object();
  if (!template_name.empty()) discovery["query"] = template_name;
  nlohmann::json project = {{"name", name},
                            {"description", core::Shortened(request.objective, 2000)}};
  if (!template_name.empty()) project["template"] = template_name;
  std::string brief = absl::StrCat("Objective: ", request.objective);
  if (!request.requested_outputs.empty()) {
    absl::StrAppend(&brief, "\nExpected outputs: ", absl::StrJoin(request.requested_outputs, "; "));
  }
  if (!request.priority_entities.empty()) {
    absl::StrAppend(&brief, "\nFocus: ", absl::StrJoin(request.priority_entities, "; "));
  }
  return std::vector<PlanStep>{
      Step("s1", "Find a project template that fits", {}, "the matching templates",
           {{"list_project_templates", discovery}}),
      Step("s2", absl::StrCat("Create the project '", name, "'"), {"s1"}, "the new project",
           {{"create_project", project}}),
      Step("s3", "Write the project's context document", {"s2"}, "the context document",
           {{"create_context_document",
             {{"project", name}, {"title", "Project brief"}, {"content", brief}}}}),
  };
}

absl::StatusOr<std::vector<PlanStep>> ProjectAuditPlan(const PlanContext& context,
                                                       const std::string& focus) {
  const std::string project = FirstOf({context.entity_id, focus});
  if (project.empty()) {
    return absl::InvalidArgumentError("a project audit needs the project (entity_id)");
  }
  return std::vector<PlanStep>{
      Step("s1", "Read the project with its tasks and context documents", {},
           "the project's details", {{"get_project_details", {{"project", project}}}}),
      Step("s2", "List the blocked tasks", {}, "the blocked tasks",
           {{"list_tasks", {{"project", project}, {"status", "blocked"}}}}),
      Step("s3", "List the tasks not started yet", {}, "the open tasks",
           {{"list_tasks", {{"project", project}, {"status", "todo"}}}}),
  };
}

// `agent`: the agent the request names (empty: none).
std::vector<PlanStep> CreateAgentPlan(const PlanRequest& request, const PlanContext& context,
                                      const std::string& agent) {
  const std::string name = FirstOf({agent, core::Shortened(request.objective, 80)});
  nlohmann::json draft = {{"name", name},
                          {"description", core::Shortened(request.objective, 2000)}};
  if (std::string schedule = Entity(context, "schedule"); !schedule.empty()) {
    draft["schedule"] = schedule;
  }
  nlohmann::json config = nlohmann::json::object();
  for (const char* key : {"data_source", "recipients"}) {
    if (std::string value = Entity(context, key); !value.empty()) config[key] = value;
  }
  if (!config.empty()) draft["config"] = config;
  return std::vector<PlanStep>{
      Step("s1", "Check the user's agents for one that already does this", {},
           "the existing agents", {{"list_agents", nlohmann::json::object()}}),
      Step("s2", absl::StrCat("Create the agent '", name, "'"), {"s1"}, "the new agent",
           {{"create_agent", draft}}),
  };
}

std::vector<PlanStep> RunAgentPlan(const std::string& agent) {
  return std::vector<PlanStep>{
      Step("s1", absl::StrCat("Read the agent '", agent, "'"), {}, "the agent and its last runs",
           {{"get_agent", {{"agent", agent}}}}),
      Step("s2", absl::StrCat("Run the agent '", agent, "'"), {"s1"}, "the run",
           {{"run_agent", {{"agent", agent}}}}),
  };
}

// Anything else: an overview of the workspace, read in parallel.
std::vector<PlanStep> WorkspaceOverviewPlan(const std::string& focus) {
  nlohmann::json search = nlohmann::json::object();
  if (!focus.empty()) search["query"] = focus;
  return std::vector<PlanStep>{
      Step("s1", "List the user's agents", {}, "the agents",
           {{"list_agents", nlohmann::json::object()}}),
      Step("s2", "Find the projects concerned", {}, "the projects", {{"search_projects", search}}),
  };
}

}  // namespace

std::optional<std::string> PlanRuleViolation(const std::vector<PlanStep>& steps,
                                             const PlanContext& context) {
  if (absl::Status graph = ValidateStepGraph(steps); !graph.ok()) {
    return std::string(graph.message());
  }
  if (!context.tools.empty()) {
    std::set<std::string> known;
    for (const execpb::ToolDescriptor& tool : context.tools) known.insert(tool.name());
    for (const PlanStep& step : steps) {
      for (const std::string& tool : step.tools) {
        if (!known.contains(tool)) {
          return absl::StrCat("step ", step.id, " uses '", tool,
                              "', which is not one of the tools listed");
        }
      }
    }
  }
  if (context.context_type == intentpb::CONTEXT_TYPE_PROJECT_CREATE) {
    return ProjectCreateOrderViolation(steps);
  }
  return std::nullopt;
}

absl::StatusOr<std::vector<PlanStep>> PlanGenerator::Generate(
    const PlanRequest& request, const PlanContext& context,
    const std::optional<PlanRevision>& revision) const {
  llm::ChatModel* model = context.model != nullptr ? context.model : model_;
  if (model != nullptr && !context.local_only) {
    return FromModel(*model, request, context, revision);
  }
  return LocalPlanTemplate(request, context);
}

absl::StatusOr<std::vector<PlanStep>> PlanGenerator::FromModel(
    llm::ChatModel& model, const PlanRequest& request, const PlanContext& context,
    const std::optional<PlanRevision>& revision) const {
  llm::ChatRequest chat;
  chat.messages.push_back({llm::Role::kSystem,
                           absl::StrCat(kPlannerRole, "\n\n", Guidance(context.context_type),
                                        "\n\nTools:\n", ToolList(context.tools)),
                           {},
                           {}});
  chat.messages.push_back({llm::Role::kUser, UserMessage(request, context), {}, {}});
  if (revision.has_value()) {
    chat.messages.push_back(
        {llm::Role::kAssistant, Dump({{"steps", StepsToJson(revision->previous)}}), {}, {}});
    chat.messages.push_back(
        {llm::Role::kUser,
         absl::StrCat("Revise the plan: ", revision->feedback,
                      "\nAnswer with the whole revised plan as the same JSON object."),
         {},
         {}});
  }
  chat.response_format = llm::ResponseFormat{"plan", kStepsSchema, /*strict=*/false};
  llm::CallContext call;
  call.deadline_micros = context.deadline.has_value() ? core::MicrosOf(*context.deadline) : 0;
  call.usage = context.usage;
  call.operation_type = "plan_generation";

  std::string violation;
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto answer = llm::CompleteStructured(model, chat, call);
    if (!answer.ok()) return answer.status();
    auto steps = StepsFromJson(nlohmann::json::parse(answer->json)["steps"]);
    if (steps.ok()) {
      std::optional<std::string> broken = PlanRuleViolation(*steps, context);
      if (!broken.has_value()) return steps;
      violation = *std::move(broken);
    } else {
      violation = std::string(steps.status().message());
    }
    chat.messages.push_back({llm::Role::kAssistant, answer->json, {}, {}});
    chat.messages.push_back(
        {llm::Role::kUser,
         absl::StrCat("That plan is not valid: ", violation,
                      ". Correct it and answer with the whole plan as the same JSON object."),
         {},
         {}});
  }
  return absl::FailedPreconditionError(
      absl::StrCat("the model's plan broke a rule even after one correction: ", violation));
}

absl::StatusOr<std::vector<PlanStep>> LocalPlanTemplate(const PlanRequest& request,
                                                        const PlanContext& context) {
  const std::string focus =
      request.priority_entities.empty() ? "" : request.priority_entities.front();
  const intentpb::ActionType action = context.intent.has_value()
                                          ? context.intent->action_type()
                                          : intentpb::ACTION_TYPE_UNSPECIFIED;

  if (context.context_type == intentpb::CONTEXT_TYPE_PROJECT_CREATE) {
    return ProjectCreatePlan(request, context, focus);
  }
  if (context.context_type == intentpb::CONTEXT_TYPE_PROJECT_AUDIT) {
    return ProjectAuditPlan(context, focus);
  }
  const std::string agent = FirstOf({Entity(context, "agent_name"), focus});
  if (action == intentpb::ACTION_TYPE_CREATE_AGENT) {
    return CreateAgentPlan(request, context, agent);
  }
  if (action == intentpb::ACTION_TYPE_EXECUTE_TASK && !agent.empty()) {
    return RunAgentPlan(agent);
  }
  return WorkspaceOverviewPlan(focus);
}

}  // namespace omniforge::orchestrator
