// The descriptors of the built-in platform tools: what a model reads to
// choose a tool and fill its arguments.
#include <iterator>
#include <utility>

#include "services/executor/src/platform_tools.h"

namespace omniforge::executor {
namespace {

constexpr char kAgentRef[] =
    R"("agent": {"type": "string", "description": "The agent's id or its exact name (case-insensitive)."})";

ToolSpec Spec(std::string name, ToolRisk risk, std::string description,
              const std::string& properties, const std::string& required) {
  return ToolSpec{std::move(name), std::move(description),
                  R"({"type": "object", "properties": {)" + properties + R"(}, "required": [)" +
                      required + R"(], "additionalProperties": false})",
                  risk, std::string(kBuiltinSource)};
}

std::string With(const char* a, const std::string& b) { return std::string(a) + ", " + b; }

constexpr char kLimit[] =
    R"("limit": {"type": "integer", "minimum": 1, "maximum": 200, "description": "At most this many (default 50)."})";
constexpr char kAgentFields[] =
    R"("description": {"type": "string", "description": "What the agent does, in a sentence or two (up to 2000 characters)."},
         "instructions": {"type": "string", "description": "How the agent works, step by step (up to 20000 characters)."},
         "schedule": {"type": "string", "description": "When it runs on its own, as people say it ('every monday at 9am', 'weekdays at 7:30', 'on the 1st of each month', 'every 2 hours') or a cron expression; empty: only on demand. A schedule that cannot be read is refused with how to say it."},
         "time_zone": {"type": "string", "description": "The IANA time zone of the schedule, e.g. 'Europe/Berlin' (default UTC)."},
         "missed_runs": {"type": "string", "enum": ["run_once", "skip"], "description": "Slots missed while the scheduler was down: run the latest once when it is back (default), or skip them. Either way they are reported."},
         "allow_overlap": {"type": "boolean", "description": "Whether a slot may start while the previous run still runs (default false: the slot is recorded as skipped)."},
         "tools": {"type": "array", "items": {"type": "string"}, "description": "Every tool a run of the agent may call (platform tools and MCP tools by name): the grant the user approves with the agent. Default: the tools of its steps."},
         "steps": {"type": "array", "maxItems": 20, "items": {"type": "object", "properties": {"tool": {"type": "string"}, "arguments": {"type": "object"}}, "required": ["tool"], "additionalProperties": false}, "description": "The tool calls a run makes without a model, in order, e.g. [{'tool': 'get_project_details', 'arguments': {'project': 'Harbor'}}]."},
         "limits": {"type": "object", "properties": {"max_tool_calls": {"type": "integer", "minimum": 1, "maximum": 50}, "timeout_s": {"type": "integer", "minimum": 1, "maximum": 3600}, "max_cost_usd": {"type": "number", "minimum": 0, "maximum": 100}}, "additionalProperties": false, "description": "Per run: tool calls (default 10), seconds (default 120), model cost in USD (default 0.50)."},
         "deliver": {"type": "object", "properties": {"tool": {"type": "string"}, "arguments": {"type": "object"}, "field": {"type": "string"}}, "additionalProperties": false, "description": "Where each run's output goes besides the run record: a tool called after the run with `arguments` and the output in `field` (default 'text'), e.g. {'tool': 'slack__post_message', 'arguments': {'channel': '#sales'}}. Its tool joins the grant. {} removes it."},
         "skills": {"type": "array", "items": {"type": "string"}, "description": "Names of skills the agent uses."},
         "config": {"type": "object", "description": "Free-form settings (integrations, channels, thresholds)."})";

// Agents: list, read, create, change, pause, resume, delete and run them.
std::vector<ToolSpec> AgentToolSpecs() {
  return {
      Spec(
          "list_agents", ToolRisk::kRead,
          "List the user's agents (name, description, status, schedule), by name, with the "
          "user's time zone and, when there are any, notices not yet told to the user (a "
          "scheduled run that failed or did part of its work, slots missed while no scheduler "
          "ran).",
          R"("status": {"type": "string", "enum": ["active", "paused"], "description": "Only agents in this state."}, )" +
              std::string(kLimit),
          ""),
      Spec("get_agent", ToolRisk::kRead,
           "Get one agent with its instructions, skills, config and its five latest runs.",
           kAgentRef, R"("agent")"),
      Spec(
          "create_agent", ToolRisk::kWrite,
          "Create an agent. Names are unique per user (1 to 100 characters).",
          R"("name": {"type": "string", "description": "A short unique name, e.g. 'weekly-sales-digest'."}, )" +
              std::string(kAgentFields),
          R"("name", "description")"),
      Spec("update_agent", ToolRisk::kWrite,
           "Change an agent: only the fields given change (skills and config are replaced "
           "whole).",
           With(kAgentRef, R"("name": {"type": "string", "description": "A new unique name."}, )" +
                               std::string(kAgentFields)),
           R"("agent")"),
      Spec("pause_agent", ToolRisk::kWrite,
           "Pause an agent: it stops running on its schedule and cannot be run until resumed.",
           kAgentRef, R"("agent")"),
      Spec("resume_agent", ToolRisk::kWrite, "Resume a paused agent.", kAgentRef, R"("agent")"),
      Spec("delete_agent", ToolRisk::kHigh,
           "Delete an agent and its run history for good. Cannot be undone.", kAgentRef,
           R"("agent")"),
      Spec(
          "run_agent", ToolRisk::kWrite,
          "Run an agent now and wait for it: it works with its instructions and only its "
          "granted tools, and the run is recorded with every tool call, its output, tokens and "
          "cost, and its status (succeeded, partial or failed with the error; see get_run).",
          With(
              kAgentRef,
              R"("input": {"type": "object", "description": "What this run works on (free-form)."})"),
          R"("agent")"),
  };
}

// Skills and the runs of agents.
std::vector<ToolSpec> SkillAndRunToolSpecs() {
  return {
      Spec(
          "list_skills", ToolRisk::kRead, "List the user's skills, by name.",
          R"("query": {"type": "string", "description": "Only skills whose name or description contains this text."}, )" +
              std::string(kLimit),
          ""),
      Spec(
          "create_skill", ToolRisk::kWrite,
          "Create a reusable skill that agents can use. Names are unique per user.",
          R"("name": {"type": "string", "description": "A short unique name (1 to 100 characters)."},
              "description": {"type": "string", "description": "What the skill does (up to 2000 characters)."},
              "instructions": {"type": "string", "description": "How to perform it (up to 20000 characters)."})",
          R"("name", "description")"),
      Spec(
          "list_runs", ToolRisk::kRead, "List agent runs, newest first.",
          With(
              R"("agent": {"type": "string", "description": "Only runs of this agent (id or exact name)."},
                   "status": {"type": "string", "enum": ["running", "succeeded", "partial", "failed"], "description": "Only runs in this state."})",
              kLimit),
          ""),
      Spec("get_run", ToolRisk::kRead, "Get one run with its input, output and error.",
           R"("run_id": {"type": "string", "description": "The run's id (a UUID)."})",
           R"("run_id")"),
  };
}

