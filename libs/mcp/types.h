// The MCP tool model as the rest of omniforge sees it: tools a server offers,
// what a call returned, progress reports. JSON values cross this boundary as
// JSON text so that callers need no JSON library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace omniforge::mcp {

// Hints a server attaches to a tool (MCP ToolAnnotations). Absent hints stay
// nullopt; the spec's defaults apply where a decision needs them (risk.h).
// Hints are untrusted unless the server is.
struct ToolAnnotations {
  std::optional<std::string> title;
  std::optional<bool> read_only_hint;
  std::optional<bool> destructive_hint;
  std::optional<bool> idempotent_hint;
  std::optional<bool> open_world_hint;

  friend bool operator==(const ToolAnnotations&, const ToolAnnotations&) = default;
};

// One tool as listed by tools/list.
struct Tool {
  std::string name;
  std::string title;  // empty when the server gave none
  std::string description;
  std::string input_schema_json;   // a JSON object; `{"type":"object"}` when the server sent none
  std::string output_schema_json;  // empty when the tool declares no output schema
  ToolAnnotations annotations;
};

// One block of a tool result. Binary payloads (images, audio, blobs) are kept
// as metadata only: their MIME type and decoded size.
struct ContentBlock {
  enum class Type { kText, kImage, kAudio, kResourceLink, kEmbeddedResource, kUnknown };
  Type type = Type::kUnknown;
  std::string text;       // kText; kEmbeddedResource with a text body
  std::string mime_type;  // kImage, kAudio, kResourceLink, kEmbeddedResource
  size_t data_bytes = 0;  // decoded size of base64 image/audio data or a resource blob
  std::string uri;        // kResourceLink, kEmbeddedResource
  std::string name;       // kResourceLink
  std::string description;
  std::string type_name;  // the block's `type` as sent (useful for kUnknown)
};

// The result of tools/call. A tool that ran and failed reports is_error
// with its explanation in `content`; that is a result, not an RPC failure.
struct CallToolResult {
  std::vector<ContentBlock> content;
  std::optional<std::string> structured_content_json;  // a JSON object
  bool is_error = false;
};

// A notifications/progress report for a running call.
struct Progress {
  double progress = 0;
  std::optional<double> total;
  std::string message;
};
using ProgressCallback = std::function<void(const Progress&)>;

// Renders a result as plain text for a model: text blocks as they are, the
// other kinds as one bracketed line of metadata each, then the structured
// content when no text block carried it.
std::string RenderForModel(const CallToolResult& result);

// What the server said about itself in its initialize result.
struct ServerInfo {
  std::string protocol_version;
  std::string name;
  std::string version;
  std::string instructions;
  bool has_tools = false;
  bool tools_list_changed = false;
};

}  // namespace omniforge::mcp
