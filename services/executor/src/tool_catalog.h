// The catalog of every tool the executor offers, across providers (the
// built-in platform tools, MCP servers). Names are unique across the
// catalog. Thread-safe: providers can be added while calls are served.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "services/executor/src/tool.h"

namespace omniforge::executor {

class ToolCatalog final {
 public:
  struct Entry {
    ToolSpec spec;
    ToolProvider* provider = nullptr;
  };

  // Adds every tool `provider` lists (the provider must outlive the catalog).
  // INVALID_ARGUMENT, adding nothing, when a tool's name is not
  // [A-Za-z0-9_-]{1,64}, its schema is not a JSON object of type "object",
  // its description is empty, or its name is already taken; the provider's
  // own error when it cannot list its tools.
  absl::Status AddProvider(ToolProvider& provider);

  // Lists `provider` (added before) again and replaces its tools with what it
  // lists now, at once: calls see the old set or the new one. On the errors
  // of AddProvider nothing changes.
  absl::Status Reload(ToolProvider& provider);

  // Why no tool is called `name`, when a provider knows (ToolProvider::WhyAbsent).
  std::optional<std::string> WhyAbsent(std::string_view name) const;

  // Tools with risk at most `max_risk` (nullopt: any) and, when `names` is
  // not empty, only those named; sorted by name.
  std::vector<ToolSpec> List(std::optional<ToolRisk> max_risk = std::nullopt,
                             const std::vector<std::string>& names = {}) const;

  // The tool called `name`, or nullopt.
  std::optional<Entry> Find(const std::string& name) const;

  size_t size() const;

 private:
  // Adds what `provider` lists; with `replace`, its previous tools go.
  absl::Status Install(ToolProvider& provider, bool replace);

  mutable std::shared_mutex mu_;
  std::map<std::string, Entry> tools_;
  std::vector<ToolProvider*> providers_;
};

// True when `name` is usable as an LLM function name: [A-Za-z0-9_-]{1,64}.
bool IsValidToolName(std::string_view name);

}  // namespace omniforge::executor
