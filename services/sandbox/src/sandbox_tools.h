// The tools of the sandbox email, calendar and contacts servers, without
// any transport: their definitions (JSON Schema, MCP annotations) and what
// a call does to one tenant's state. The MCP layer (mcp_server.h) only
// frames and dispatches.
//
// A call answers a ToolResult: structured content, and on failure
// `isError` with {"error": {"code", "message", ...}} where code is
// invalid_argument, not_found, already_exists, failed_precondition,
// conflict, unavailable (the database cannot be reached or did not answer
// in time: asking again may work) or internal (anything else the database
// refused). Bad input never changes anything.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "libs/core/clock.h"
#include "nlohmann/json.hpp"
#include "services/sandbox/src/store.h"

namespace omniforge::sandbox {

enum class Domain { kEmail, kCalendar, kContacts };

// "email", "calendar", "contacts", or "all" (the three). nullopt otherwise.
std::optional<std::vector<Domain>> ParseDomains(std::string_view text);
const char* DomainName(Domain domain);

struct ToolResult {
  nlohmann::json structured = nlohmann::json::object();
  bool is_error = false;
  std::string text;  // for a model reading text only: the JSON, or the error's message
};

ToolResult Success(nlohmann::json structured);
// {"error": {"code": code, "message": message, <details>...}}.
ToolResult Failure(const std::string& code, const std::string& message,
                   const nlohmann::json& details = nlohmann::json::object());
// A store error as a tool error (not_found, already_exists, ..., unavailable
// for UNAVAILABLE and DEADLINE_EXCEEDED, internal for any other code).
ToolResult StoreFailure(const absl::Status& status);

// What a handler works with: one tenant's state, the sandbox's clock and
// time zone, and where new ids come from.
struct ToolContext {
  SandboxStore& store;
  const core::Clock& clock;
  absl::TimeZone zone;
  std::string tenant;
  std::function<std::string()> new_id;
};

struct ToolDefinition {
  std::string name;
  std::string title;
  std::string description;
  nlohmann::json input_schema;
  bool read_only = false;
  bool destructive = false;
  bool idempotent = false;
  std::function<ToolResult(ToolContext&, const nlohmann::json&)> run;
};

// {"type": "object", "properties", "required", "additionalProperties": false}
nlohmann::json ObjectSchema(nlohmann::json properties, std::vector<std::string> required);

std::vector<ToolDefinition> ContactsTools();
std::vector<ToolDefinition> CalendarTools();
std::vector<ToolDefinition> EmailTools();

// The tools of `domains` for one tenant. The tenant's seed (seed.h) is
// stored on its first call. Thread-safe.
class SandboxTools final {
 public:
  // `store` and `clock` must outlive this object.
  SandboxTools(SandboxStore& store, const core::Clock& clock, absl::TimeZone zone,
               std::string tenant, const std::vector<Domain>& domains,
               std::function<std::string()> new_id = nullptr);

  // The tools/list entries: name, title, description, inputSchema, annotations.
  nlohmann::json ListTools() const;

  // Runs tool `name` with `arguments` (a JSON object). NOT_FOUND when no
  // such tool is offered; every other outcome is a ToolResult.
  absl::StatusOr<ToolResult> Call(const std::string& name, const nlohmann::json& arguments);

 private:
  // Seeds the tenant once; an error result when the store cannot.
  std::optional<ToolResult> EnsureSeeded();

  ToolContext context_;
  std::vector<ToolDefinition> tools_;
  absl::Mutex seed_mu_;
  bool seeded_ ABSL_GUARDED_BY(seed_mu_) = false;
};

}  // namespace omniforge::sandbox
