// The agent, skill and run tools.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "libs/core/ids.h"
#include "services/executor/src/platform_handlers.h"

namespace omniforge::executor::platform {
namespace {

constexpr size_t kNameChars = 100;
constexpr size_t kDescriptionChars = 2000;
constexpr size_t kInstructionsChars = 20000;
constexpr size_t kScheduleChars = 200;
constexpr size_t kMaxSkills = 50;

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
                                          const std::string& status) {
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
                   kAgentJson, ", old.status"),
      call.who.tenant_id, call.who.user_id, ref, status);
  if (r.empty()) return AgentNotFound(ref);
  const bool changed = std::string(r[0][1].c_str()) != status;
  return ToolResult{
      JsonObject({{"agent", r[0][0].c_str()}, {"changed", changed ? "true" : "false"}}), false};
}

}  // namespace

absl::StatusOr<ToolResult> CreateAgent(pqxx::work& tx, const ToolCall& call) {
  Args args(call.arguments);
  const std::string name = args.Name("name", kNameChars);
  const std::string description = args.Text("description", 0, kDescriptionChars);
  const std::string instructions = args.Text("instructions", 0, kInstructionsChars);
  const std::string schedule = args.Text("schedule", 0, kScheduleChars);
  const std::string skills = SkillList(args).value_or("[]");
  const std::string config = args.JsonText("config").value_or("{}");
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  pqxx::result r = tx.exec_params(
      absl::StrCat("INSERT INTO platform.agents AS a (tenant_id, id, user_id, name, description, "
                   "instructions, schedule, skills, config) VALUES ($1, $2::uuid, $3, $4, $5, $6, "
                   "$7, ARRAY(SELECT jsonb_array_elements_text($8::jsonb)), $9::jsonb) ON "
                   "CONFLICT (tenant_id, user_id, lower(name)) DO NOTHING RETURNING ",
                   kAgentJson),
      call.who.tenant_id, core::NewUuid(), call.who.user_id, name, description, instructions,
      schedule, skills, config);
  if (r.empty()) {
    return ToolResult::Error(
        "already_exists",
        absl::StrCat("an agent named '", name, "' already exists; pick another name or update it"));
  }
  return ToolResult{JsonObject({{"agent", r[0][0].c_str()}, {"created", "true"}}), false};
}

absl::StatusOr<ToolResult> UpdateAgent(pqxx::work& tx, const ToolCall& call) {
  Args args(call.arguments);
  const std::string ref = args.Text("agent", 1, 200);
  const auto name = args.OptionalName("name", kNameChars);
  const auto description = args.OptionalText("description", 0, kDescriptionChars);
  const auto instructions = args.OptionalText("instructions", 0, kInstructionsChars);
  const auto schedule = args.OptionalText("schedule", 0, kScheduleChars);
  const auto skills = SkillList(args);
  const auto config = args.JsonText("config");
  if (!name && !description && !instructions && !schedule && !skills && !config) {
    args.Fail("agent",
              "nothing to change: give at least one of name, description, "
              "instructions, schedule, skills, config");
  }
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  auto agent = FindAgent(tx, call, ref, true);
  if (!agent.has_value()) return AgentNotFound(ref);
  if (name.has_value() && AgentNameTaken(tx, call, *name, agent->id)) {
    return ToolResult::Error("already_exists",
                             absl::StrCat("another agent is already named '", *name, "'"));
  }
  pqxx::result r = tx.exec_params(
      absl::StrCat("UPDATE platform.agents a SET name = coalesce($3, a.name), description = "
                   "coalesce($4, a.description), instructions = coalesce($5, a.instructions), "
                   "schedule = coalesce($6, a.schedule), skills = CASE WHEN $7::jsonb IS NULL "
                   "THEN a.skills ELSE ARRAY(SELECT jsonb_array_elements_text($7::jsonb)) END, "
                   "config = coalesce($8::jsonb, a.config), updated_at = now() WHERE a.tenant_id "
                   "= $1 AND a.id = $2::uuid RETURNING ",
                   kAgentJson),
      call.who.tenant_id, agent->id, name, description, instructions, schedule, skills, config);
  return ToolResult{JsonObject({{"agent", r[0][0].c_str()}}), false};
}

absl::StatusOr<ToolResult> PauseAgent(pqxx::work& tx, const ToolCall& call) {
  return SetAgentStatus(tx, call, "paused");
}

absl::StatusOr<ToolResult> ResumeAgent(pqxx::work& tx, const ToolCall& call) {
  return SetAgentStatus(tx, call, "active");
}

absl::StatusOr<ToolResult> DeleteAgent(pqxx::work& tx, const ToolCall& call) {
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

absl::StatusOr<ToolResult> RunAgent(pqxx::work& tx, const ToolCall& call) {
  Args args(call.arguments);
  const std::string ref = args.Text("agent", 1, 200);
  const std::string input = args.JsonText("input").value_or("{}");
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  auto agent = FindAgent(tx, call, ref, false);
  if (!agent.has_value()) return AgentNotFound(ref);
  if (agent->status == "paused") {
    return ToolResult::Error("failed_precondition",
                             absl::StrCat("agent '", agent->name,
                                          "' is paused; resume it (resume_agent) before running "
                                          "it"));
  }
  pqxx::result r = tx.exec_params(
      "INSERT INTO platform.runs AS r (tenant_id, id, user_id, agent_id, agent_name, status, "
      "input, output, finished_at) SELECT $1, $2::uuid, $3, a.id, a.name, 'succeeded', $5::jsonb, "
      "jsonb_build_object('summary', 'Agent ''' || a.name || ''' ran on demand.', "
      "'instructions', a.instructions, 'skills', to_jsonb(a.skills), 'input', $5::jsonb), now() "
      "FROM platform.agents a WHERE a.tenant_id = $1 AND a.id = $4::uuid "
      "RETURNING (to_jsonb(r) - 'tenant_id' - 'user_id')::text",
      call.who.tenant_id, core::NewUuid(), call.who.user_id, agent->id, input);
  return ToolResult{JsonObject({{"run", r[0][0].c_str()}}), false};
}

absl::StatusOr<ToolResult> CreateSkill(pqxx::work& tx, const ToolCall& call) {
  Args args(call.arguments);
  const std::string name = args.Name("name", kNameChars);
  const std::string description = args.Text("description", 0, kDescriptionChars);
  const std::string instructions = args.Text("instructions", 0, kInstructionsChars);
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  pqxx::result r = tx.exec_params(
      "INSERT INTO platform.skills AS s (tenant_id, id, user_id, name, description, "
      "instructions) VALUES ($1, $2::uuid, $3, $4, $5, $6) ON CONFLICT (tenant_id, user_id, "
      "lower(name)) DO NOTHING RETURNING (to_jsonb(s) - 'tenant_id' - 'user_id')::text",
      call.who.tenant_id, core::NewUuid(), call.who.user_id, name, description, instructions);
  if (r.empty()) {
    return ToolResult::Error("already_exists",
                             absl::StrCat("a skill named '", name, "' already exists"));
  }
  return ToolResult{JsonObject({{"skill", r[0][0].c_str()}, {"created", "true"}}), false};
}

}  // namespace omniforge::executor::platform
