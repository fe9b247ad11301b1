#include "libs/mcp/npm_pinning.h"

#include <array>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace omniforge::mcp {
namespace {

// npm options whose value is the next word (the others are flags or
// --name=value).
constexpr std::array<std::string_view, 8> kOptionsWithValue = {
    "--registry",  "--cache", "--prefix",       "--userconfig",
    "--workspace", "-w",      "--node-options", "--script-shell"};

bool TakesValue(std::string_view option) {
  for (std::string_view known : kOptionsWithValue) {
    if (option == known) return true;
  }
  return false;
}

std::string_view BaseName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool IsLocalPath(std::string_view spec) {
  return spec.starts_with("./") || spec.starts_with("../") || spec.starts_with("/") ||
         spec.starts_with("file:");
}

// OK when `spec` is name@exact-version (the name may be @scope/name) or a
// local path.
absl::Status CheckSpec(std::string_view spec) {
  if (IsLocalPath(spec)) return absl::OkStatus();
  const size_t at = spec.rfind('@');
  if (at == std::string_view::npos || at == 0 || !IsExactVersion(spec.substr(at + 1))) {
    return absl::InvalidArgumentError(
        absl::StrCat("the npm package '", std::string(spec),
                     "' has no exact version: pin it as <package>@<version> (e.g. "
                     "@modelcontextprotocol/server-memory@2026.8.31)"));
  }
  return absl::OkStatus();
}

// The words after `npx` (or `npm exec`).
absl::Status CheckExecArgs(const std::vector<std::string>& args, size_t first) {
  bool named_package = false;
  bool command_string = false;
  for (size_t i = first; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "-p" || arg == "--package") {
      if (i + 1 >= args.size()) return absl::InvalidArgumentError(arg + " without a package");
      if (absl::Status ok = CheckSpec(args[++i]); !ok.ok()) return ok;
      named_package = true;
    } else if (arg.starts_with("--package=")) {
      if (absl::Status ok = CheckSpec(std::string_view(arg).substr(10)); !ok.ok()) return ok;
      named_package = true;
    } else if (arg == "-c" || arg == "--call" || arg.starts_with("--call=")) {
      command_string = true;
      if (arg == "-c" || arg == "--call") ++i;
    } else if (TakesValue(arg)) {
      ++i;
    } else if (arg == "--" || !arg.starts_with("-")) {
      const size_t word = arg == "--" ? i + 1 : i;
      // With --package, the first word is the package's command, not a package.
      if (named_package || word >= args.size()) break;
      return CheckSpec(args[word]);
    }
  }
  if (command_string && !named_package) {
    return absl::InvalidArgumentError(
        "npx --call runs packages it does not name: name each with --package "
        "<package>@<version>");
  }
  if (!named_package && !command_string) return absl::InvalidArgumentError("npx names no package");
  return absl::OkStatus();
}

}  // namespace

bool IsExactVersion(std::string_view version) {
  // MAJOR.MINOR.PATCH, numbers without leading zeros.
  for (int part = 0; part < 3; ++part) {
    size_t digits = 0;
    while (digits < version.size() &&
           absl::ascii_isdigit(static_cast<unsigned char>(version[digits]))) {
      ++digits;
    }
    if (digits == 0 || (digits > 1 && version[0] == '0')) return false;
    version.remove_prefix(digits);
    if (part < 2) {
      if (version.empty() || version[0] != '.') return false;
      version.remove_prefix(1);
    }
  }
  // Then -prerelease and +build, each of [0-9A-Za-z.-]+.
  for (const char marker : {'-', '+'}) {
    if (version.empty() || version[0] != marker) continue;
    version.remove_prefix(1);
    size_t length = 0;
    while (length < version.size() && version[length] != '+' &&
           (absl::ascii_isalnum(static_cast<unsigned char>(version[length])) ||
            version[length] == '.' || version[length] == '-')) {
      ++length;
    }
    if (length == 0) return false;
    version.remove_prefix(length);
  }
  return version.empty();
}

absl::Status CheckNpmPackagesPinned(const std::string& command,
                                    const std::vector<std::string>& args) {
  const std::string_view program = BaseName(command);
  if (program == "npx") return CheckExecArgs(args, 0);
  if (program == "npm" && !args.empty() && (args[0] == "exec" || args[0] == "x")) {
    return CheckExecArgs(args, 1);
  }
  return absl::OkStatus();
}

}  // namespace omniforge::mcp