// The user's settings and notices.
std::vector<ToolSpec> SettingsToolSpecs() {
  return {
      Spec("get_settings", ToolRisk::kRead,
           "Get the user's settings: the time zone schedules are read in when they name none "
           "(default UTC).",
           "", ""),
      Spec(
          "update_settings", ToolRisk::kWrite,
          "Change the user's settings. The time zone applies to agents created or rescheduled "
          "from now on; agents that exist keep theirs.",
          R"("time_zone": {"type": "string", "description": "An IANA time zone, e.g. 'Europe/Berlin', 'America/New_York' or 'UTC'."})",
          R"("time_zone")"),
      Spec(
          "mark_notices_seen", ToolRisk::kWrite,
          "Mark notices list_agents reported as told to the user, so they are not reported "
          "again.",
          R"("notices": {"type": "array", "minItems": 1, "maxItems": 100, "items": {"type": "string"}, "description": "The notices' ids."})",
          R"("notices")"),
  };
}

// Projects, their tasks, templates and context documents.
std::vector<ToolSpec> ProjectToolSpecs() {
  return {
      Spec(
          "search_projects", ToolRisk::kRead,
          "Find the user's projects whose name or description contains the query (all projects "
          "when it is empty), with their task counts.",
          With(R"("query": {"type": "string", "description": "Text to look for, e.g. 'marketing'."},
                   "status": {"type": "string", "enum": ["active", "archived"], "description": "Only projects in this state."})",
               kLimit),
          ""),
      Spec(
          "get_project_details", ToolRisk::kRead,
          "Get one project with its tasks (in order) and context documents.",
          R"("project": {"type": "string", "description": "The project's id or its exact name (case-insensitive)."})",
          R"("project")"),
      Spec("list_tasks", ToolRisk::kRead, "List a project's tasks in order.",
           R"("project": {"type": "string", "description": "The project's id or its exact name."},
              "status": {"type": "string", "enum": ["todo", "in_progress", "blocked", "done"], "description": "Only tasks in this state."})",
           R"("project")"),
      Spec(
          "create_project", ToolRisk::kWrite,
          "Create a project, optionally from a template (its tasks are copied into the new "
          "project). Names are unique per user.",
          R"("name": {"type": "string", "description": "The project's name (1 to 100 characters)."},
              "description": {"type": "string", "description": "What the project is for (up to 2000 characters)."},
              "template": {"type": "string", "description": "A project template's id or exact name (see list_project_templates)."})",
          R"("name")"),
      Spec("update_task", ToolRisk::kWrite, "Change a task: only the fields given change.",
           R"("task_id": {"type": "string", "description": "The task's id (a UUID)."},
              "title": {"type": "string", "description": "A new title (1 to 200 characters)."},
              "description": {"type": "string", "description": "A new description (up to 5000 characters)."},
              "status": {"type": "string", "enum": ["todo", "in_progress", "blocked", "done"]},
              "assignee": {"type": "string", "description": "Who works on it; empty to unassign."},
              "due_date": {"type": "string", "description": "YYYY-MM-DD; empty to clear."})",
           R"("task_id")"),
      Spec(
          "list_project_templates", ToolRisk::kRead,
          "List project templates with the tasks each starts a project with.",
          R"("query": {"type": "string", "description": "Only templates whose name or description contains this text."}, )" +
              std::string(kLimit),
          ""),
      Spec("create_project_template", ToolRisk::kWrite,
           "Create a project template: a name, a description and the tasks a project made from "
           "it starts with (up to 100).",
           R"("name": {"type": "string", "description": "A unique name (1 to 100 characters)."},
              "description": {"type": "string", "description": "When to use it (up to 2000 characters)."},
              "tasks": {"type": "array", "description": "The starting tasks, in order.", "items": {"type": "object", "properties": {"title": {"type": "string"}, "description": {"type": "string"}}, "required": ["title"], "additionalProperties": false}})",
           R"("name")"),
      Spec("create_context_document", ToolRisk::kWrite,
           "Attach a context document (brief, goals, constraints) to a project, for the people "
           "and agents working on it.",
           R"("project": {"type": "string", "description": "The project's id or its exact name."},
              "title": {"type": "string", "description": "1 to 200 characters."},
              "content": {"type": "string", "description": "The document, up to 100000 characters."})",
           R"("project", "title", "content")"),
  };
}

}  // namespace

std::vector<ToolSpec> PlatformToolSpecs() {
  std::vector<ToolSpec> specs = AgentToolSpecs();
  for (std::vector<ToolSpec> more :
       {SkillAndRunToolSpecs(), SettingsToolSpecs(), ProjectToolSpecs()}) {
    std::move(more.begin(), more.end(), std::back_inserter(specs));
  }
  return specs;
}

}  // namespace omniforge::executor
