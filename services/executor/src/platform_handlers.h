// Internal to the platform tools: the handler of each tool and the argument
// reader they share.
#pragma once

#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "services/executor/src/tool.h"

namespace omniforge::executor::platform {

// Reads validated arguments (the schema already fixed their types) and
// checks what a schema cannot: lengths, ids, dates. Problems are collected,
// each naming its field; status() reports them all.
class Args final {
 public:
  explicit Args(const nlohmann::json& json) : json_(json) {}

  bool Has(const char* field) const { return json_.contains(field); }
  // A required or optional string of min..max characters (absent: "" / nullopt).
  std::string Text(const char* field, size_t min_chars, size_t max_chars);
  std::optional<std::string> OptionalText(const char* field, size_t min_chars, size_t max_chars);
  // A name: 1..max characters, not blank, no control characters; trimmed.
  std::string Name(const char* field, size_t max_chars);
  std::optional<std::string> OptionalName(const char* field, size_t max_chars);
  // A UUID string.
  std::string Uuid(const char* field);
  int Limit(const char* field = "limit", int fallback = 50);
  // The field as JSON text, when present.
  std::optional<std::string> JsonText(const char* field) const;
  void Fail(const std::string& field, const std::string& problem);

  // INVALID_ARGUMENT listing every problem, or OK.
  absl::Status status() const;

 private:
  const nlohmann::json& json_;
  std::vector<std::string> problems_;
};

using Handler = absl::StatusOr<ToolResult> (*)(pqxx::work& tx, const ToolCall& call);

// Agents, skills, runs.
absl::StatusOr<ToolResult> ListAgents(pqxx::work& tx, const ToolCall& call);
absl::StatusOr<ToolResult> GetAgent(pqxx::work& tx, const ToolCall& call);
absl::StatusOr<ToolResult> CreateAgent(pqxx::work& tx, const ToolCall& call);
absl::StatusOr<ToolResult> UpdateAgent(pqxx::work& tx, const ToolCall& call);
absl::StatusOr<ToolResult> PauseAgent(pqxx::work& tx, const ToolCall& call);
absl::StatusOr<ToolResult> ResumeAgent(pqxx::work& tx, const ToolCall& call);
absl::StatusOr<ToolResult> DeleteAgent(pqxx::work& tx, const ToolCall& call);
absl::StatusOr<ToolResult> RunAgent(pqxx::work& tx, const ToolCall& call);
absl::StatusOr<ToolResult> ListSkills(pqxx::work& tx, const ToolCall& call);
absl::StatusOr<ToolResult> CreateSkill(pqxx::work& tx, const ToolCall& call);
absl::StatusOr<ToolResult> ListRuns(pqxx::work& tx, const ToolCall& call);
absl::StatusOr<ToolResult> GetRun(pqxx::work& tx, const ToolCall& call);

// Projects, tasks, templates, context documents.
absl::StatusOr<ToolResult> SearchProjects(pqxx::work& tx, const ToolCall& call);
absl::StatusOr<ToolResult> GetProjectDetails(pqxx::work& tx, const ToolCall& call);
absl::StatusOr<ToolResult> ListTasks(pqxx::work& tx, const ToolCall& call);
absl::StatusOr<ToolResult> CreateProject(pqxx::work& tx, const ToolCall& call);
absl::StatusOr<ToolResult> UpdateTask(pqxx::work& tx, const ToolCall& call);
absl::StatusOr<ToolResult> ListProjectTemplates(pqxx::work& tx, const ToolCall& call);
absl::StatusOr<ToolResult> CreateProjectTemplate(pqxx::work& tx, const ToolCall& call);
absl::StatusOr<ToolResult> CreateContextDocument(pqxx::work& tx, const ToolCall& call);

// `{"key": <json text>, ...}` from already-serialised JSON values, so rows
// built as JSON by PostgreSQL are not parsed again.
std::string JsonObject(std::initializer_list<std::pair<const char*, std::string>> fields);

// The SQL condition matching a row by `ref` (an id when it is a UUID,
// otherwise the exact name, case-insensitive) as parameter $n.
std::string ByIdOrName(const std::string& ref, int n, const char* alias = "");

}  // namespace omniforge::executor::platform
