#include "libs/mcp/stdio_transport.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX sigset_t, kill, not <csignal>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "libs/core/logging.h"
#include "libs/mcp/json_rpc.h"
#include "libs/mcp/stdio_lines.h"

extern char** environ;

namespace omniforge::mcp {
namespace {

constexpr size_t kMaxStderrLine = 8192;
constexpr std::chrono::milliseconds kExitAfterEofWait{500};

std::string ErrnoText(int error) { return std::strerror(error); }

void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

bool SetNonBlocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

std::optional<std::string> ParentEnv(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

std::map<std::string, std::string> ChildEnvironment(const StdioServerConfig& config) {
  std::map<std::string, std::string> env;
  for (const std::string& name : config.inherit_env) {
    if (auto value = ParentEnv(name)) env[name] = *value;
  }
  for (const auto& [name, value] : config.env) env[name] = value;
  return env;
}

// Looks `command` up on the child's PATH, as the child would.
absl::StatusOr<std::string> ResolveCommand(const std::string& command,
                                           const std::map<std::string, std::string>& env) {
  if (command.empty()) return absl::InvalidArgumentError("no command configured");
  if (command.find('/') != std::string::npos) return command;
  const auto path = env.find("PATH");
  const std::string search = path != env.end() ? path->second : "/usr/local/bin:/usr/bin:/bin";
  for (absl::string_view dir : absl::StrSplit(search, ':', absl::SkipEmpty())) {
    std::string candidate = absl::StrCat(dir, "/", command);
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return absl::NotFoundError(absl::StrCat("'", command, "' is not on PATH (", search, ")"));
}

// Waits up to `timeout` for the process behind `pid_fd` to exit.
bool WaitForExit(int pid_fd, std::chrono::milliseconds timeout) {
  pollfd fd{pid_fd, POLLIN, 0};
  for (;;) {
    const int ready = ::poll(&fd, 1, static_cast<int>(timeout.count()));
    if (ready >= 0) return ready > 0;
    if (errno != EINTR) return false;
  }
}

std::string DescribeExit(const siginfo_t& info) {
  if (info.si_code == CLD_EXITED) return absl::StrCat("exited with status ", info.si_status);
  if (info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED) {
    return absl::StrCat("was killed by signal ", info.si_status, " (", strsignal(info.si_status),
                        ")");
  }
  return "stopped";
}

// Logs the server's stderr line by line, each cut to kMaxStderrLine.
class StderrLines final {
 public:
  explicit StderrLines(const std::string& server) : server_(server) {}

  void Take(std::string_view chunk) {
    buffer_.append(chunk);
    size_t start = 0;
    for (size_t newline; (newline = buffer_.find('\n', start)) != std::string::npos;
         start = newline + 1) {
      Log(std::string_view(buffer_).substr(start, newline - start));
    }
    buffer_.erase(0, start);
    if (buffer_.size() > kMaxStderrLine) {
      Log(buffer_);
      buffer_.clear();
    }
  }

  // Logs what is left of an unfinished last line.
  void Flush() {
    if (!buffer_.empty()) Log(buffer_);
  }

 private:
  void Log(std::string_view line) const {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) return;
    core::LogInfo("mcp server stderr",
                  {{"server", server_}, {"line", Excerpt(line, kMaxStderrLine)}});
  }

  const std::string& server_;
  std::string buffer_;
};

// Reads what `fd` has now into `take`; false at end of file or on an error.
template <typename Take>
bool ReadAvailable(int fd, Take& take) {
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      take.Take(std::string_view(buffer, static_cast<size_t>(n)));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && errno == EAGAIN;
  }
}

// How the process `pid` ended, once it has: its exit status or signal;
// "closed its stdout" when it has not exited (yet).
std::string ExitReason(pid_t pid) {
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
      info.si_pid == pid) {
    return DescribeExit(info);
  }
  return "closed its stdout";
}

// The signals a service may ignore or handle, reset to their default
// action in the server.
constexpr int kDefaultSignals[] = {SIGPIPE, SIGTERM, SIGINT,  SIGHUP,
                                   SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2};

// argv and envp for exec, built before any fork.
class ExecVectors final {
 public:
  ExecVectors(const StdioServerConfig& config, const std::map<std::string, std::string>& env) {
    args_ = {config.command};
    args_.insert(args_.end(), config.args.begin(), config.args.end());
    for (const auto& [name, value] : env) env_.push_back(absl::StrCat(name, "=", value));
    for (std::string& arg : args_) argv_.push_back(arg.data());
    argv_.push_back(nullptr);
    for (std::string& entry : env_) envp_.push_back(entry.data());
    envp_.push_back(nullptr);
  }
  char* const* argv() const { return argv_.data(); }
  char* const* envp() const { return envp_.data(); }

