#include "services/executor/src/domain_tools.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "libs/core/logging.h"
#include "services/executor/src/mcp_tools.h"
#include "services/executor/src/tool_catalog.h"

namespace omniforge::executor {
namespace {

constexpr char kSeparator[] = "__";
constexpr double kTextOnlyConfidence = 0.8;
constexpr double kPartialConfidence = 0.5;

bool IsKnownDomain(std::string_view name) {
  return std::any_of(std::begin(kDomains), std::end(kDomains),
                     [name](const char* domain) { return name == domain; });
}

// The text blocks of a result, joined; other blocks are counted in `skipped`.
std::string TextOf(const mcp::CallToolResult& result, int* skipped) {
  std::vector<std::string> texts;
  for (const mcp::ContentBlock& block : result.content) {
    if (block.type == mcp::ContentBlock::Type::kText) {
      texts.push_back(block.text);
    } else {
      ++*skipped;
    }
  }
  return absl::StrJoin(texts, "\n");
}

bool SaysPartial(const nlohmann::json& data) {
  if (!data.is_object()) return false;
  const auto flag = [&data](const char* key) {
    const auto it = data.find(key);
    return it != data.end() && it->is_boolean() && it->get<bool>();
  };
  const auto cursor = data.find("nextCursor");
  return flag("partial") || flag("truncated") ||
         (cursor != data.end() && cursor->is_string() && !cursor->get<std::string>().empty());
}

}  // namespace

absl::StatusOr<std::vector<DomainConfig>> ReadDomainConfig(core::ConfigReader& reader,
                                                           const mcp::McpConfig& mcp) {
  std::vector<DomainConfig> domains;
  std::vector<std::string> errors;
  std::map<std::string, std::string> claimed;  // server -> domain
  for (const std::string& name : reader.Keys("domains")) {
    const std::string key = absl::StrCat("domains.", name, ".servers");
    DomainConfig domain{name, reader.StringList(key, {})};
    if (!IsKnownDomain(name)) {
      errors.push_back(
          absl::StrCat("domains.", name, ": not a domain (", absl::StrJoin(kDomains, ", "), ")"));
      continue;
    }
    if (domain.servers.empty()) errors.push_back(key + ": names no MCP server");
    for (const std::string& server : domain.servers) {
      const bool configured =
          std::any_of(mcp.servers.begin(), mcp.servers.end(),
                      [&server](const mcp::McpServerConfig& s) { return s.name == server; });
      if (!configured) {
        errors.push_back(
            absl::StrCat(key, ": '", server, "' is not an enabled server of mcp.servers"));
      } else if (auto [it, fresh] = claimed.emplace(server, name); !fresh) {
        errors.push_back(absl::StrCat(key, ": '", server, "' already serves ", it->second));
      }
    }
    domains.push_back(std::move(domain));
  }
  if (!errors.empty()) return absl::InvalidArgumentError(absl::StrJoin(errors, "; "));
  return domains;
}

nlohmann::json DomainResult(const std::string& domain, const std::string& tool,
                            const mcp::CallToolResult& result) {
  int skipped = 0;
  const std::string text = TextOf(result, &skipped);
  nlohmann::json data;
  bool structured = false;
  if (result.structured_content_json.has_value()) {
    data = nlohmann::json::parse(*result.structured_content_json, nullptr, false);
    structured = !data.is_discarded();
  }
  if (!structured) {
    // Text that is JSON is data the planner can read as such.
    data = nlohmann::json::parse(text, nullptr, false);
    if (data.is_discarded()) data = text.empty() ? nlohmann::json() : nlohmann::json(text);
  }

  nlohmann::json limitations = nlohmann::json::array();
  std::optional<double> stated_confidence;
  if (structured && data.is_object()) {
    if (auto it = data.find("limitations"); it != data.end() && it->is_array()) {
      for (const auto& item : *it) {
        if (item.is_string()) limitations.push_back(item);
      }
    }
    if (auto it = data.find("confidence"); it != data.end() && it->is_number()) {
      const double value = it->get<double>();
      if (value >= 0 && value <= 1) stated_confidence = value;
    }
  }
  std::string status = "success";
  double confidence = structured ? 1.0 : kTextOnlyConfidence;
  if (result.is_error) {
    status = "error";
    confidence = 0;
    limitations.push_back(text.empty() ? absl::StrCat("the ", domain, " service reported an error")
                                       : absl::StrCat("the ", domain, " service said: ", text));
  } else if (SaysPartial(data)) {
    status = "partial";
    confidence = kPartialConfidence;
    if (data.contains("nextCursor")) {
      limitations.push_back("more results exist than were returned (nextCursor)");
    }
  }
  if (stated_confidence.has_value() && !result.is_error) confidence = *stated_confidence;
  if (skipped > 0) {
    limitations.push_back(absl::StrCat(skipped, " non-text content block(s) left out"));
  }
  return {{"domain", domain},         {"tool", tool},
          {"status", status},         {"data", std::move(data)},
          {"confidence", confidence}, {"limitations", std::move(limitations)}};
}

DomainTools::DomainTools(mcp::McpRegistry& registry, std::vector<DomainConfig> domains)
    : registry_(registry), domains_(std::move(domains)) {}

std::vector<std::string> DomainTools::DomainServers() const {
  std::vector<std::string> servers;
  for (const DomainConfig& domain : domains_) {
    servers.insert(servers.end(), domain.servers.begin(), domain.servers.end());
  }
  return servers;
}

absl::StatusOr<std::vector<ToolSpec>> DomainTools::ListTools() {
  std::map<std::string, std::string> domain_of;  // server -> domain
  for (const DomainConfig& domain : domains_) {
    for (const std::string& server : domain.servers) domain_of[server] = domain.domain;
  }
  std::vector<ToolSpec> specs;
  std::map<std::string, Route> routes;
  for (const mcp::RegisteredTool& registered : registry_.Tools()) {
    const auto domain = domain_of.find(registered.server);
    if (domain == domain_of.end()) continue;
    auto spec = McpToolSpec(registered);
    if (!spec.has_value()) continue;
    spec->name = absl::StrCat(domain->second, kSeparator, registered.tool.name);
    if (!IsValidToolName(spec->name) || routes.contains(spec->name)) {
      core::LogWarn("domain tool left out: its name is not usable or taken",
                    {{"domain", domain->second},
                     {"server", registered.server},
                     {"tool", registered.tool.name}});
      continue;
    }
    spec->description = absl::StrCat("[", domain->second, "] ", spec->description,
                                     " Returns {status, data, confidence, limitations}.");
    routes[spec->name] = Route{domain->second, registered.name, registered.tool.name};
    specs.push_back(*std::move(spec));
  }
  std::lock_guard lock(mu_);
  routes_ = std::move(routes);
  return specs;
}

absl::StatusOr<ToolResult> DomainTools::Invoke(const ToolCall& call) {
  Route route;
  {
    std::lock_guard lock(mu_);
    const auto it = routes_.find(call.tool_name);
    if (it == routes_.end()) {
      return absl::NotFoundError(absl::StrCat("no domain tool named '", call.tool_name, "'"));
    }
    route = it->second;
  }
  mcp::CallOptions options;
  options.deadline = call.deadline;
  // A per_tenant server answers from this tenant's session; identity
  // headers carry the tenant and user to an HTTP server.
  options.caller = call.who;
  auto result = registry_.CallTool(
      route.registry_name,
      call.arguments.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), options);
  if (!result.ok()) return result.status();
  return ToolResult{DomainResult(route.domain, route.tool, *result)
                        .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                    result->is_error};
}

