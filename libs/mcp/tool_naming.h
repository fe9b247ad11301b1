// How MCP tools appear to the rest of omniforge: a name unique across
// servers that model APIs accept, and a risk level from the tool's hints as
// far as the operator trusts the server.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "libs/mcp/types.h"

namespace omniforge::mcp {

// What running a tool may do; the orchestrator runs READ tools at once,
// drafts WRITE calls for confirmation and previews HIGH ones in detail.
enum class ToolRisk { kRead, kWrite, kHigh };

std::string_view ToolRiskName(ToolRisk risk);  // "read", "write", "high"
std::optional<ToolRisk> ParseToolRisk(std::string_view name);

// How far the operator believes a server's annotations (config
// `mcp.servers.<name>.trust`). A server describes its own tools, so by
// default its hints may only raise a tool's risk, never lower it to READ.
enum class ServerTrust {
  kNone,       // "none": readOnlyHint is ignored; no tool is READ on the server's word
  kReadHints,  // "read_hints": readOnlyHint is believed; such a tool is READ
};

std::string_view ServerTrustName(ServerTrust trust);  // "none", "read_hints"
std::optional<ServerTrust> ParseServerTrust(std::string_view name);

// The risk a tool's annotations give it, the spec's defaults filling absent
// hints (readOnlyHint false; destructiveHint true for a tool that is not
// read-only). destructiveHint -> HIGH (so a tool with no annotations is
// HIGH, and so is one claiming both hints); otherwise readOnlyHint -> READ
// when `trust` is kReadHints; everything else WRITE. The operator's
// per-tool `tool_risk` is applied over this by the registry.
ToolRisk RiskFromAnnotations(const ToolAnnotations& annotations, ServerTrust trust);

// The longest tool name OpenAI and Anthropic accept.
inline constexpr size_t kMaxToolNameLength = 64;

// `<server>__<tool>` with every character outside [A-Za-z0-9_-] replaced by
// '_'. A name longer than kMaxToolNameLength is cut and ends in '_' and 8
// hex digits of a hash of the untouched pair, so different long names stay
// different.
std::string NamespacedToolName(std::string_view server, std::string_view tool);

// The same name with a hash suffix: what a registry uses when two tools
// would otherwise share a namespaced name (e.g. "a.b" and "a_b").
std::string DisambiguatedToolName(std::string_view server, std::string_view tool);

// Whether `name` is usable as a namespace: non-empty, [A-Za-z0-9_-] without
// "__" (the separator), at most 32 characters (so tool names keep room
// within kMaxToolNameLength).
bool IsValidServerName(std::string_view name);

}  // namespace omniforge::mcp
