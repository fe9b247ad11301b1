#include "services/sandbox/src/sandbox_tools.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "libs/core/ids.h"
#include "services/sandbox/src/seed.h"

namespace omniforge::sandbox {
namespace {

std::string DumpForText(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

const char* CodeOf(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument:
      return "invalid_argument";
    case absl::StatusCode::kNotFound:
      return "not_found";
    case absl::StatusCode::kAlreadyExists:
      return "already_exists";
    case absl::StatusCode::kFailedPrecondition:
      return "failed_precondition";
    // Only these say the database may answer if asked again.
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
      return "unavailable";
    default:
      return "internal";
  }
}

// Arguments a tool's schema does not name: the executor checks its schema
// before calling, a direct client may not.
std::vector<std::string> UnknownArguments(const ToolDefinition& tool,
                                          const nlohmann::json& arguments) {
  std::vector<std::string> unknown;
  const nlohmann::json& properties = tool.input_schema["properties"];
  for (const auto& [key, value] : arguments.items()) {
    if (!properties.contains(key)) unknown.push_back(key);
  }
  return unknown;
}

}  // namespace

std::optional<std::vector<Domain>> ParseDomains(std::string_view text) {
  if (text == "email") return std::vector<Domain>{Domain::kEmail};
  if (text == "calendar") return std::vector<Domain>{Domain::kCalendar};
  if (text == "contacts") return std::vector<Domain>{Domain::kContacts};
  if (text == "all")
    return std::vector<Domain>{Domain::kEmail, Domain::kCalendar, Domain::kContacts};
  return std::nullopt;
}

const char* DomainName(Domain domain) {
  switch (domain) {
    case Domain::kEmail:
      return "email";
    case Domain::kCalendar:
      return "calendar";
    case Domain::kContacts:
      return "contacts";
  }
  return "";
}

nlohmann::json ObjectSchema(nlohmann::json properties, std::vector<std::string> required) {
  return {{"type", "object"},
          {"properties", std::move(properties)},
          {"required", std::move(required)},
          {"additionalProperties", false}};
}

ToolResult Success(nlohmann::json structured) {
  ToolResult result;
  result.text = DumpForText(structured);
  result.structured = std::move(structured);
  return result;
}

ToolResult Failure(const std::string& code, const std::string& message,
                   const nlohmann::json& details) {
  nlohmann::json error = details.is_object() ? details : nlohmann::json::object();
  error["code"] = code;
  error["message"] = message;
  ToolResult result;
  result.is_error = true;
  result.text = message;
  result.structured = {{"error", std::move(error)}};
  return result;
}

ToolResult StoreFailure(const absl::Status& status) {
  return Failure(CodeOf(status.code()), std::string(status.message()));
}

SandboxTools::SandboxTools(SandboxStore& store, const core::Clock& clock, absl::TimeZone zone,
                           std::string tenant, const std::vector<Domain>& domains,
                           std::function<std::string()> new_id)
    : context_{store, clock, zone, std::move(tenant),
               new_id ? std::move(new_id) : std::function<std::string()>(core::NewUuid)} {
  for (Domain domain : domains) {
    std::vector<ToolDefinition> tools = domain == Domain::kEmail      ? EmailTools()
                                        : domain == Domain::kCalendar ? CalendarTools()
                                                                      : ContactsTools();
    for (ToolDefinition& tool : tools) tools_.push_back(std::move(tool));
  }
}

nlohmann::json SandboxTools::ListTools() const {
  nlohmann::json list = nlohmann::json::array();
  for (const ToolDefinition& tool : tools_) {
    list.push_back({{"name", tool.name},
                    {"title", tool.title},
                    {"description", tool.description},
                    {"inputSchema", tool.input_schema},
                    {"annotations",
                     {{"title", tool.title},
                      {"readOnlyHint", tool.read_only},
                      {"destructiveHint", tool.destructive},
                      {"idempotentHint", tool.idempotent},
                      {"openWorldHint", false}}}});
  }
  return list;
}

absl::StatusOr<ToolResult> SandboxTools::Call(const std::string& name,
                                              const nlohmann::json& arguments) {
  const ToolDefinition* tool = nullptr;
  for (const ToolDefinition& candidate : tools_) {
    if (candidate.name == name) tool = &candidate;
  }
  if (tool == nullptr) return absl::NotFoundError(absl::StrCat("no tool ", name));
  if (!arguments.is_object()) return Failure("invalid_argument", "arguments: expected an object");
  if (const auto unknown = UnknownArguments(*tool, arguments); !unknown.empty()) {
    return Failure("invalid_argument", absl::StrCat("unknown argument(s) ",
                                                    absl::StrJoin(unknown, ", "), " for ", name));
  }
  if (auto failed = EnsureSeeded(); failed.has_value()) return *failed;
  return tool->run(context_, arguments);
}

std::optional<ToolResult> SandboxTools::EnsureSeeded() {
  absl::MutexLock lock(&seed_mu_);
  if (seeded_) return std::nullopt;
  auto seeded =
      context_.store.SeedOnce(context_.tenant, MakeSeed(context_.clock.Now(), context_.zone));
  if (!seeded.ok()) return StoreFailure(seeded.status());
  seeded_ = true;
  return std::nullopt;
}

}  // namespace omniforge::sandbox
