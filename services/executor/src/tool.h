// Tools as the executor's runtime sees them, whatever hosts them: a
// descriptor (name, description, JSON-schema parameters, risk, source), a
// call, a result, and the ToolProvider interface that built-in tools and
// Model Context Protocol servers implement. No gRPC here.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/core/identity.h"

namespace omniforge::executor {

// How much a tool can change (the values match omniforge.executor.v1.ToolRisk).
enum class ToolRisk { kRead = 1, kWrite = 2, kHigh = 3 };

std::string_view ToolRiskName(ToolRisk risk);  // "read", "write", "high"

// One tool a model can call.
struct ToolSpec {
  std::string name;  // unique in a catalog, [A-Za-z0-9_-]{1,64}
  std::string description;
  std::string parameters_schema;  // a JSON Schema object, as JSON text
  ToolRisk risk = ToolRisk::kWrite;
  std::string source;  // "builtin" or the MCP server's name
};

// One call, with arguments already validated against the tool's schema.
struct ToolCall {
  core::Identity who;
  std::string tool_name;
  nlohmann::json arguments;  // a JSON object
  // The caller's deadline: a provider stops (DEADLINE_EXCEEDED) when it passes.
  std::chrono::system_clock::time_point deadline = std::chrono::system_clock::time_point::max();
};

// What a tool produced. A business failure (no such agent) is a result with
// is_error set, for the model to read; a Status error is the call failing.
struct ToolResult {
  std::string json;  // JSON text
  bool is_error = false;

  // {"error": {"code": code, "message": message}} with is_error set. Codes
  // used by the built-in tools: not_found, already_exists, failed_precondition.
  static ToolResult Error(std::string_view code, std::string_view message);
  static ToolResult Ok(const nlohmann::json& value);
};

// A source of tools: the built-in platform tools, or one MCP server through
// an adapter. Implementations must be thread-safe.
class ToolProvider {
 public:
  virtual ~ToolProvider() = default;

  // The tools offered. UNAVAILABLE when the source cannot be reached.
  virtual absl::StatusOr<std::vector<ToolSpec>> ListTools() = 0;

  // Runs `call.tool_name` (a name ListTools returned). Errors: INVALID_ARGUMENT
  // for arguments the schema could not rule out (a malformed id, a string too
  // long), naming the field as `$.field: ...`, having changed nothing;
  // DEADLINE_EXCEEDED past call.deadline; UNAVAILABLE when the backend is
  // down; NOT_FOUND for a tool it does not have.
  virtual absl::StatusOr<ToolResult> Invoke(const ToolCall& call) = 0;

  // Why a tool called `tool_name`, which this provider would serve, is not
  // there now (its service is not configured or down); nullopt when the
  // name is none of its business.
  virtual std::optional<std::string> WhyAbsent(std::string_view tool_name) const {
    (void)tool_name;
    return std::nullopt;
  }
};

}  // namespace omniforge::executor
