// One omniforge service binary run by a test: configured only through its
// environment, on free loopback ports, with its JSON log lines kept for
// assertions. The process dies with the test program.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace omniforge::testing {

class ServerProcess final {
 public:
  explicit ServerProcess(std::string binary) : binary_(std::move(binary)) {}
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;
  ~ServerProcess() { Stop(); }

  // Spawns the binary with the caller's environment minus OMNIFORGE_*
  // variables, plus loopback server settings on free ports (a 5 s drain) and
  // `env` (NAME=value; it overrides those settings), then waits for its
  // "server started" log line. On failure returns a message with the log
  // lines seen so far.
  std::optional<std::string> Start(const std::vector<std::string>& env,
                                   const std::vector<std::string>& args = {},
                                   std::chrono::seconds timeout = std::chrono::seconds(30));

  // Sends SIGTERM without waiting, so a test can race calls against a drain.
  void Terminate();
  // Waits up to `timeout` for the process to exit, then SIGKILL. Returns the
  // wait status, or nullopt when the process had to be killed.
  std::optional<int> WaitForExit(std::chrono::steady_clock::duration timeout);
  // Terminate and WaitForExit. Idempotent.
  std::optional<int> Stop(std::chrono::seconds timeout = std::chrono::seconds(10));
  // SIGKILL, as a crash or the kernel's OOM killer ends a process: no drain,
  // nothing flushed. Returns once the process is gone. Idempotent.
  void Kill();
  // Starts the binary again with the environment and arguments of the last
  // Start, on the port it had then (not a free one), so the clients holding
  // its address reconnect to it; a process still running is killed first.
  // Errors as Start's.
  std::optional<std::string> Restart(std::chrono::seconds timeout = std::chrono::seconds(30));

  pid_t pid() const { return pid_; }
  int port() const { return port_; }
  int metrics_port() const { return metrics_port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  std::vector<std::string> LogLines() const;
  std::string JoinedLog() const;

 private:
  void ReadLog(int fd);

  const std::string binary_;
  // What the last Start was given, for Restart.
  std::vector<std::string> env_;
  std::vector<std::string> args_;
  pid_t pid_ = -1;
  std::optional<int> exit_status_;
  std::thread reader_;
  int port_ = 0;
  int metrics_port_ = 0;

  mutable absl::Mutex mu_;
  absl::CondVar changed_;
  std::vector<std::string> log_ ABSL_GUARDED_BY(mu_);
  std::optional<std::string> started_line_ ABSL_GUARDED_BY(mu_);
  bool log_closed_ ABSL_GUARDED_BY(mu_) = false;
};

// The value of a string field in one JSON log line ("" when absent).
std::string LogField(const std::string& line, const std::string& key);

}  // namespace omniforge::testing
