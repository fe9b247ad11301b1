#include "services/executor/src/tool_catalog.h"

#include <algorithm>
#include <mutex>
#include <set>

#include "absl/strings/str_cat.h"

namespace omniforge::executor {

bool IsValidToolName(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

absl::Status ToolCatalog::AddProvider(ToolProvider& provider) { return Install(provider, false); }

absl::Status ToolCatalog::Reload(ToolProvider& provider) { return Install(provider, true); }

absl::Status ToolCatalog::Install(ToolProvider& provider, bool replace) {
  auto specs = provider.ListTools();
  if (!specs.ok()) return specs.status();
  std::unique_lock lock(mu_);
  std::set<std::string> seen;
  for (const ToolSpec& spec : *specs) {
    const std::string where = absl::StrCat("tool '", spec.name, "' (", spec.source, ")");
    if (!IsValidToolName(spec.name)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": the name must be 1 to 64 characters of [A-Za-z0-9_-]"));
    }
    if (spec.description.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": the description is empty"));
    }
    const auto schema = nlohmann::json::parse(spec.parameters_schema, nullptr, false);
    if (!schema.is_object() || schema.value("type", "") != "object") {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": parameters must be a JSON schema of type \"object\""));
    }
    const auto taken = tools_.find(spec.name);
    const bool taken_by_other =
        taken != tools_.end() && !(replace && taken->second.provider == &provider);
    if (taken_by_other || !seen.insert(spec.name).second) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": the name is already taken"));
    }
  }
  if (replace) {
    std::erase_if(tools_,
                  [&provider](const auto& item) { return item.second.provider == &provider; });
  } else {
    providers_.push_back(&provider);
  }
  for (ToolSpec& spec : *specs) {
    std::string name = spec.name;
    tools_.emplace(std::move(name), Entry{std::move(spec), &provider});
  }
  return absl::OkStatus();
}

std::optional<std::string> ToolCatalog::WhyAbsent(std::string_view name) const {
  std::shared_lock lock(mu_);
  for (const ToolProvider* provider : providers_) {
    if (auto why = provider->WhyAbsent(name)) return why;
  }
  return std::nullopt;
}

std::vector<ToolSpec> ToolCatalog::List(std::optional<ToolRisk> max_risk,
                                        const std::vector<std::string>& names) const {
  const std::set<std::string> wanted(names.begin(), names.end());
  std::shared_lock lock(mu_);
  std::vector<ToolSpec> out;
  for (const auto& [name, entry] : tools_) {
    if (max_risk.has_value() && static_cast<int>(entry.spec.risk) > static_cast<int>(*max_risk)) {
      continue;
    }
    if (!wanted.empty() && !wanted.contains(name)) continue;
    out.push_back(entry.spec);
  }
  return out;
}

std::optional<ToolCatalog::Entry> ToolCatalog::Find(const std::string& name) const {
  std::shared_lock lock(mu_);
  auto it = tools_.find(name);
  if (it == tools_.end()) return std::nullopt;
  return it->second;
}

size_t ToolCatalog::size() const {
  std::shared_lock lock(mu_);
  return tools_.size();
}

}  // namespace omniforge::executor
