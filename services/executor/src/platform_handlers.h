// Internal to the platform tools: the handler of each tool and the argument
// reader they share.
#pragma once

#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/core/clock.h"
#include "libs/seal/keys.h"
#include "services/executor/src/agent_runner.h"
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

// Quotes a value as an SQL literal for the connection it was made from.
class Quote final {
 public:
  explicit Quote(pqxx::connection_base& conn) : conn_(conn) {}
  std::string operator()(const std::string& value) const { return conn_.quote(value); }

 private:
  pqxx::connection_base& conn_;
};

// A read tool as one SQL statement (values quoted in) yielding one text
// column: the result JSON, or no row / NULL when the thing asked for does
// not exist, which becomes a not_found tool error with `not_found_message`.
// The statement calls the tool's read function, which sets the tenant.
struct ReadPlan {
  std::string sql;
  std::string not_found_message;
  // A search over words that are sealed at rest (descriptions) cannot run
  // in SQL: the statement asks for all the user's rows (up to
  // kMaxFilteredRows), and the list `list` of the opened result keeps the
  // items whose name or description contains `query` (case-insensitive),
  // at most `limit`; its `count` follows.
  struct Filter {
    std::string list;
    std::string query;
    int limit = 0;
  };
  std::optional<Filter> filter;
};

// How many rows a filtered search reads at most.
inline constexpr int kMaxFilteredRows = 2000;

// A search's opened result with its list filtered (ReadPlan::Filter).
std::string Filtered(const std::string& json_text, const ReadPlan::Filter& filter);

// What a write handler stores of the user's and the model's words is sealed
// with the caller's tenant key (seal::KeyRing, platform.tenant_keys), which
// PlatformTools gives the call on its thread for as long as a SealingScope
// lives. Reads are opened where results leave PlatformTools and the agent
// runtime. Names (agents, skills, projects, templates) are identifiers and
// stay readable; so do statuses, schedules, tool names and times.
class SealingScope {
 public:
  SealingScope(const seal::DataKey& key, std::string ad);
  ~SealingScope();
  SealingScope(const SealingScope&) = delete;
  SealingScope& operator=(const SealingScope&) = delete;

 private:
  // What an enclosing scope set, restored at the end of this one.
  const seal::DataKey* previous_key_;
  std::string previous_ad_;
};
// `text` sealed for the call on this thread ("" stays "").
std::string Sealed(const std::string& text);
std::optional<std::string> Sealed(const std::optional<std::string>& text);
// A JSON document's text with every string in it sealed (seal::SealStrings).
std::string SealedStrings(const std::string& json_text);
std::optional<std::string> SealedStrings(const std::optional<std::string>& json_text);
// What the executor's sealed values of `tenant` are bound to.
std::string PlatformAd(const std::string& tenant);

// A write tool runs statements in a transaction; a read tool plans one
// statement. Both return INVALID_ARGUMENT (naming the field) for arguments
// the schema could not rule out.
// `now` is the platform tools' clock: the time schedules count from.
using WriteHandler = absl::StatusOr<ToolResult> (*)(pqxx::work& tx, const ToolCall& call,
                                                    core::TimePoint now);
using ReadHandler = absl::StatusOr<ReadPlan> (*)(const Quote& quote, const ToolCall& call);

// Reads (read_tools.cc).
absl::StatusOr<ReadPlan> ListAgents(const Quote& q, const ToolCall& call);
absl::StatusOr<ReadPlan> GetAgent(const Quote& q, const ToolCall& call);
absl::StatusOr<ReadPlan> ListSkills(const Quote& q, const ToolCall& call);
absl::StatusOr<ReadPlan> ListRuns(const Quote& q, const ToolCall& call);
absl::StatusOr<ReadPlan> GetRun(const Quote& q, const ToolCall& call);
absl::StatusOr<ReadPlan> SearchProjects(const Quote& q, const ToolCall& call);
absl::StatusOr<ReadPlan> GetProjectDetails(const Quote& q, const ToolCall& call);
absl::StatusOr<ReadPlan> ListTasks(const Quote& q, const ToolCall& call);
absl::StatusOr<ReadPlan> ListProjectTemplates(const Quote& q, const ToolCall& call);
absl::StatusOr<ReadPlan> GetSettings(const Quote& q, const ToolCall& call);

// Agents, skills, runs (agent_tools.cc).
absl::StatusOr<ToolResult> CreateAgent(pqxx::work& tx, const ToolCall& call, core::TimePoint now);
absl::StatusOr<ToolResult> UpdateAgent(pqxx::work& tx, const ToolCall& call, core::TimePoint now);
absl::StatusOr<ToolResult> PauseAgent(pqxx::work& tx, const ToolCall& call, core::TimePoint now);
absl::StatusOr<ToolResult> ResumeAgent(pqxx::work& tx, const ToolCall& call, core::TimePoint now);
absl::StatusOr<ToolResult> DeleteAgent(pqxx::work& tx, const ToolCall& call, core::TimePoint now);
// Runs the agent now through `runner` (its own transactions) and returns the run.
absl::StatusOr<ToolResult> RunAgent(AgentRunner* runner, const ToolCall& call);
absl::StatusOr<ToolResult> CreateSkill(pqxx::work& tx, const ToolCall& call, core::TimePoint now);

// Projects, tasks, templates, context documents (project_tools.cc).
absl::StatusOr<ToolResult> CreateProject(pqxx::work& tx, const ToolCall& call, core::TimePoint now);
absl::StatusOr<ToolResult> UpdateTask(pqxx::work& tx, const ToolCall& call, core::TimePoint now);
absl::StatusOr<ToolResult> CreateProjectTemplate(pqxx::work& tx, const ToolCall& call,
                                                 core::TimePoint now);
absl::StatusOr<ToolResult> CreateContextDocument(pqxx::work& tx, const ToolCall& call,
                                                 core::TimePoint now);

// The user's settings and notices (settings_tools.cc).
absl::StatusOr<ToolResult> UpdateSettings(pqxx::work& tx, const ToolCall& call,
                                          core::TimePoint now);
absl::StatusOr<ToolResult> MarkNoticesSeen(pqxx::work& tx, const ToolCall& call,
                                           core::TimePoint now);
// The time zone the user's schedules are read in when they name none.
std::string UserTimeZone(pqxx::work& tx, const ToolCall& call);

// `{"key": <json text>, ...}` from already-serialised JSON values, so rows
// built as JSON by PostgreSQL are not parsed again.
std::string JsonObject(std::initializer_list<std::pair<const char*, std::string>> fields);

// The SQL condition matching a row by `ref` (an id when it is a UUID,
// otherwise the exact name, case-insensitive) as parameter $n.
std::string ByIdOrName(const std::string& ref, int n, const char* alias = "");

}  // namespace omniforge::executor::platform