 private:
  std::vector<std::string> args_;
  std::vector<std::string> env_;
  std::vector<char*> argv_;
  std::vector<char*> envp_;
};

// The child's side of ForkServer: only async-signal-safe calls. Reports
// the errno of a failed step on `report` and exits.
[[noreturn]] void BecomeServer(const StdioServerConfig& config, const FileSandbox* sandbox,
                               const char* path, const ExecVectors& exec, const int fds[3],
                               int report) {
  int error = 0;
  const auto step = [&error](bool ok) {
    if (!ok && error == 0) error = errno;
    return ok;
  };
  ::setpgid(0, 0);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  for (const int sig : kDefaultSignals) ::sigaction(sig, &default_action, nullptr);
  for (int target = 0; target < 3; ++target) step(::dup2(fds[target], target) == target);
  step(::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == 0);
  if (!config.cwd.empty()) step(::chdir(config.cwd.c_str()) == 0);
  if (config.run_as) {
    step(::setgroups(0, nullptr) == 0);
    step(::setgid(config.run_as->gid) == 0);
    step(::setuid(config.run_as->uid) == 0);
  }
  if (sandbox != nullptr && error == 0) {
    error = sandbox->EnforceInChild();
  }
  if (error == 0) {
    ::execve(path, exec.argv(), exec.envp());
    error = errno;
  }
  while (::write(report, &error, sizeof error) < 0 && errno == EINTR) {
  }
  ::_exit(127);
}

// fork and exec for a server with run_as or a sandbox (posix_spawn can do
// neither). Returns 0 or the errno of the step that failed.
int ForkServer(const StdioServerConfig& config, const FileSandbox* sandbox, const std::string& path,
               const ExecVectors& exec, const int fds[3], pid_t& pid) {
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return errno;
  pid = ::fork();
  if (pid == 0) BecomeServer(config, sandbox, path.c_str(), exec, fds, report[1]);
  const int forked = pid < 0 ? errno : 0;
  ::close(report[1]);
  int error = forked;
  if (pid > 0) {
    ssize_t n;
    while ((n = ::read(report[0], &error, sizeof error)) < 0 && errno == EINTR) {
    }
    if (n != sizeof error) error = 0;  // exec closed the pipe: it ran
    if (error != 0) ::waitpid(pid, nullptr, 0);
  }
  ::close(report[0]);
  return error;
}

// Starts the server with `in_fd`, `out_fd` and `err_fd` as its stdin, stdout
// and stderr, its environment `env`. Returns posix_spawn's result (0, or an
// errno value); `pid` is the process started.
int SpawnServer(const StdioServerConfig& config, const FileSandbox* sandbox,
                const std::string& path, const std::map<std::string, std::string>& env, int in_fd,
                int out_fd, int err_fd, pid_t& pid) {
  const ExecVectors exec(config, env);
  if (config.run_as || sandbox != nullptr) {
    const int fds[3] = {in_fd, out_fd, err_fd};
    return ForkServer(config, sandbox, path, exec, fds, pid);
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_fd, STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out_fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_fd, STDERR_FILENO);
  posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
  if (!config.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, config.cwd.c_str());

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group (so a signal reaches the server's children too),
  // no blocked signals (services block SIGTERM to sigwait for it), and the
  // default action for the signals a service may ignore or handle.
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t mask;
  sigemptyset(&mask);
  posix_spawnattr_setsigmask(&attr, &mask);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (const int sig : kDefaultSignals) sigaddset(&defaults, sig);
  posix_spawnattr_setsigdefault(&attr, &defaults);

  const int spawned = ::posix_spawn(&pid, path.c_str(), &actions, &attr, exec.argv(), exec.envp());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  return spawned;
}

// The sandbox a server starts in: none when it is off, or when the kernel
// has no Landlock and it is not required (a warning, once per process).
absl::StatusOr<std::unique_ptr<FileSandbox>> SandboxFor(
    const StdioServerConfig& config, const std::string& path,
    const std::map<std::string, std::string>& env) {
  if (config.sandbox == SandboxMode::kOff) return nullptr;
  const auto home = env.find("HOME");
  absl::StatusOr<std::unique_ptr<FileSandbox>> sandbox = FileSandbox::Build(
      SandboxPathsFor(path, config.args, config.cwd, home == env.end() ? "" : home->second,
                      config.read_paths, config.write_paths));
  if (sandbox.ok()) return sandbox;
  if (sandbox.status().code() != absl::StatusCode::kFailedPrecondition) {
    return absl::UnavailableError(sandbox.status().message());
  }
  if (config.sandbox == SandboxMode::kRequired) return sandbox.status();
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) {
    core::LogWarn(
        "mcp servers run without a file sandbox",
        {{"server", config.server_name}, {"why", std::string(sandbox.status().message())}});
  }
  return nullptr;
}

// Blocks SIGPIPE on this thread for its lifetime; a write to a closed pipe
// then fails with EPIPE, and the signal it raised is consumed, instead of
// killing the process.
class ScopedSigpipeBlock final {
 public:
  ScopedSigpipeBlock() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &previous_);
  }
  ~ScopedSigpipeBlock() {
    if (raised_) {
      const timespec zero{0, 0};
      while (sigtimedwait(&pipe_, nullptr, &zero) < 0 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  void Raised() { raised_ = true; }

 private:
  sigset_t pipe_;
  sigset_t previous_;
  bool raised_ = false;
};

}  // namespace

StdioTransport::StdioTransport(StdioServerConfig config) : config_(std::move(config)) {}

StdioTransport::~StdioTransport() { Close(); }

std::string StdioTransport::Describe() const {
  std::vector<std::string> parts = {config_.command};
  parts.insert(parts.end(), config_.args.begin(), config_.args.end());
  return absl::StrJoin(parts, " ");
}

pid_t StdioTransport::pid() const {
  absl::MutexLock lock(&mu_);
  return pid_;
}

absl::Status StdioTransport::Open(TransportHandlers handlers, uint64_t epoch) {
  Close();
  absl::MutexLock open_lock(&close_mu_);
  const std::map<std::string, std::string> env = ChildEnvironment(config_);
  absl::StatusOr<std::string> path = ResolveCommand(config_.command, env);
  if (!path.ok()) return absl::UnavailableError(path.status().message());
  absl::StatusOr<std::unique_ptr<FileSandbox>> sandbox = SandboxFor(config_, *path, env);
  if (!sandbox.ok()) return sandbox.status();

  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    const int error = errno;
    for (int* fds : {in, out, err}) {
      CloseFd(fds[0]);
      CloseFd(fds[1]);
    }
    return absl::UnavailableError(absl::StrCat("pipe: ", ErrnoText(error)));
  }

  pid_t pid = -1;
  const int spawned = SpawnServer(config_, sandbox->get(), *path, env, in[0], out[1], err[1], pid);
  CloseFd(in[0]);
  CloseFd(out[1]);
  CloseFd(err[1]);
  if (spawned != 0) {
    CloseFd(in[1]);
    CloseFd(out[0]);
    CloseFd(err[0]);
    return absl::UnavailableError(
        absl::StrCat("cannot run '", Describe(), "': ", ErrnoText(spawned)));
  }
  int pid_fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  int wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (pid_fd < 0 || wake_fd < 0 || !SetNonBlocking(in[1]) || !SetNonBlocking(out[0]) ||
      !SetNonBlocking(err[0])) {
    const int error = errno;
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    for (int* fd : {&in[1], &out[0], &err[0], &pid_fd, &wake_fd}) CloseFd(*fd);
    return absl::UnavailableError(
        absl::StrCat("setting up the server's pipes: ", ErrnoText(error)));
  }
  {
    absl::MutexLock lock(&mu_);
    pid_ = pid;
    stdin_fd_ = in[1];
    pid_fd_ = pid_fd;
    wake_fd_ = wake_fd;
    epoch_ = epoch;
    closing_ = false;
    reader_ = std::thread(&StdioTransport::ReadLoop, this, std::move(handlers), out[0], err[0],
                          pid_fd, wake_fd, pid);
  }
  core::LogInfo(
      "mcp server started",
      {{"server", config_.server_name}, {"pid", std::to_string(pid)}, {"command", Describe()}});
  return absl::OkStatus();
}

