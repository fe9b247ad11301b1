// The project, task, project template and context document tools.
#include <chrono>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "libs/core/ids.h"
#include "services/executor/src/platform_handlers.h"

namespace omniforge::executor::platform {
namespace {

constexpr size_t kNameChars = 100;
constexpr size_t kDescriptionChars = 2000;
constexpr size_t kTaskTitleChars = 200;
constexpr size_t kTaskDescriptionChars = 5000;
constexpr size_t kDocumentChars = 100000;
constexpr size_t kMaxTemplateTasks = 100;

constexpr char kTaskJson[] = "(to_jsonb(t) - 'tenant_id')";

ToolResult ProjectNotFound(const std::string& ref) {
  return ToolResult::Error("not_found", absl::StrCat("no project '", ref,
                                                     "' among the user's projects "
                                                     "(search_projects finds them)"));
}

struct ProjectRow {
  std::string id, name, json;
};
std::optional<ProjectRow> FindProject(pqxx::work& tx, const ToolCall& call,
                                      const std::string& ref) {
  pqxx::result r = tx.exec_params(
      absl::StrCat("SELECT p.id::text, p.name, (to_jsonb(p) - 'tenant_id' - 'user_id')::text FROM "
                   "platform.projects p WHERE p.tenant_id = $1 AND p.user_id = $2 AND ",
                   ByIdOrName(ref, 3, "p.")),
      call.who.tenant_id, call.who.user_id, ref);
  if (r.empty()) return std::nullopt;
  return ProjectRow{r[0][0].c_str(), r[0][1].c_str(), r[0][2].c_str()};
}

std::string ProjectTasks(pqxx::work& tx, const ToolCall& call, const std::string& project_id,
                         const std::string& status) {
  return tx
      .exec_params(absl::StrCat("SELECT coalesce(jsonb_agg(", kTaskJson,
                                " - 'project_id' ORDER BY t.position, t.id), '[]'::jsonb)::text "
                                "FROM platform.tasks t WHERE t.tenant_id = $1 AND t.project_id = "
                                "$2::uuid AND ($3 = '' OR t.status = $3)"),
                   call.who.tenant_id, project_id, status)[0][0]
      .c_str();
}

// True for an existing calendar date written YYYY-MM-DD.
bool IsDate(const std::string& text) {
  if (text.size() != 10 || text[4] != '-' || text[7] != '-') return false;
  int y = 0, m = 0, d = 0;
  if (!absl::SimpleAtoi(text.substr(0, 4), &y) || !absl::SimpleAtoi(text.substr(5, 2), &m) ||
      !absl::SimpleAtoi(text.substr(8, 2), &d)) {
    return false;
  }
  return std::chrono::year_month_day(std::chrono::year(y), std::chrono::month(m),
                                     std::chrono::day(d))
      .ok();
}

}  // namespace

absl::StatusOr<ToolResult> CreateProject(pqxx::work& tx, const ToolCall& call,
                                         core::TimePoint /*now*/) {
  Args args(call.arguments);
  const std::string name = args.Name("name", kNameChars);
  const std::string description = args.Text("description", 0, kDescriptionChars);
  const auto template_ref = args.OptionalText("template", 1, 200);
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  std::optional<std::string> template_id;
  if (template_ref.has_value()) {
    pqxx::result t = tx.exec_params(
        absl::StrCat("SELECT pt.id::text FROM platform.project_templates pt WHERE pt.tenant_id = "
                     "$1 AND pt.user_id = $2 AND ",
                     ByIdOrName(*template_ref, 3, "pt.")),
        call.who.tenant_id, call.who.user_id, *template_ref);
    if (t.empty()) {
      return ToolResult::Error("not_found", absl::StrCat("no project template '", *template_ref,
                                                         "' (list_project_templates shows them)"));
    }
    template_id = t[0][0].c_str();
  }
  const std::string id = core::NewUuid();
  pqxx::result r = tx.exec_params(
      "INSERT INTO platform.projects AS p (tenant_id, id, user_id, name, description, "
      "template_id) VALUES ($1, $2::uuid, $3, $4, $5, $6::uuid) ON CONFLICT (tenant_id, user_id, "
      "lower(name)) DO NOTHING RETURNING (to_jsonb(p) - 'tenant_id' - 'user_id')::text",
      call.who.tenant_id, id, call.who.user_id, name, Sealed(description), template_id);
  if (r.empty()) {
    return ToolResult::Error("already_exists",
                             absl::StrCat("a project named '", name, "' already exists"));
  }
  if (template_id.has_value()) {
    tx.exec_params(
        "INSERT INTO platform.tasks (tenant_id, id, project_id, position, title, description) "
        "SELECT $1, gen_random_uuid(), $2::uuid, e.ord, e.t ->> 'title', coalesce(e.t ->> "
        "'description', '') FROM platform.project_templates pt, jsonb_array_elements(pt.tasks) "
        "WITH ORDINALITY AS e(t, ord) WHERE pt.tenant_id = $1 AND pt.id = $3::uuid",
        call.who.tenant_id, id, *template_id);
  }
  return ToolResult{JsonObject({{"project", r[0][0].c_str()},
                                {"tasks", ProjectTasks(tx, call, id, "")},
                                {"created", "true"}}),
                    false};
}

absl::StatusOr<ToolResult> UpdateTask(pqxx::work& tx, const ToolCall& call,
                                      core::TimePoint /*now*/) {
  Args args(call.arguments);
  const std::string id = args.Uuid("task_id");
  const auto title = args.OptionalName("title", kTaskTitleChars);
  const auto description = args.OptionalText("description", 0, kTaskDescriptionChars);
  const auto status = args.OptionalText("status", 1, 20);
  const auto assignee = args.OptionalText("assignee", 0, 200);
  const auto due_date = args.OptionalText("due_date", 0, 10);
  if (due_date.has_value() && !due_date->empty() && !IsDate(*due_date)) {
    args.Fail("due_date", absl::StrCat("'", *due_date, "' is not a date written YYYY-MM-DD"));
  }
  if (!title && !description && !status && !assignee && !due_date) {
    args.Fail("task_id",
              "nothing to change: give at least one of title, description, status, "
              "assignee, due_date");
  }
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  pqxx::result r = tx.exec_params(
      absl::StrCat("UPDATE platform.tasks t SET title = coalesce($4, t.title), description = "
                   "coalesce($5, t.description), status = coalesce($6, t.status), assignee = "
                   "coalesce($7, t.assignee), due_date = CASE WHEN $8::text IS NULL THEN "
                   "t.due_date WHEN $8::text = '' THEN NULL ELSE $8::date END, updated_at = now() "
                   "FROM platform.projects p WHERE t.tenant_id = $1 AND t.id = $3::uuid AND "
                   "p.tenant_id = $1 AND p.id = t.project_id AND p.user_id = $2 RETURNING ",
                   kTaskJson, "::text"),
      call.who.tenant_id, call.who.user_id, id, Sealed(title), Sealed(description), status,
      assignee, due_date);
  if (r.empty()) {
    return ToolResult::Error("not_found", absl::StrCat("no task '", id,
                                                       "' in the user's projects (list_tasks "
                                                       "shows a project's tasks)"));
  }
  return ToolResult{JsonObject({{"task", r[0][0].c_str()}}), false};
}

absl::StatusOr<ToolResult> CreateProjectTemplate(pqxx::work& tx, const ToolCall& call,
                                                 core::TimePoint /*now*/) {
  Args args(call.arguments);
  const std::string name = args.Name("name", kNameChars);
  const std::string description = args.Text("description", 0, kDescriptionChars);
  nlohmann::json tasks = nlohmann::json::array();
  if (auto it = call.arguments.find("tasks"); it != call.arguments.end()) {
    if (it->size() > kMaxTemplateTasks) {
      args.Fail("tasks", absl::StrCat("at most ", kMaxTemplateTasks, " tasks"));
    }
    for (size_t i = 0; i < it->size(); ++i) {
      Args task((*it)[i]);
      const std::string title = task.Name("title", kTaskTitleChars);
      const std::string text = task.Text("description", 0, kTaskDescriptionChars);
      if (!task.status().ok()) {
        args.Fail(absl::StrCat("tasks[", i, "]"), std::string(task.status().message()));
      }
      tasks.push_back({{"title", Sealed(title)}, {"description", Sealed(text)}});
    }
  }
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  pqxx::result r = tx.exec_params(
      "INSERT INTO platform.project_templates AS pt (tenant_id, id, user_id, name, description, "
      "tasks) VALUES ($1, $2::uuid, $3, $4, $5, $6::jsonb) ON CONFLICT (tenant_id, user_id, "
      "lower(name)) DO NOTHING RETURNING (to_jsonb(pt) - 'tenant_id' - 'user_id')::text",
      call.who.tenant_id, core::NewUuid(), call.who.user_id, name, Sealed(description),
      tasks.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  if (r.empty()) {
    return ToolResult::Error("already_exists",
                             absl::StrCat("a project template named '", name, "' already exists"));
  }
  return ToolResult{JsonObject({{"template", r[0][0].c_str()}, {"created", "true"}}), false};
}

absl::StatusOr<ToolResult> CreateContextDocument(pqxx::work& tx, const ToolCall& call,
                                                 core::TimePoint /*now*/) {
  Args args(call.arguments);
  const std::string ref = args.Text("project", 1, 200);
  const std::string title = args.Name("title", kTaskTitleChars);
  const std::string content = args.Text("content", 1, kDocumentChars);
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  auto project = FindProject(tx, call, ref);
  if (!project.has_value()) return ProjectNotFound(ref);
  pqxx::result r = tx.exec_params(
      "INSERT INTO platform.context_documents AS d (tenant_id, id, project_id, user_id, title, "
      "content) VALUES ($1, $2::uuid, $3::uuid, $4, $5, $6) RETURNING (to_jsonb(d) - 'tenant_id' "
      "- 'user_id')::text",
      call.who.tenant_id, core::NewUuid(), project->id, call.who.user_id, Sealed(title),
      Sealed(content));
  return ToolResult{JsonObject({{"document", r[0][0].c_str()}, {"created", "true"}}), false};
}

}  // namespace omniforge::executor::platform
