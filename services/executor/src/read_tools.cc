// The read-only platform tools. Each is a call of its function in
// migration 0003_read_functions.sql, which sets the tenant for row-level
// security and builds the whole JSON result in PostgreSQL with plans it
// keeps for the session, so a read costs one round trip and no planning
// (see PlatformTools::RunRead); values are quoted literals, not parameters.
#include "absl/strings/str_cat.h"
#include "libs/core/ids.h"
#include "services/executor/src/platform_handlers.h"

namespace omniforge::executor::platform {
namespace {

// "'<tenant>', '<user>'": the leading arguments of every read function.
std::string Owner(const Quote& q, const ToolCall& call) {
  return absl::StrCat(q(call.who.tenant_id), ", ", q(call.who.user_id));
}

// "'<uuid>'::uuid, NULL" for an id, "NULL, '<name>'" for a name: how the
// functions take a thing named by id or by exact name.
std::string IdOrName(const Quote& q, const std::string& ref) {
  return core::IsUuid(ref) ? absl::StrCat(q(ref), "::uuid, NULL") : absl::StrCat("NULL, ", q(ref));
}

std::string NotFound(const char* what, const std::string& ref, const char* hint) {
  return absl::StrCat("no ", what, " '", ref, "' among the user's ", what, "s (", hint, ")");
}

// A search by words: its descriptions are sealed, so without a query the
// function reads `limit` rows; with one it reads all of them (up to
// kMaxFilteredRows) and PlatformTools keeps those that match.
template <typename Sql>
ReadPlan Searched(const char* list, const std::string& query, int limit, const Sql& sql) {
  if (query.empty()) return ReadPlan{sql(limit), ""};
  return ReadPlan{sql(kMaxFilteredRows), "", ReadPlan::Filter{list, query, limit}};
}

}  // namespace

absl::StatusOr<ReadPlan> ListAgents(const Quote& q, const ToolCall& call) {
  Args args(call.arguments);
  const std::string status = args.Text("status", 0, 20);
  const int limit = args.Limit();
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  return ReadPlan{absl::StrCat("SELECT platform.read_list_agents(", Owner(q, call), ", ", q(status),
                               ", ", limit, ")")};
}

absl::StatusOr<ReadPlan> GetAgent(const Quote& q, const ToolCall& call) {
  Args args(call.arguments);
  const std::string ref = args.Text("agent", 1, 200);
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  return ReadPlan{
      absl::StrCat("SELECT platform.read_get_agent(", Owner(q, call), ", ", IdOrName(q, ref), ")"),
      NotFound("agent", ref, "list_agents shows them")};
}

absl::StatusOr<ReadPlan> ListSkills(const Quote& q, const ToolCall& call) {
  Args args(call.arguments);
  const std::string query = args.Text("query", 0, 200);
  const int limit = args.Limit();
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  return Searched("skills", query, limit, [&](int rows) {
    return absl::StrCat("SELECT platform.read_list_skills(", Owner(q, call), ", ", q("%"), ", ",
                        rows, ")");
  });
}

absl::StatusOr<ReadPlan> ListRuns(const Quote& q, const ToolCall& call) {
  Args args(call.arguments);
  const auto ref = args.OptionalText("agent", 1, 200);
  const std::string status = args.Text("status", 0, 20);
  const int limit = args.Limit();
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  return ReadPlan{absl::StrCat("SELECT platform.read_list_runs(", Owner(q, call), ", ",
                               ref.has_value() ? absl::StrCat("true, ", IdOrName(q, *ref))
                                               : std::string("false, NULL, NULL"),
                               ", ", q(status), ", ", limit, ")"),
                  NotFound("agent", ref.value_or(""), "list_agents shows them")};
}

absl::StatusOr<ReadPlan> GetRun(const Quote& q, const ToolCall& call) {
  Args args(call.arguments);
  const std::string id = args.Uuid("run_id");
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  return ReadPlan{
      absl::StrCat("SELECT platform.read_get_run(", Owner(q, call), ", ", q(id), "::uuid)"),
      NotFound("run", id, "list_runs shows them")};
}

absl::StatusOr<ReadPlan> SearchProjects(const Quote& q, const ToolCall& call) {
  Args args(call.arguments);
  const std::string query = args.Text("query", 0, 200);
  const std::string status = args.Text("status", 0, 20);
  const int limit = args.Limit();
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  return Searched("projects", query, limit, [&](int rows) {
    return absl::StrCat("SELECT platform.read_search_projects(", Owner(q, call), ", ", q("%"), ", ",
                        q(status), ", ", rows, ")");
  });
}

absl::StatusOr<ReadPlan> GetProjectDetails(const Quote& q, const ToolCall& call) {
  Args args(call.arguments);
  const std::string ref = args.Text("project", 1, 200);
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  return ReadPlan{absl::StrCat("SELECT platform.read_get_project_details(", Owner(q, call), ", ",
                               IdOrName(q, ref), ")"),
                  NotFound("project", ref, "search_projects finds them")};
}

absl::StatusOr<ReadPlan> ListTasks(const Quote& q, const ToolCall& call) {
  Args args(call.arguments);
  const std::string ref = args.Text("project", 1, 200);
  const std::string status = args.Text("status", 0, 20);
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  return ReadPlan{absl::StrCat("SELECT platform.read_list_tasks(", Owner(q, call), ", ",
                               IdOrName(q, ref), ", ", q(status), ")"),
                  NotFound("project", ref, "search_projects finds them")};
}

absl::StatusOr<ReadPlan> ListProjectTemplates(const Quote& q, const ToolCall& call) {
  Args args(call.arguments);
  const std::string query = args.Text("query", 0, 200);
  const int limit = args.Limit();
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  return Searched("templates", query, limit, [&](int rows) {
    return absl::StrCat("SELECT platform.read_list_project_templates(", Owner(q, call), ", ",
                        q("%"), ", ", rows, ")");
  });
}

absl::StatusOr<ReadPlan> GetSettings(const Quote& q, const ToolCall& call) {
  return ReadPlan{absl::StrCat("SELECT platform.read_get_settings(", Owner(q, call), ")")};
}

}  // namespace omniforge::executor::platform
