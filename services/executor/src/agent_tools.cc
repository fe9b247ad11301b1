// The agent, skill and run tools.
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "libs/core/ids.h"
#include "libs/schedule/schedule.h"
#include "services/executor/src/platform_handlers.h"
#include "services/executor/src/platform_tools.h"
#include "services/executor/src/tool_catalog.h"

namespace omniforge::executor::platform {
namespace {

constexpr size_t kNameChars = 100;
constexpr size_t kDescriptionChars = 2000;
constexpr size_t kInstructionsChars = 20000;
constexpr size_t kScheduleChars = 200;
constexpr size_t kMaxSkills = 50;
constexpr size_t kMaxTools = 50;
constexpr size_t kMaxSteps = 20;
constexpr size_t kMaxDeliverArgumentBytes = 4000;

constexpr char kAgentJson[] = "(to_jsonb(a) - 'tenant_id' - 'user_id')::text";

ToolResult AgentNotFound(const std::string& ref) {
  return ToolResult::Error("not_found", absl::StrCat("no agent '", ref,
                                                     "' among the user's agents (list_agents "
                                                     "shows them)"));
}

// The skills argument as a JSON array text, checked.
std::optional<std::string> SkillList(Args& args) {
  auto skills = args.JsonText("skills");
  if (!skills.has_value()) return skills;
  const auto list = nlohmann::json::parse(*skills);
  if (list.size() > kMaxSkills)
    args.Fail("skills", absl::StrCat("at most ", kMaxSkills, " skills"));
  for (size_t i = 0; i < list.size(); ++i) {
    const auto& name = list[i].get_ref<const std::string&>();
    if (name.empty() || name.size() > kNameChars) {
      args.Fail(absl::StrCat("skills[", i, "]"), "must be 1 to 100 characters");
    }
  }
  return skills;
}

// The runnable parts of an agent given in a create or update, checked.
struct Definition {
  std::optional<std::vector<std::string>> tools;
  std::optional<nlohmann::json> steps;
  std::optional<std::string> limits;  // JSON object text
  std::optional<std::string> time_zone;
  std::optional<std::string> missed_runs;
  std::optional<bool> allow_overlap;
  std::optional<std::string> schedule;  // the words given
  // {"tool", "arguments", "field"} or {} (none); its tool joins the grant.
  std::optional<nlohmann::json> deliver;
};

std::optional<std::vector<std::string>> ToolList(Args& args, const nlohmann::json& json) {
  if (!json.contains("tools")) return std::nullopt;
  std::vector<std::string> tools;
  const auto& list = json["tools"];
  if (list.size() > kMaxTools) args.Fail("tools", absl::StrCat("at most ", kMaxTools, " tools"));
  for (size_t i = 0; i < list.size(); ++i) {
    const auto& name = list[i].get_ref<const std::string&>();
    if (!IsValidToolName(name)) {
      args.Fail(absl::StrCat("tools[", i, "]"), "is not a tool name ([A-Za-z0-9_-], 1 to 64)");
    } else if (IsNeverGranted(name)) {
      args.Fail(absl::StrCat("tools[", i, "]"),
                "an agent's run cannot run, create, change, pause, resume or delete agents, "
                "nor change the user's settings or notices");
    }
    if (std::find(tools.begin(), tools.end(), name) == tools.end()) tools.push_back(name);
  }
  return tools;
}

// A delivery with a built-in tool must fit its parameters: the output's
// field is one of them, and the arguments give every other required one.
// (An MCP tool's parameters are its server's: its call says what is wrong.)
void CheckBuiltinDelivery(Args& args, const std::string& tool, const nlohmann::json& arguments,
                          const std::string& field) {
  for (const ToolSpec& spec : PlatformToolSpecs()) {
    if (spec.name != tool) continue;
    const nlohmann::json schema = nlohmann::json::parse(spec.parameters_schema);
    if (!schema["properties"].contains(field)) {
      args.Fail("deliver.field", absl::StrCat("'", tool, "' has no parameter '", field, "'"));
    }
    for (const auto& required : schema.value("required", nlohmann::json::array())) {
      const std::string name = required.get<std::string>();
      if (name != field && !arguments.contains(name)) {
        args.Fail("deliver.arguments", absl::StrCat("'", tool, "' needs '", name, "'"));
      }
    }
  }
}

// Where a run's output goes: a tool of the grant (`tools` when given) that
// a run may call, arguments of a bounded size, and the field the output
// fills. {} goes nowhere.
nlohmann::json ReadDeliver(Args& args, const nlohmann::json& given,
                           const std::optional<std::vector<std::string>>& tools) {
  if (given.empty()) return nlohmann::json::object();
  const std::string tool = given.value("tool", "");
  if (!IsValidToolName(tool) || IsNeverGranted(tool)) {
    args.Fail("deliver.tool", "is not a tool an agent's run may call");
  } else if (tools && std::find(tools->begin(), tools->end(), tool) == tools->end()) {
    args.Fail("deliver.tool", absl::StrCat("'", tool, "' is not among the agent's tools"));
  }
  const nlohmann::json arguments = given.value("arguments", nlohmann::json::object());
  if (arguments.dump().size() > kMaxDeliverArgumentBytes) {
    args.Fail("deliver.arguments", absl::StrCat("at most ", kMaxDeliverArgumentBytes, " bytes"));
  }
  const std::string field = given.value("field", "text");
  if (!IsValidToolName(field) || arguments.contains(field)) {
    args.Fail("deliver.field",
              "names the argument the output fills: [A-Za-z0-9_-], not one of "
              "the arguments given");
  }
  CheckBuiltinDelivery(args, tool, arguments, field);
  return {{"tool", tool}, {"arguments", arguments}, {"field", field}};
}

Definition ReadDefinition(Args& args, const nlohmann::json& json) {
  Definition d;
  d.tools = ToolList(args, json);
  if (json.contains("steps")) {
    d.steps = json["steps"];
    if (d.steps->size() > kMaxSteps)
      args.Fail("steps", absl::StrCat("at most ", kMaxSteps, " steps"));
    for (size_t i = 0; i < d.steps->size(); ++i) {
      const std::string& tool = (*d.steps)[i]["tool"].get_ref<const std::string&>();
      if (!IsValidToolName(tool) || IsNeverGranted(tool)) {
        args.Fail(absl::StrCat("steps[", i, "].tool"), "is not a tool an agent's run may call");
      } else if (d.tools && std::find(d.tools->begin(), d.tools->end(), tool) == d.tools->end()) {
        args.Fail(absl::StrCat("steps[", i, "].tool"),
                  absl::StrCat("'", tool, "' is not among the agent's tools"));
      }
    }
  }
  if (json.contains("limits")) {  // stored as numbers of their own kind (60.0 is 60)
    const nlohmann::json& given = json["limits"];
    nlohmann::json limits = nlohmann::json::object();
    for (const char* whole : {"max_tool_calls", "timeout_s"}) {
      if (given.contains(whole)) limits[whole] = static_cast<int64_t>(given[whole].get<double>());
    }
    if (given.contains("max_cost_usd"))
      limits["max_cost_usd"] = given["max_cost_usd"].get<double>();
    d.limits = limits.dump();
  }
  d.time_zone = args.OptionalText("time_zone", 1, 64);
  if (d.time_zone && !schedule::IsTimeZone(*d.time_zone)) {
    args.Fail("time_zone", absl::StrCat("'", *d.time_zone,
                                        "' is not a time zone (an IANA name "
                                        "such as 'Europe/Berlin', or 'UTC')"));
  }
  if (json.contains("deliver")) d.deliver = ReadDeliver(args, json["deliver"], d.tools);
  d.missed_runs = args.OptionalText("missed_runs", 1, 20);
  if (json.contains("allow_overlap")) d.allow_overlap = json["allow_overlap"].get<bool>();
  d.schedule = args.OptionalText("schedule", 0, kScheduleChars);
  return d;
}

void AddTool(std::vector<std::string>& tools, const std::string& tool) {
  if (std::find(tools.begin(), tools.end(), tool) == tools.end()) tools.push_back(tool);
}

// The tools a step list calls, in order, each once.
std::vector<std::string> StepTools(const nlohmann::json& steps) {
  std::vector<std::string> tools;
  for (const auto& step : steps) {
    const std::string& tool = step["tool"].get_ref<const std::string&>();
    if (std::find(tools.begin(), tools.end(), tool) == tools.end()) tools.push_back(tool);
  }
  return tools;
}

// A JSON array text of strings.
std::string StringArray(const std::vector<std::string>& values) {
  return nlohmann::json(values).dump();
}

// The schedule to store: `words` read in `zone`; an empty `words` is none.
// A schedule that cannot be read fails the `schedule` field.
std::optional<schedule::Schedule> ReadSchedule(Args& args, const std::string& words,
                                               const std::string& zone) {
  if (words.empty()) return schedule::Schedule{};
  auto read = schedule::ParseSchedule(words, zone);
  if (!read.ok()) {
    args.Fail("schedule", std::string(read.status().message()));
    return std::nullopt;
  }
  return *read;
}

// Keeps the scheduler's row of agent `id` in step with the agent: none
// without a schedule; the next slot from now when the schedule is new or
// changed or the agent comes back from a pause; active while the agent is.
void SyncSchedule(pqxx::work& tx, const ToolCall& call, const std::string& id,
                  core::TimePoint now) {
  pqxx::result r = tx.exec_params(
      "SELECT a.schedule_cron, a.time_zone, a.missed_runs, a.allow_overlap, a.status, "
      "s.cron, s.time_zone, s.active FROM platform.agents a LEFT JOIN platform.agent_schedules s "
      "ON s.tenant_id = a.tenant_id AND s.agent_id = a.id WHERE a.tenant_id = $1 AND a.id = "
      "$2::uuid",
      call.who.tenant_id, id);
  if (r.empty()) return;
  const std::string cron = r[0][0].c_str(), zone = r[0][1].c_str();
  if (cron.empty()) {
    tx.exec_params("DELETE FROM platform.agent_schedules WHERE tenant_id = $1 AND agent_id = $2",
                   call.who.tenant_id, id);
    return;
  }
  const bool active = std::string(r[0][4].c_str()) == "active";
  const bool same = !r[0][5].is_null() && cron == r[0][5].c_str() && zone == r[0][6].c_str() &&
                    (r[0][7].as<bool>() || !active);
  auto parsed = schedule::Cron::Parse(cron);
  std::optional<core::TimePoint> next;
  if (parsed.ok()) next = parsed->NextAfter(now, zone);
  if (!next.has_value()) return;  // checked when it was stored: cannot happen
  tx.exec_params(
      "INSERT INTO platform.agent_schedules AS s (tenant_id, agent_id, user_id, cron, time_zone, "
      "next_slot, missed_runs, allow_overlap, active) VALUES ($1, $2::uuid, $3, $4, $5, "
      "to_timestamp($6::double precision / 1e6), $7, $8, $9) ON CONFLICT (tenant_id, agent_id) DO "
      "UPDATE SET cron = EXCLUDED.cron, time_zone = EXCLUDED.time_zone, missed_runs = "
      "EXCLUDED.missed_runs, allow_overlap = EXCLUDED.allow_overlap, active = EXCLUDED.active, "
      "next_slot = CASE WHEN $10 THEN s.next_slot ELSE EXCLUDED.next_slot END",
      call.who.tenant_id, id, call.who.user_id, cron, zone, core::MicrosOf(*next), r[0][2].c_str(),
      r[0][3].as<bool>(), active, same);
}

// The agent `ref` of the caller, as (id, json, status); nullopt when there is none.
struct AgentRow {
  std::string id, name, json, status;
};
std::optional<AgentRow> FindAgent(pqxx::work& tx, const ToolCall& call, const std::string& ref,
                                  bool lock) {
  pqxx::result r = tx.exec_params(
      absl::StrCat("SELECT a.id::text, a.name, ", kAgentJson,
                   ", a.status FROM platform.agents a WHERE a.tenant_id = $1 AND a.user_id = $2 "
                   "AND ",
                   ByIdOrName(ref, 3, "a."), lock ? " FOR UPDATE" : ""),
      call.who.tenant_id, call.who.user_id, ref);
  if (r.empty()) return std::nullopt;
  return AgentRow{r[0][0].c_str(), r[0][1].c_str(), r[0][2].c_str(), r[0][3].c_str()};
}

// The agent `id` as the tools show it.
std::string AgentJson(pqxx::work& tx, const ToolCall& call, const std::string& id) {
  return tx
      .exec_params(absl::StrCat("SELECT ", kAgentJson,
                                " FROM platform.agents a WHERE a.tenant_id = $1 AND a.id = "
                                "$2::uuid"),
                   call.who.tenant_id, id)[0][0]
      .c_str();
}

// True when another of the caller's agents (not `except_id`) is called `name`.
bool AgentNameTaken(pqxx::work& tx, const ToolCall& call, const std::string& name,
                    const std::string& except_id) {
  return !tx.exec_params(
                "SELECT 1 FROM platform.agents WHERE tenant_id = $1 AND user_id = $2 AND "
                "lower(name) = lower($3) AND id::text <> $4",
                call.who.tenant_id, call.who.user_id, name, except_id)
              .empty();
}

absl::StatusOr<ToolResult> SetAgentStatus(pqxx::work& tx, const ToolCall& call,
                                          const std::string& status, core::TimePoint now) {
  Args args(call.arguments);
  const std::string ref = args.Text("agent", 1, 200);
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  pqxx::result r = tx.exec_params(
      absl::StrCat("WITH old AS (SELECT a.id, a.status FROM platform.agents a WHERE a.tenant_id = "
                   "$1 AND a.user_id = $2 AND ",
                   ByIdOrName(ref, 3, "a."),
                   " FOR UPDATE) UPDATE platform.agents a SET status = $4, updated_at = CASE WHEN "
                   "old.status = $4 THEN a.updated_at ELSE now() END FROM old WHERE a.tenant_id = "
                   "$1 AND a.id = old.id RETURNING ",
                   kAgentJson, ", old.status, a.id::text"),
      call.who.tenant_id, call.who.user_id, ref, status);
  if (r.empty()) return AgentNotFound(ref);
  const bool changed = std::string(r[0][1].c_str()) != status;
  if (changed) SyncSchedule(tx, call, r[0][2].c_str(), now);
  return ToolResult{
      JsonObject({{"agent", r[0][0].c_str()}, {"changed", changed ? "true" : "false"}}), false};
}

// The grant after a change: the one given (which must still cover the
// steps and the delivery kept), else the stored one with the tools of new
// steps or a new delivery added; nullopt when it stays as it is.
std::optional<std::vector<std::string>> GrantAfterChange(Args& args, const Definition& d,
                                                         const nlohmann::json& stored) {
  auto tools = d.tools;
  std::vector<std::string> added = d.steps ? StepTools(*d.steps) : std::vector<std::string>();
  if (d.deliver && d.deliver->contains("tool")) {
    AddTool(added, (*d.deliver)["tool"].get<std::string>());
  }
  if (!tools && !added.empty()) {  // new steps or delivery: their tools join the agent's
    tools = stored["tools"].get<std::vector<std::string>>();
    for (const std::string& tool : added) AddTool(*tools, tool);
    return tools;
  }
  if (!tools) return tools;
  std::vector<std::string> kept = d.steps ? std::vector<std::string>() : StepTools(stored["steps"]);
  const nlohmann::json& deliver = stored.contains("deliver") ? stored["deliver"] : nlohmann::json();
  if (!d.deliver && deliver.is_object() && deliver.contains("tool")) {
    AddTool(kept, deliver["tool"].get<std::string>());
  }
  for (const std::string& tool : kept) {  // a smaller grant must still cover them
    if (std::find(tools->begin(), tools->end(), tool) == tools->end()) {
      args.Fail("tools", absl::StrCat("the agent's steps or delivery call '", tool,
                                      "'; change them too or keep the tool"));
    }
  }
  return tools;
}

}  // namespace

absl::StatusOr<ToolResult> CreateAgent(pqxx::work& tx, const ToolCall& call, core::TimePoint now) {
  Args args(call.arguments);
  const std::string name = args.Name("name", kNameChars);
  const std::string description = args.Text("description", 0, kDescriptionChars);
  const std::string instructions = args.Text("instructions", 0, kInstructionsChars);
  const std::string skills = SkillList(args).value_or("[]");
  const std::string config = args.JsonText("config").value_or("{}");
  Definition d = ReadDefinition(args, call.arguments);
  const nlohmann::json steps = d.steps.value_or(nlohmann::json::array());
  std::vector<std::string> tools = d.tools.value_or(StepTools(steps));
  if (!d.tools && d.deliver && d.deliver->contains("tool")) {
    AddTool(tools, (*d.deliver)["tool"].get<std::string>());
  }
  // Without a zone of its own an agent takes the user's (get_settings).
  const std::string zone = d.time_zone ? *d.time_zone : UserTimeZone(tx, call);
  const auto when = ReadSchedule(args, d.schedule.value_or(""), zone);
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  pqxx::result r = tx.exec_params(
      std::string(
          "INSERT INTO platform.agents AS a (tenant_id, id, user_id, name, description, "
          "instructions, schedule, skills, config, tools, steps, limits, schedule_cron, "
          "time_zone, missed_runs, allow_overlap, deliver) VALUES ($1, $2::uuid, $3, $4, $5, $6, "
          "$7, ARRAY(SELECT jsonb_array_elements_text($8::jsonb)), $9::jsonb, "
          "ARRAY(SELECT jsonb_array_elements_text($10::jsonb)), $11::jsonb, $12::jsonb, $13, $14, "
          "$15, $16, $17::jsonb) ON CONFLICT (tenant_id, user_id, lower(name)) DO NOTHING "
          "RETURNING a.id::text"),
      call.who.tenant_id, core::NewUuid(), call.who.user_id, name, Sealed(description),
      Sealed(instructions), when->description, skills, SealedStrings(config), StringArray(tools),
      steps.dump(), d.limits.value_or("{}"), when->cron,
      when->cron.empty() ? zone : when->time_zone, d.missed_runs.value_or("run_once"),
      d.allow_overlap.value_or(false), d.deliver.value_or(nlohmann::json::object()).dump());
  if (r.empty()) {
    return ToolResult::Error(
        "already_exists",
        absl::StrCat("an agent named '", name, "' already exists; pick another name or update it"));
  }
  const std::string id = r[0][0].c_str();
  SyncSchedule(tx, call, id, now);
  return ToolResult{JsonObject({{"agent", AgentJson(tx, call, id)}, {"created", "true"}}), false};
}

absl::StatusOr<ToolResult> UpdateAgent(pqxx::work& tx, const ToolCall& call, core::TimePoint now) {
  Args args(call.arguments);
  const std::string ref = args.Text("agent", 1, 200);
  const auto name = args.OptionalName("name", kNameChars);
  const auto description = args.OptionalText("description", 0, kDescriptionChars);
  const auto instructions = args.OptionalText("instructions", 0, kInstructionsChars);
  const auto skills = SkillList(args);
  const auto config = args.JsonText("config");
  Definition d = ReadDefinition(args, call.arguments);
  if (!name && !description && !instructions && !d.schedule && !skills && !config && !d.tools &&
      !d.steps && !d.limits && !d.time_zone && !d.missed_runs && !d.allow_overlap && !d.deliver) {
    args.Fail("agent",
              "nothing to change: give at least one of name, description, instructions, "
              "schedule, time_zone, missed_runs, allow_overlap, tools, steps, limits, deliver, "
              "skills, config");
  }
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  auto agent = FindAgent(tx, call, ref, true);
  if (!agent.has_value()) return AgentNotFound(ref);
  if (name.has_value() && AgentNameTaken(tx, call, *name, agent->id)) {
    return ToolResult::Error("already_exists",
                             absl::StrCat("another agent is already named '", *name, "'"));
  }
  const nlohmann::json stored = nlohmann::json::parse(agent->json);
  const auto tools = GrantAfterChange(args, d, stored);
  const std::string zone = d.time_zone.value_or(stored["time_zone"].get<std::string>());
  std::optional<schedule::Schedule> when;
  if (d.schedule) {
    when = ReadSchedule(args, *d.schedule, zone);
  } else if (d.time_zone && !stored["schedule_cron"].get<std::string>().empty()) {
    when = ReadSchedule(args, stored["schedule_cron"].get<std::string>(), zone);
  }
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  tx.exec_params(
      "UPDATE platform.agents a SET name = coalesce($3, a.name), description = "
      "coalesce($4, a.description), instructions = coalesce($5, a.instructions), "
      "schedule = coalesce($6, a.schedule), skills = CASE WHEN $7::jsonb IS NULL "
      "THEN a.skills ELSE ARRAY(SELECT jsonb_array_elements_text($7::jsonb)) END, "
      "config = coalesce($8::jsonb, a.config), tools = CASE WHEN $9::jsonb IS NULL THEN a.tools "
      "ELSE ARRAY(SELECT jsonb_array_elements_text($9::jsonb)) END, steps = coalesce($10::jsonb, "
      "a.steps), limits = coalesce($11::jsonb, a.limits), schedule_cron = coalesce($12, "
      "a.schedule_cron), time_zone = coalesce($13, a.time_zone), missed_runs = coalesce($14, "
      "a.missed_runs), allow_overlap = coalesce($15, a.allow_overlap), deliver = "
      "coalesce($16::jsonb, a.deliver), updated_at = now() WHERE a.tenant_id = $1 AND a.id = "
      "$2::uuid",
      call.who.tenant_id, agent->id, name, Sealed(description), Sealed(instructions),
      when ? std::optional<std::string>(when->description) : std::nullopt, skills,
      SealedStrings(config), tools ? std::optional<std::string>(StringArray(*tools)) : std::nullopt,
      d.steps ? std::optional<std::string>(d.steps->dump()) : std::nullopt, d.limits,
      when ? std::optional<std::string>(when->cron) : std::nullopt,
      when && !when->cron.empty() ? std::optional<std::string>(when->time_zone) : d.time_zone,
      d.missed_runs, d.allow_overlap,
      d.deliver ? std::optional<std::string>(d.deliver->dump()) : std::nullopt);
  SyncSchedule(tx, call, agent->id, now);
  return ToolResult{JsonObject({{"agent", AgentJson(tx, call, agent->id)}}), false};
}

absl::StatusOr<ToolResult> PauseAgent(pqxx::work& tx, const ToolCall& call, core::TimePoint now) {
  return SetAgentStatus(tx, call, "paused", now);
}

absl::StatusOr<ToolResult> ResumeAgent(pqxx::work& tx, const ToolCall& call, core::TimePoint now) {
  return SetAgentStatus(tx, call, "active", now);
}

absl::StatusOr<ToolResult> DeleteAgent(pqxx::work& tx, const ToolCall& call,
                                       core::TimePoint /*now*/) {
  Args args(call.arguments);
  const std::string ref = args.Text("agent", 1, 200);
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  pqxx::result r = tx.exec_params(
      absl::StrCat("WITH d AS (DELETE FROM platform.agents a WHERE a.tenant_id = $1 AND a.user_id "
                   "= $2 AND ",
                   ByIdOrName(ref, 3, "a."),
                   " RETURNING a.id, a.name) SELECT jsonb_build_object('id', d.id, 'name', "
                   "d.name)::text, (SELECT count(*) FROM platform.runs r WHERE r.tenant_id = $1 "
                   "AND r.agent_id = d.id) FROM d"),
      call.who.tenant_id, call.who.user_id, ref);
  if (r.empty()) return AgentNotFound(ref);
  return ToolResult{
      JsonObject(
          {{"deleted", "true"}, {"agent", r[0][0].c_str()}, {"runs_deleted", r[0][1].c_str()}}),
      false};
}

absl::StatusOr<ToolResult> RunAgent(AgentRunner* runner, const ToolCall& call) {
  Args args(call.arguments);
  const std::string ref = args.Text("agent", 1, 200);
  const std::string input = args.JsonText("input").value_or("{}");
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  if (runner == nullptr) {
    return absl::FailedPreconditionError("this executor runs no agents (no agent runtime)");
  }
  auto agent = runner->store().LoadAgent(call.who, ref);
  if (!agent.ok()) return agent.status();
  if (!agent->has_value()) return AgentNotFound(ref);
  if ((*agent)->status == "paused") {
    return ToolResult::Error("failed_precondition",
                             absl::StrCat("agent '", (*agent)->name,
                                          "' is paused; resume it (resume_agent) before running "
                                          "it"));
  }
  auto run_id =
      runner->store().StartRun(call.who, **agent, RunStart{"manual", std::nullopt, input});
  if (!run_id.ok()) return run_id.status();
  auto run = runner->Run(call.who, **agent, *run_id, input, call.deadline);
  if (!run.ok()) return run.status();
  return ToolResult{*run, false};
}

absl::StatusOr<ToolResult> CreateSkill(pqxx::work& tx, const ToolCall& call,
                                       core::TimePoint /*now*/) {
  Args args(call.arguments);
  const std::string name = args.Name("name", kNameChars);
  const std::string description = args.Text("description", 0, kDescriptionChars);
  const std::string instructions = args.Text("instructions", 0, kInstructionsChars);
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  pqxx::result r = tx.exec_params(
      "INSERT INTO platform.skills AS s (tenant_id, id, user_id, name, description, "
      "instructions) VALUES ($1, $2::uuid, $3, $4, $5, $6) ON CONFLICT (tenant_id, user_id, "
      "lower(name)) DO NOTHING RETURNING (to_jsonb(s) - 'tenant_id' - 'user_id')::text",
      call.who.tenant_id, core::NewUuid(), call.who.user_id, name, Sealed(description),
      Sealed(instructions));
  if (r.empty()) {
    return ToolResult::Error("already_exists",
                             absl::StrCat("a skill named '", name, "' already exists"));
  }
  return ToolResult{JsonObject({{"skill", r[0][0].c_str()}, {"created", "true"}}), false};
}

}  // namespace omniforge::executor::platform