absl::Status StdioTransport::Send(std::string_view message, const SendOptions& options) {
  absl::MutexLock lock(&mu_);
  if (stdin_fd_ < 0 || options.epoch != epoch_) {
    return absl::UnavailableError("the server process is not running");
  }
  std::string line(message);
  line.push_back('\n');
  ScopedSigpipeBlock sigpipe;
  size_t written = 0;
  while (written < line.size()) {
    const ssize_t n = ::write(stdin_fd_, line.data() + written, line.size() - written);
    if (n > 0) {
      written += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(options.deadline - Clock::now());
      if (left.count() <= 0) {
        return absl::DeadlineExceededError("the server is not reading its stdin");
      }
      pollfd fd{stdin_fd_, POLLOUT, 0};
      ::poll(&fd, 1, static_cast<int>(std::min<int64_t>(left.count(), 60'000)));
      continue;
    }
    if (n < 0 && errno == EPIPE) {
      sigpipe.Raised();
      return absl::UnavailableError("the server closed its stdin");
    }
    return absl::UnavailableError(absl::StrCat("writing to the server: ", ErrnoText(errno)));
  }
  return absl::OkStatus();
}

void StdioTransport::ReadLoop(const TransportHandlers& handlers, int out_fd, int err_fd, int pid_fd,
                              int wake_fd, pid_t pid) {
  StdoutLines out(config_.server_name, config_.max_message_bytes, handlers.on_message);
  StderrLines err(config_.server_name);
  bool out_open = true;
  bool err_open = true;
  bool exited = false;
  bool woken = false;
  while (out_open && !exited && !woken) {
    pollfd fds[4] = {{out_fd, POLLIN, 0},
                     {err_open ? err_fd : -1, POLLIN, 0},
                     {pid_fd, POLLIN, 0},
                     {wake_fd, POLLIN, 0}};
    if (::poll(fds, 4, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents != 0) out_open = ReadAvailable(out_fd, out);
    if (err_open && fds[1].revents != 0) err_open = ReadAvailable(err_fd, err);
    exited = fds[2].revents != 0;
    woken = fds[3].revents != 0;
  }
  // What the process wrote before it went is still worth reading.
  if (out_open) ReadAvailable(out_fd, out);
  if (err_open) ReadAvailable(err_fd, err);
  err.Flush();
  ::close(out_fd);
  ::close(err_fd);
  if (closing_) return;

  // A process that closed its stdout is usually exiting: give it a moment,
  // so the reason names its exit status rather than the closed pipe.
  if (!exited && !woken) WaitForExit(pid_fd, kExitAfterEofWait);
  const std::string reason = ExitReason(pid);
  if (handlers.on_closed) {
    handlers.on_closed(absl::UnavailableError(absl::StrCat("the server process ", reason)));
  }
}

void StdioTransport::Close() {
  absl::MutexLock close_lock(&close_mu_);
  pid_t pid;
  int pid_fd;
  {
    absl::MutexLock lock(&mu_);
    if (pid_ < 0) return;
    closing_ = true;
    CloseFd(stdin_fd_);
    pid = pid_;
    pid_fd = pid_fd_;
  }
  // The spec's order: closed stdin, then SIGTERM, then SIGKILL.
  if (!WaitForExit(pid_fd, config_.shutdown_grace)) {
    ::kill(-pid, SIGTERM);
    if (!WaitForExit(pid_fd, config_.shutdown_grace)) ::kill(-pid, SIGKILL);
  }
  // The exited leader still holds the group id, so this reaches only the
  // server's own leftovers.
  ::kill(-pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  {
    absl::MutexLock lock(&mu_);
    const uint64_t one = 1;
    if (::write(wake_fd_, &one, sizeof one) < 0) {
      // The reader also stops on the process's exit, which has happened.
    }
  }
  if (reader_.joinable()) reader_.join();
  absl::MutexLock lock(&mu_);
  CloseFd(pid_fd_);
  CloseFd(wake_fd_);
  pid_ = -1;
  core::LogInfo("mcp server stopped",
                {{"server", config_.server_name},
                 {"pid", std::to_string(pid)},
                 {"status", WIFEXITED(status) ? absl::StrCat("exit ", WEXITSTATUS(status))
                                              : absl::StrCat("signal ", WTERMSIG(status))}});
}

}  // namespace omniforge::mcp
