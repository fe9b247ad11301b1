// The MCP stdio transport: the server is a child process speaking
// newline-delimited JSON-RPC on its stdin and stdout; what it writes to
// stderr goes to our logs.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "libs/mcp/file_sandbox.h"
#include "libs/mcp/transport.h"

namespace omniforge::mcp {

// The user and group a server runs as (key `run_as`), other than ours.
struct RunAs {
  uid_t uid = 0;
  gid_t gid = 0;
};

struct StdioServerConfig {
  std::string server_name;  // for logs
  // Resolved on the child's PATH when it holds no '/'.
  std::string command;
  std::vector<std::string> args;
  // The child's whole environment: the variables in `inherit_env` that this
  // process has, then `env`. Nothing else is passed on, so the service's own
  // secrets never reach a third-party server.
  std::map<std::string, std::string> env;
  std::vector<std::string> inherit_env = {"PATH", "HOME", "USER",   "LOGNAME", "SHELL",
                                          "TERM", "LANG", "LC_ALL", "TZ",      "TMPDIR"};
  std::string cwd;  // empty: ours
  // Started as this user and group, with no supplementary groups (needs
  // root, or CAP_SETUID and CAP_SETGID); unset: as we run.
  std::optional<RunAs> run_as;
  // The file sandbox (file_sandbox.h) and the paths it adds to the
  // defaults: `read_paths` to read and execute, `write_paths` to write.
  SandboxMode sandbox = SandboxMode::kBestEffort;
  std::vector<std::string> read_paths;
  std::vector<std::string> write_paths;
  // How long Close waits after closing stdin, and again after SIGTERM.
  std::chrono::milliseconds shutdown_grace{2'000};
  // A longer line from the server is dropped (and logged).
  size_t max_message_bytes = 16u << 20;
};

// Spawns the server with posix_spawn in its own process group, with only
// the three pipes open (with run_as or a sandbox: fork, then only
// async-signal-safe calls to change user, enter the sandbox and exec). One thread reads stdout,
// stderr and the process's exit. Thread-safe.
class StdioTransport final : public McpTransport {
 public:
  explicit StdioTransport(StdioServerConfig config);
  ~StdioTransport() override;  // Close()

  absl::Status Open(TransportHandlers handlers, uint64_t epoch) override
      ABSL_LOCKS_EXCLUDED(close_mu_);
  absl::Status Send(std::string_view message, const SendOptions& options) override;
  void SetProtocolVersion(const std::string&) override {}
  bool AnswersWithinSend() const override { return false; }
  void Close() override ABSL_LOCKS_EXCLUDED(close_mu_);
  std::string Describe() const override;

  // The running server's process id, or -1 (tests kill it).
  pid_t pid() const;

 private:
  void ReadLoop(const TransportHandlers& handlers, int out_fd, int err_fd, int pid_fd, int wake_fd,
                pid_t pid);

  const StdioServerConfig config_;

  absl::Mutex close_mu_ ABSL_ACQUIRED_BEFORE(mu_);  // serializes Open and Close
  std::thread reader_ ABSL_GUARDED_BY(close_mu_);

  mutable absl::Mutex mu_;  // also held while writing
  pid_t pid_ ABSL_GUARDED_BY(mu_) = -1;
  int stdin_fd_ ABSL_GUARDED_BY(mu_) = -1;
  int pid_fd_ ABSL_GUARDED_BY(mu_) = -1;
  int wake_fd_ ABSL_GUARDED_BY(mu_) = -1;
  uint64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<bool> closing_{false};
};

}  // namespace omniforge::mcp
