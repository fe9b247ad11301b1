// How deeply a JSON text nests, read before it is parsed.
//
// Every JSON that reaches a service from outside (a tool's arguments, a
// message's metadata, a model's output, an MCP server's messages) is checked
// against kMaxJsonDepth before it is parsed. A parsed document is walked
// recursively by the serializer, by schema checks and by PostgreSQL's jsonb,
// so a value nested tens of thousands of levels deep, though small in bytes,
// would exhaust a thread's stack. No real document of ours comes near the
// limit.
//
// Pure functions: no allocation, thread-safe.
#pragma once

#include <cstddef>
#include <string_view>

#include "absl/status/status.h"

namespace omniforge::core {

// Arrays and objects inside one another, at most.
inline constexpr size_t kMaxJsonDepth = 64;

// The deepest nesting of arrays and objects in `text`, counting stopped
// once it passes `stop_above` (the result is then stop_above + 1). Strings
// are skipped, escapes included; the text need not be valid JSON (its
// parser judges that), so a malformed text gives a depth that means nothing
// but is never an error here.
size_t JsonDepth(std::string_view text, size_t stop_above = kMaxJsonDepth);

// True when `text` nests at most `limit` levels.
inline bool JsonDepthWithin(std::string_view text, size_t limit = kMaxJsonDepth) {
  return JsonDepth(text, limit) <= limit;
}

// OK, or INVALID_ARGUMENT naming `field` and the limit:
// "arguments_json: JSON nested more than 64 levels deep (the limit)".
absl::Status CheckJsonDepth(std::string_view field, std::string_view text,
                            size_t limit = kMaxJsonDepth);

}  // namespace omniforge::core
