#include "tests/support/server_process.h"

#include <fcntl.h>
#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX kill, not <csignal>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/time/time.h"

extern char** environ;

namespace omniforge::testing {

std::string LogField(const std::string& line, const std::string& key) {
  const std::string opening = "\"" + key + "\":\"";
  const size_t start = line.find(opening);
  if (start == std::string::npos) return "";
  const size_t value = start + opening.size();
  const size_t end = line.find('"', value);
  return end == std::string::npos ? "" : line.substr(value, end - value);
}

namespace {

// This process's environment without OMNIFORGE_ settings, the server on
// loopback and free ports unless `extra_env` says otherwise, then `extra_env`.
std::vector<std::string> ServerEnvironment(const std::vector<std::string>& extra_env) {
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    // The developer's shell must not reconfigure the server under test.
    if (std::strncmp(*entry, "OMNIFORGE_", 10) != 0) env.emplace_back(*entry);
  }
  // getenv takes the first of repeated names: a setting in `extra_env`
  // replaces the default.
  auto given = [&](const std::string& entry) {
    const std::string name = entry.substr(0, entry.find('=') + 1);
    for (const std::string& extra : extra_env) {
      if (extra.rfind(name, 0) == 0) return true;
    }
    return false;
  };
  for (const char* entry :
       {"OMNIFORGE_SERVER_HOST=127.0.0.1", "OMNIFORGE_SERVER_PORT=0",
        "OMNIFORGE_SERVER_METRICS_HOST=127.0.0.1", "OMNIFORGE_SERVER_METRICS_PORT=0",
        "OMNIFORGE_SERVER_DRAIN_TIMEOUT_S=5"}) {
    if (!given(entry)) env.emplace_back(entry);
  }
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  return env;
}

}  // namespace

std::optional<std::string> ServerProcess::Start(const std::vector<std::string>& extra_env,
                                                const std::vector<std::string>& args,
                                                std::chrono::seconds timeout) {
  env_ = extra_env;
  args_ = args;
  std::vector<std::string> env = ServerEnvironment(extra_env);
  std::vector<char*> envp;
  envp.reserve(env.size() + 1);
  for (std::string& entry : env) envp.push_back(entry.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_strings = {binary_};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  argv.reserve(argv_strings.size() + 1);
  for (std::string& arg : argv_strings) argv.push_back(arg.data());
  argv.push_back(nullptr);

  exit_status_.reset();
  {
    absl::MutexLock lock(&mu_);
    log_.clear();
    started_line_.reset();
    log_closed_ = false;
  }
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return std::string("pipe2: ") + std::strerror(errno);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return std::string("fork: ") + std::strerror(errno);
  }
  if (pid == 0) {
    // Only async-signal-safe calls between fork and exec.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGPIPE, SIG_DFL);
    dup2(fds[1], STDERR_FILENO);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  close(fds[1]);
  pid_ = pid;
  reader_ = std::thread([this, fd = fds[0]] { ReadLog(fd); });

  std::optional<std::string> started_line;
  bool exited = false;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time deadline = absl::Now() + absl::FromChrono(timeout);
    while (!log_closed_ && !started_line_) {
      if (changed_.WaitWithDeadline(&mu_, deadline)) break;  // timed out
    }
    started_line = started_line_;
    exited = log_closed_;
  }
  if (!started_line) {
    return binary_ + " did not start (" + (exited ? "exited" : "timed out") + "); log:\n" +
           JoinedLog();
  }
  port_ = std::stoi(LogField(*started_line, "port"));
  const std::string metrics = LogField(*started_line, "metrics_port");
  metrics_port_ = metrics.empty() ? 0 : std::stoi(metrics);
  return std::nullopt;
}

void ServerProcess::Terminate() {
  if (pid_ > 0) kill(pid_, SIGTERM);
}

std::optional<int> ServerProcess::WaitForExit(std::chrono::steady_clock::duration timeout) {
  if (pid_ <= 0) return exit_status_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  for (;;) {
    const pid_t done = waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      exit_status_ = status;
      break;
    }
    if (done < 0 || std::chrono::steady_clock::now() >= deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      exit_status_ = std::nullopt;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  pid_ = -1;
  if (reader_.joinable()) reader_.join();
  return exit_status_;
}

std::optional<int> ServerProcess::Stop(std::chrono::seconds timeout) {
  Terminate();
  return WaitForExit(timeout);
}

void ServerProcess::Kill() {
  if (pid_ > 0) kill(pid_, SIGKILL);
  WaitForExit(std::chrono::seconds(10));
}

std::optional<std::string> ServerProcess::Restart(std::chrono::seconds timeout) {
  Kill();
  // The port it listened on replaces any the last Start named (getenv takes
  // the first of repeated names, so the old one must go).
  std::vector<std::string> env;
  for (const std::string& entry : env_) {
    if (entry.rfind("OMNIFORGE_SERVER_PORT=", 0) != 0) env.push_back(entry);
  }
  env.push_back("OMNIFORGE_SERVER_PORT=" + std::to_string(port_));
  const std::vector<std::string> args = args_;
  return Start(env, args, timeout);
}

std::vector<std::string> ServerProcess::LogLines() const {
  absl::MutexLock lock(&mu_);
  return log_;
}

std::string ServerProcess::JoinedLog() const {
  std::string joined;
  for (const std::string& line : LogLines()) joined += line + "\n";
  return joined;
}

void ServerProcess::ReadLog(int fd) {
  std::string pending;
  char buffer[4096];
  auto add = [this](std::string line) {
    absl::MutexLock lock(&mu_);
    if (!started_line_ && LogField(line, "msg") == "server started") started_line_ = line;
    log_.push_back(std::move(line));
    changed_.SignalAll();
  };
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buffer, static_cast<size_t>(n));
    size_t newline;
    while ((newline = pending.find('\n')) != std::string::npos) {
      add(pending.substr(0, newline));
      pending.erase(0, newline + 1);
    }
  }
  if (!pending.empty()) add(pending);
  close(fd);
  absl::MutexLock lock(&mu_);
  log_closed_ = true;
  changed_.SignalAll();
}

}  // namespace omniforge::testing
