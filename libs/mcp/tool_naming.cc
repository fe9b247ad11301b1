#include "libs/mcp/tool_naming.h"

#include <cstdint>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "libs/mcp/json_rpc.h"

namespace omniforge::mcp {
namespace {

bool IsNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
}

// FNV-1a: stable across builds and platforms, unlike std::hash.
uint32_t StableHash(std::string_view server, std::string_view tool) {
  uint32_t hash = 2166136261u;
  const auto mix = [&hash](std::string_view text) {
    for (const char c : text) {
      hash ^= static_cast<unsigned char>(c);
      hash *= 16777619u;
    }
  };
  mix(server);
  mix(std::string_view("\0", 1));
  mix(tool);
  return hash;
}

std::string Sanitized(std::string_view server, std::string_view tool) {
  std::string name = absl::StrCat(Sv(server), "__", Sv(tool));
  for (char& c : name) {
    if (!IsNameChar(c)) c = '_';
  }
  return name;
}

std::string WithHash(std::string name, std::string_view server, std::string_view tool) {
  const std::string suffix = absl::StrFormat("_%08x", StableHash(server, tool));
  if (name.size() + suffix.size() > kMaxToolNameLength) {
    name.resize(kMaxToolNameLength - suffix.size());
  }
  return name + suffix;
}

}  // namespace

std::string_view ToolRiskName(ToolRisk risk) {
  switch (risk) {
    case ToolRisk::kRead:
      return "read";
    case ToolRisk::kWrite:
      return "write";
    case ToolRisk::kHigh:
      return "high";
  }
  return "high";
}

std::optional<ToolRisk> ParseToolRisk(std::string_view name) {
  const std::string lower = absl::AsciiStrToLower(Sv(name));
  if (lower == "read") return ToolRisk::kRead;
  if (lower == "write") return ToolRisk::kWrite;
  if (lower == "high") return ToolRisk::kHigh;
  return std::nullopt;
}

std::string_view ServerTrustName(ServerTrust trust) {
  switch (trust) {
    case ServerTrust::kNone:
      return "none";
    case ServerTrust::kReadHints:
      return "read_hints";
  }
  return "none";
}

std::optional<ServerTrust> ParseServerTrust(std::string_view name) {
  const std::string lower = absl::AsciiStrToLower(Sv(name));
  if (lower == "none") return ServerTrust::kNone;
  if (lower == "read_hints") return ServerTrust::kReadHints;
  return std::nullopt;
}

ToolRisk RiskFromAnnotations(const ToolAnnotations& annotations, ServerTrust trust) {
  const bool read_only = annotations.read_only_hint.value_or(false);
  // The spec defaults destructiveHint to true only for a tool that is not
  // read-only; an explicit true raises the risk whatever readOnlyHint says.
  if (annotations.destructive_hint.value_or(!read_only)) return ToolRisk::kHigh;
  if (read_only && trust == ServerTrust::kReadHints) return ToolRisk::kRead;
  return ToolRisk::kWrite;
}

std::string NamespacedToolName(std::string_view server, std::string_view tool) {
  std::string name = Sanitized(server, tool);
  if (name.size() <= kMaxToolNameLength) return name;
  return WithHash(std::move(name), server, tool);
}

std::string DisambiguatedToolName(std::string_view server, std::string_view tool) {
  return WithHash(Sanitized(server, tool), server, tool);
}

bool IsValidServerName(std::string_view name) {
  if (name.empty() || name.size() > 32) return false;
  // "__" separates the server from the tool: a server "a__b" with tool "c"
  // would take the name of server "a"'s tool "b__c" (and its policy).
  if (name.find("__") != std::string_view::npos) return false;
  for (const char c : name) {
    if (!IsNameChar(c)) return false;
  }
  return true;
}

}  // namespace omniforge::mcp
