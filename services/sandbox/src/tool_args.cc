#include "services/sandbox/src/tool_args.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/sandbox/src/sandbox_time.h"

namespace omniforge::sandbox {

bool IsEmailAddress(const std::string& text) {
  if (text.size() > 254 || text.find_first_of(" \t\r\n<>,;\"") != std::string::npos) return false;
  const size_t at = text.find('@');
  if (at == 0 || at == std::string::npos || text.find('@', at + 1) != std::string::npos) {
    return false;
  }
  const std::string domain = text.substr(at + 1);
  const size_t dot = domain.find('.');
  return dot != std::string::npos && dot > 0 && domain.back() != '.';
}

bool ContainsIgnoringCase(std::string_view text, std::string_view part) {
  return absl::AsciiStrToLower(absl::string_view(text.data(), text.size()))
             .find(absl::AsciiStrToLower(absl::string_view(part.data(), part.size()))) !=
         std::string::npos;
}

std::string ToolArgs::String(const char* name, size_t max_bytes, bool required) {
  auto it = args_.find(name);
  if (it == args_.end() || it->is_null()) {
    if (required) Fail(absl::StrCat(name, ": required"));
    return "";
  }
  if (!it->is_string()) {
    Fail(absl::StrCat(name, ": expected a string"));
    return "";
  }
  std::string value(absl::StripAsciiWhitespace(it->get<std::string>()));
  if (required && value.empty()) Fail(absl::StrCat(name, ": must not be blank"));
  if (value.size() > max_bytes) {
    Fail(absl::StrCat(name, ": at most ", max_bytes, " bytes (got ", value.size(), ")"));
  }
  return value;
}

std::vector<std::string> ToolArgs::Strings(const char* name, size_t max_items, size_t max_bytes,
                                           bool required) {
  auto it = args_.find(name);
  std::vector<std::string> values;
  if (it == args_.end() || it->is_null()) {
    if (required) Fail(absl::StrCat(name, ": required"));
    return values;
  }
  if (!it->is_array()) {
    Fail(absl::StrCat(name, ": expected an array of strings"));
    return values;
  }
  if (it->size() > max_items) Fail(absl::StrCat(name, ": at most ", max_items, " items"));
  for (size_t i = 0; i < it->size() && i < max_items; ++i) {
    const nlohmann::json& item = (*it)[i];
    if (!item.is_string() || item.get<std::string>().size() > max_bytes) {
      Fail(absl::StrCat(name, "[", i, "]: expected a string of at most ", max_bytes, " bytes"));
      continue;
    }
    values.emplace_back(absl::StripAsciiWhitespace(item.get<std::string>()));
  }
  return values;
}

std::vector<std::string> ToolArgs::Emails(const char* name, size_t max_items, bool required) {
  std::vector<std::string> emails;
  const std::vector<std::string> values = Strings(name, max_items, 254, required);
  if (required && values.empty() && Has(name)) Fail(absl::StrCat(name, ": at least one address"));
  for (const std::string& value : values) {
    if (!IsEmailAddress(value)) {
      Fail(absl::StrCat(name, ": \"", value,
                        "\" is not an email address (find it with contacts find_contacts)"));
      continue;
    }
    std::string email = absl::AsciiStrToLower(value);
    if (std::find(emails.begin(), emails.end(), email) == emails.end()) emails.push_back(email);
  }
  return emails;
}

int ToolArgs::Int(const char* name, int min, int max, int default_value) {
  auto it = args_.find(name);
  if (it == args_.end() || it->is_null()) return default_value;
  if (!it->is_number_integer() || it->get<int64_t>() < min || it->get<int64_t>() > max) {
    Fail(absl::StrCat(name, ": expected an integer from ", min, " to ", max));
    return default_value;
  }
  return static_cast<int>(it->get<int64_t>());
}

std::optional<core::TimePoint> ToolArgs::Time(const char* name) {
  const std::string text = String(name, 64);
  if (text.empty()) return std::nullopt;
  auto parsed = ParseRfc3339(name, text);
  if (!parsed.ok()) {
    Fail(std::string(parsed.status().message()));
    return std::nullopt;
  }
  return *parsed;
}

ToolResult ToolArgs::Invalid() const {
  return Failure("invalid_argument", absl::StrJoin(problems_, "; "), {{"problems", problems_}});
}

}  // namespace omniforge::sandbox
