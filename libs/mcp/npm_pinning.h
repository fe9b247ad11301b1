// Refuses MCP servers launched from npm without an exact package version:
// `npx -y @modelcontextprotocol/server-memory` runs whatever the registry
// serves today, code nobody vetted, with the executor's network and files.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace omniforge::mcp {

// Whether `version` is one exact semantic version (1.2.3, 2026.8.31,
// 1.0.0-rc.1), not a range or a tag.
bool IsExactVersion(std::string_view version);

// For a server started as `npx ARGS` or `npm exec|x ARGS` (any path to
// npx or npm): every package it names (-p/--package values, else the first
// word that is not an option) must be `name@<exact version>` or a local
// path (./dir, /dir, file:...). INVALID_ARGUMENT naming the package
// otherwise, and for `-c`/`--call` without --package. OK for any other
// command.
absl::Status CheckNpmPackagesPinned(const std::string& command,
                                    const std::vector<std::string>& args);

}  // namespace omniforge::mcp
