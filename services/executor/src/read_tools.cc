// The read-only platform tools. Each is one SQL statement that builds the
// whole JSON result in PostgreSQL, so a read costs one round trip (see
// PlatformTools::RunRead); values are quoted literals, not parameters.
#include "absl/strings/str_cat.h"
#include "services/executor/src/platform_handlers.h"

namespace omniforge::executor::platform {
namespace {

constexpr char kAgentSummary[] =
    "jsonb_build_object('id', a.id, 'name', a.name, 'description', a.description, 'status', "
    "a.status, 'schedule', a.schedule, 'skills', to_jsonb(a.skills), 'updated_at', a.updated_at)";
constexpr char kRunSummary[] =
    "jsonb_build_object('id', r.id, 'agent_id', r.agent_id, 'agent_name', r.agent_name, "
    "'status', r.status, 'started_at', r.started_at, 'finished_at', r.finished_at)";

// "<alias>tenant_id = '...' AND <alias>user_id = '...'"
std::string Owner(const Quote& q, const ToolCall& call, const char* alias) {
  return absl::StrCat(alias, "tenant_id = ", q(call.who.tenant_id), " AND ", alias,
                      "user_id = ", q(call.who.user_id));
}

std::string NotFound(const char* what, const std::string& ref, const char* hint) {
  return absl::StrCat("no ", what, " '", ref, "' among the user's ", what, "s (", hint, ")");
}

}  // namespace

absl::StatusOr<ReadPlan> ListAgents(const Quote& q, const ToolCall& call) {
  Args args(call.arguments);
  const std::string status = args.Text("status", 0, 20);
  const int limit = args.Limit();
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  return ReadPlan{absl::StrCat(
      "SELECT jsonb_build_object('agents', coalesce(jsonb_agg(x.j ORDER BY x.n), '[]'::jsonb), "
      "'count', count(*))::text FROM (SELECT ",
      kAgentSummary, " AS j, lower(a.name) AS n FROM platform.agents a WHERE ",
      Owner(q, call, "a."), status.empty() ? "" : " AND a.status = " + q(status),
      " ORDER BY lower(a.name) LIMIT ", limit, ") x")};
}

absl::StatusOr<ReadPlan> GetAgent(const Quote& q, const ToolCall& call) {
  Args args(call.arguments);
  const std::string ref = args.Text("agent", 1, 200);
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  return ReadPlan{
      absl::StrCat("SELECT jsonb_build_object('agent', to_jsonb(a) - 'tenant_id' - 'user_id', "
                   "'recent_runs', (SELECT coalesce(jsonb_agg(x.j ORDER BY x.s DESC), "
                   "'[]'::jsonb) FROM (SELECT jsonb_build_object('id', r.id, 'status', r.status, "
                   "'started_at', r.started_at, 'finished_at', r.finished_at) AS j, r.started_at "
                   "AS s FROM platform.runs r WHERE r.tenant_id = a.tenant_id AND r.agent_id = "
                   "a.id ORDER BY r.started_at DESC LIMIT 5) x))::text FROM platform.agents a "
                   "WHERE ",
                   Owner(q, call, "a."), " AND ", ByIdOrNameLiteral(q, ref, "a.")),
      NotFound("agent", ref, "list_agents shows them")};
}

absl::StatusOr<ReadPlan> ListSkills(const Quote& q, const ToolCall& call) {
  Args args(call.arguments);
  const std::string query = args.Text("query", 0, 200);
  const int limit = args.Limit();
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  const std::string like = q(ContainsPattern(query));
  return ReadPlan{absl::StrCat(
      "SELECT jsonb_build_object('skills', coalesce(jsonb_agg(x.j ORDER BY x.n), '[]'::jsonb), "
      "'count', count(*))::text FROM (SELECT jsonb_build_object('id', s.id, 'name', s.name, "
      "'description', s.description) AS j, lower(s.name) AS n FROM platform.skills s WHERE ",
      Owner(q, call, "s."), " AND (s.name ILIKE ", like, " OR s.description ILIKE ", like,
      ") ORDER BY lower(s.name) LIMIT ", limit, ") x")};
}

absl::StatusOr<ReadPlan> ListRuns(const Quote& q, const ToolCall& call) {
  Args args(call.arguments);
  const auto ref = args.OptionalText("agent", 1, 200);
  const std::string status = args.Text("status", 0, 20);
  const int limit = args.Limit();
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  std::string agent_filter;
  std::string agent_missing = "false";
  if (ref.has_value()) {
    const std::string agent =
        absl::StrCat("SELECT a.id FROM platform.agents a WHERE ", Owner(q, call, "a."), " AND ",
                     ByIdOrNameLiteral(q, *ref, "a."));
    agent_filter = absl::StrCat(" AND r.agent_id IN (", agent, ")");
    agent_missing = absl::StrCat("NOT EXISTS (", agent, ")");
  }
  return ReadPlan{
      absl::StrCat("SELECT CASE WHEN ", agent_missing,
                   " THEN NULL ELSE (SELECT jsonb_build_object('runs', coalesce(jsonb_agg(x.j "
                   "ORDER BY x.s DESC, x.i DESC), '[]'::jsonb), 'count', count(*)) FROM (SELECT ",
                   kRunSummary, " AS j, r.started_at AS s, r.id AS i FROM platform.runs r WHERE ",
                   Owner(q, call, "r."), agent_filter,
                   status.empty() ? "" : " AND r.status = " + q(status),
                   " ORDER BY r.started_at DESC, r.id DESC LIMIT ", limit, ") x) END::text"),
      NotFound("agent", ref.value_or(""), "list_agents shows them")};
}

absl::StatusOr<ReadPlan> GetRun(const Quote& q, const ToolCall& call) {
  Args args(call.arguments);
  const std::string id = args.Uuid("run_id");
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  return ReadPlan{absl::StrCat("SELECT jsonb_build_object('run', to_jsonb(r) - 'tenant_id' - "
                               "'user_id')::text FROM platform.runs r WHERE ",
                               Owner(q, call, "r."), " AND r.id = ", q(id), "::uuid"),
                  NotFound("run", id, "list_runs shows them")};
}

absl::StatusOr<ReadPlan> SearchProjects(const Quote& q, const ToolCall& call) {
  Args args(call.arguments);
  const std::string query = args.Text("query", 0, 200);
  const std::string status = args.Text("status", 0, 20);
  const int limit = args.Limit();
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  const std::string like = q(ContainsPattern(query));
  return ReadPlan{absl::StrCat(
      "SELECT jsonb_build_object('projects', coalesce(jsonb_agg(x.j ORDER BY x.n), "
      "'[]'::jsonb), 'count', count(*))::text FROM (SELECT jsonb_build_object('id', p.id, "
      "'name', p.name, 'description', p.description, 'status', p.status, 'task_count', "
      "t.total, 'open_task_count', t.open, 'updated_at', p.updated_at) AS j, lower(p.name) AS n "
      "FROM platform.projects p CROSS JOIN LATERAL (SELECT count(*) AS total, count(*) FILTER "
      "(WHERE t.status <> 'done') AS open FROM platform.tasks t WHERE t.tenant_id = p.tenant_id "
      "AND t.project_id = p.id) t WHERE ",
      Owner(q, call, "p."), " AND (p.name ILIKE ", like, " OR p.description ILIKE ", like, ")",
      status.empty() ? "" : " AND p.status = " + q(status), " ORDER BY lower(p.name) LIMIT ", limit,
      ") x")};
}

absl::StatusOr<ReadPlan> GetProjectDetails(const Quote& q, const ToolCall& call) {
  Args args(call.arguments);
  const std::string ref = args.Text("project", 1, 200);
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  return ReadPlan{
      absl::StrCat(
          "SELECT jsonb_build_object('project', to_jsonb(p) - 'tenant_id' - 'user_id', 'tasks', "
          "(SELECT coalesce(jsonb_agg(to_jsonb(t) - 'tenant_id' - 'project_id' ORDER BY "
          "t.position, t.id), '[]'::jsonb) FROM platform.tasks t WHERE t.tenant_id = p.tenant_id "
          "AND t.project_id = p.id), 'context_documents', (SELECT "
          "coalesce(jsonb_agg(jsonb_build_object('id', d.id, 'title', d.title, 'content', "
          "d.content, 'created_at', d.created_at) ORDER BY d.created_at, d.id), '[]'::jsonb) FROM "
          "platform.context_documents d WHERE d.tenant_id = p.tenant_id AND d.project_id = "
          "p.id))::text FROM platform.projects p WHERE ",
          Owner(q, call, "p."), " AND ", ByIdOrNameLiteral(q, ref, "p.")),
      NotFound("project", ref, "search_projects finds them")};
}

absl::StatusOr<ReadPlan> ListTasks(const Quote& q, const ToolCall& call) {
  Args args(call.arguments);
  const std::string ref = args.Text("project", 1, 200);
  const std::string status = args.Text("status", 0, 20);
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  return ReadPlan{
      absl::StrCat("SELECT jsonb_build_object('project', jsonb_build_object('id', p.id, 'name', "
                   "p.name), 'tasks', (SELECT coalesce(jsonb_agg(to_jsonb(t) - 'tenant_id' - "
                   "'project_id' ORDER BY t.position, t.id), '[]'::jsonb) FROM platform.tasks t "
                   "WHERE t.tenant_id = p.tenant_id AND t.project_id = p.id",
                   status.empty() ? "" : " AND t.status = " + q(status),
                   "))::text FROM platform.projects p WHERE ", Owner(q, call, "p."), " AND ",
                   ByIdOrNameLiteral(q, ref, "p.")),
      NotFound("project", ref, "search_projects finds them")};
}

absl::StatusOr<ReadPlan> ListProjectTemplates(const Quote& q, const ToolCall& call) {
  Args args(call.arguments);
  const std::string query = args.Text("query", 0, 200);
  const int limit = args.Limit();
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  const std::string like = q(ContainsPattern(query));
  return ReadPlan{absl::StrCat(
      "SELECT jsonb_build_object('templates', coalesce(jsonb_agg(x.j ORDER BY x.n), "
      "'[]'::jsonb), 'count', count(*))::text FROM (SELECT (to_jsonb(pt) - 'tenant_id' - "
      "'user_id') AS j, lower(pt.name) AS n FROM platform.project_templates pt WHERE ",
      Owner(q, call, "pt."), " AND (pt.name ILIKE ", like, " OR pt.description ILIKE ", like,
      ") ORDER BY lower(pt.name) LIMIT ", limit, ") x")};
}

}  // namespace omniforge::executor::platform
