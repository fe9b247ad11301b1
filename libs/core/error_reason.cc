#include "libs/core/error_reason.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace omniforge::core {
namespace {

// Payload lines: the reason, then `key=value` per metadata entry; field
// violations as `field\tdescription` lines (descriptions are one line).
std::string OneLine(std::string_view text) {
  std::string line(text);
  for (char& c : line) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  return line;
}

}  // namespace

absl::Status WithReason(absl::Status status, std::string_view reason,
                        const std::map<std::string, std::string>& metadata) {
  if (status.ok()) return status;
  std::string payload = OneLine(reason);
  for (const auto& [key, value] : metadata) {
    absl::StrAppend(&payload, "\n", OneLine(key), "=", OneLine(value));
  }
  status.SetPayload(kErrorInfoTypeUrl, absl::Cord(payload));
  return status;
}

std::string ReasonOf(const absl::Status& status) {
  const auto payload = status.GetPayload(kErrorInfoTypeUrl);
  if (!payload) return "";
  const std::string text(*payload);
  return text.substr(0, text.find('\n'));
}

std::map<std::string, std::string> ReasonMetadataOf(const absl::Status& status) {
  std::map<std::string, std::string> metadata;
  const auto payload = status.GetPayload(kErrorInfoTypeUrl);
  if (!payload) return metadata;
  const std::string text(*payload);
  const std::vector<std::string> lines = absl::StrSplit(text, '\n');
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t equals = lines[i].find('=');
    if (equals == std::string::npos) continue;
    metadata.emplace(lines[i].substr(0, equals), lines[i].substr(equals + 1));
  }
  return metadata;
}

absl::Status WithFieldViolation(absl::Status status, std::string_view field,
                                std::string_view description) {
  if (status.ok()) return status;
  std::string payload;
  if (const auto before = status.GetPayload(kBadRequestTypeUrl)) payload = std::string(*before);
  absl::StrAppend(&payload, OneLine(field), "\t", OneLine(description), "\n");
  status.SetPayload(kBadRequestTypeUrl, absl::Cord(payload));
  return status;
}

std::vector<FieldViolation> FieldViolationsOf(const absl::Status& status) {
  std::vector<FieldViolation> violations;
  const auto payload = status.GetPayload(kBadRequestTypeUrl);
  if (!payload) return violations;
  const std::string text(*payload);
  const std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  for (const std::string& line : lines) {
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    violations.push_back({line.substr(0, tab), line.substr(tab + 1)});
  }
  return violations;
}

absl::Status InvalidField(std::string_view field, std::string_view reason,
                          std::string_view description) {
  return WithFieldViolation(
      WithReason(absl::InvalidArgumentError(std::string(field) + ": " + std::string(description)),
                 reason),
      field, description);
}

}  // namespace omniforge::core
