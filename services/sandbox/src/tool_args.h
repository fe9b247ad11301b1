// Reading a tool's arguments: typed getters that collect every problem
// (naming the argument) instead of stopping at the first, so one error
// result tells the caller all it must fix.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libs/core/clock.h"
#include "nlohmann/json.hpp"
#include "services/sandbox/src/sandbox_tools.h"

namespace omniforge::sandbox {

// Whether `text` looks like an email address: one '@' between a local part
// and a dotted domain, no spaces, at most 254 bytes.
bool IsEmailAddress(const std::string& text);

// Whether `text` contains `part`, ignoring ASCII case.
bool ContainsIgnoringCase(std::string_view text, std::string_view part);

class ToolArgs final {
 public:
  explicit ToolArgs(const nlohmann::json& args) : args_(args) {}

  bool Has(const char* name) const { return args_.contains(name); }
  // "" when absent and not required.
  std::string String(const char* name, size_t max_bytes, bool required = true);
  std::vector<std::string> Strings(const char* name, size_t max_items, size_t max_bytes,
                                   bool required = true);
  // Email addresses, lower-cased, without repeats.
  std::vector<std::string> Emails(const char* name, size_t max_items, bool required = true);
  int Int(const char* name, int min, int max, int default_value);
  std::optional<core::TimePoint> Time(const char* name);

  void Fail(std::string problem) { problems_.push_back(std::move(problem)); }
  bool ok() const { return problems_.empty(); }
  // The invalid_argument result naming every problem.
  ToolResult Invalid() const;

 private:
  const nlohmann::json& args_;
  std::vector<std::string> problems_;
};

}  // namespace omniforge::sandbox
