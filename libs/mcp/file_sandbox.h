// The file sandbox of a stdio MCP server: a Landlock ruleset (Linux 5.13+,
// unprivileged) the child process puts on itself between fork and exec.
// The server and everything it starts may then read only beneath the
// system's directories and the paths it was given, and write only beneath
// the paths it was given: the service's key files, its configuration's
// secrets, the local stack's state and other servers' files stay out of
// its reach even though it runs as the same user. Where the kernel knows
// them (Landlock ABI 6), it may also not signal processes outside its
// sandbox (the executor) nor reach their abstract UNIX sockets.
//
// What a server may reach:
//   read and execute: /usr /bin /sbin /lib /lib32 /lib64 /libx32 /etc /opt
//                     /proc /sys; the command; every absolute path among
//                     its args that exists (a script, and the node_modules
//                     directory it lies in); `read_paths`
//   read and write:   /dev (null, urandom, tty); its cwd; `write_paths`
//                     (made when missing); for npx and npm, ~/.npm (their
//                     cache) and ~/.npmrc to read
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace omniforge::mcp {

enum class SandboxMode {
  kBestEffort,  // sandboxed where the kernel has Landlock, else a warning
  kRequired,    // a server does not start where the kernel has no Landlock
  kOff,
};

// "best_effort", "required", "off".
absl::StatusOr<SandboxMode> ParseSandboxMode(std::string_view text);

struct FileSandboxPaths {
  std::vector<std::string> read;   // read and execute beneath
  std::vector<std::string> write;  // read, write, create and remove beneath
};

// The paths a server started as `command` (resolved) with `args` and `cwd`
// may reach, with the operator's `read_paths` and `write_paths` added.
// `home`: the server's HOME (for npx's cache).
FileSandboxPaths SandboxPathsFor(const std::string& command, const std::vector<std::string>& args,
                                 const std::string& cwd, const std::string& home,
                                 const std::vector<std::string>& read_paths,
                                 const std::vector<std::string>& write_paths);

// The Landlock ABI version of the running kernel; 0 without Landlock.
int LandlockAbi();

// A Landlock ruleset, built in the parent before it forks.
class FileSandbox final {
 public:
  // FAILED_PRECONDITION when the kernel has no Landlock (or it is
  // disabled); UNAVAILABLE naming a path that cannot be opened or made. System paths
  // that do not exist are left out.
  static absl::StatusOr<std::unique_ptr<FileSandbox>> Build(const FileSandboxPaths& paths);
  ~FileSandbox();
  FileSandbox(const FileSandbox&) = delete;
  FileSandbox& operator=(const FileSandbox&) = delete;

  // In the child, after fork and before exec: no new privileges, then the
  // ruleset on itself. Async-signal-safe. 0, or the errno that failed.
  int EnforceInChild() const;

 private:
  explicit FileSandbox(int ruleset_fd) : ruleset_fd_(ruleset_fd) {}
  const int ruleset_fd_;
};

}  // namespace omniforge::mcp