std::optional<std::string> DomainTools::WhyAbsent(std::string_view tool_name) const {
  const size_t separator = tool_name.find(kSeparator);
  if (separator == std::string_view::npos) return std::nullopt;
  const std::string domain(tool_name.substr(0, separator));
  if (!IsKnownDomain(domain)) return std::nullopt;
  const auto configured = std::find_if(domains_.begin(), domains_.end(),
                                       [&](const DomainConfig& d) { return d.domain == domain; });
  if (configured == domains_.end()) {
    return absl::StrCat("the ", domain, " domain is not configured (domains.", domain,
                        ".servers names the MCP servers that serve it)");
  }
  std::vector<std::string> failures;
  for (const mcp::ServerStatus& server : registry_.Servers()) {
    if (std::find(configured->servers.begin(), configured->servers.end(), server.name) ==
        configured->servers.end()) {
      continue;
    }
    if (!server.last_error.empty()) {
      failures.push_back(absl::StrCat(server.name, ": ", server.last_error));
    } else if (!server.listed) {
      failures.push_back(absl::StrCat(server.name, ": not listed yet"));
    }
  }
  if (failures.empty()) return std::nullopt;  // served, but not such a tool: NOT_FOUND
  return absl::StrCat("the ", domain,
                      " domain's MCP servers are unavailable: ", absl::StrJoin(failures, "; "));
}

}  // namespace omniforge::executor
