#include "tests/support/command.h"

#include <pty.h>
#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX kill, not <csignal>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace omniforge::testing {
namespace {

// NAME=value strings and the pointer arrays execve takes, kept alive together.
struct ExecArgs {
  ExecArgs(const std::vector<std::string>& args, const std::vector<std::string>& extra_env)
      : argv_strings(args) {
    for (char** entry = environ; *entry != nullptr; ++entry) {
      // The developer's shell must not change what the test sees.
      if (std::strncmp(*entry, "OMNIFORGE_", 10) == 0 ||
          std::strncmp(*entry, "NO_COLOR=", 9) == 0) {
        continue;
      }
      env_strings.emplace_back(*entry);
    }
    env_strings.insert(env_strings.end(), extra_env.begin(), extra_env.end());
    for (std::string& arg : argv_strings) argv.push_back(arg.data());
    argv.push_back(nullptr);
    for (std::string& entry : env_strings) envp.push_back(entry.data());
    envp.push_back(nullptr);
  }
  std::vector<std::string> argv_strings;
  std::vector<std::string> env_strings;
  std::vector<char*> argv;
  std::vector<char*> envp;
};

// Only async-signal-safe calls: this runs between fork and exec.
[[noreturn]] void ExecChild(const ExecArgs& exec, pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  signal(SIGPIPE, SIG_DFL);
  execve(exec.argv[0], exec.argv.data(), exec.envp.data());
  _exit(127);
}

int ExitCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

int WaitFor(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return ExitCode(status);
}

// An unlinked temporary file, open for reading and writing.
int TempFile() {
  char name[] = "/tmp/omniforge-command-XXXXXX";
  const int fd = mkstemp(name);
  if (fd >= 0) unlink(name);
  return fd;
}

std::string ReadAll(int fd) {
  std::string text;
  char buffer[4096];
  lseek(fd, 0, SEEK_SET);
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  return text;
}

}  // namespace

CommandResult RunCommand(const std::vector<std::string>& argv, const std::string& input,
                         const std::vector<std::string>& env) {
  CommandResult result;
  const ExecArgs exec(argv, env);
  const int in = TempFile(), out = TempFile(), err = TempFile();
  if (in < 0 || out < 0 || err < 0 ||
      write(in, input.data(), input.size()) != static_cast<ssize_t>(input.size())) {
    result.err = std::string("temporary files: ") + std::strerror(errno);
    return result;
  }
  lseek(in, 0, SEEK_SET);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(in, STDIN_FILENO);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    ExecChild(exec, parent);
  }
  if (pid > 0) result.exit_code = WaitFor(pid);
  result.out = ReadAll(out);
  result.err = pid < 0 ? std::string("fork: ") + std::strerror(errno) : ReadAll(err);
  for (int fd : {in, out, err}) close(fd);
  return result;
}

CommandResult RunInTerminal(const std::vector<std::string>& argv,
                            const std::vector<std::string>& env, const std::string& input) {
  CommandResult result;
  const ExecArgs exec(argv, env);
  int terminal = -1;
  const pid_t parent = getpid();
  const pid_t pid = forkpty(&terminal, nullptr, nullptr, nullptr);
  if (pid < 0) {
    result.err = std::string("forkpty: ") + std::strerror(errno);
    return result;
  }
  if (pid == 0) ExecChild(exec, parent);
  // The terminal keeps what is typed until the program reads it.
  if (!input.empty() &&
      write(terminal, input.data(), input.size()) != static_cast<ssize_t>(input.size())) {
    result.err = std::string("typing into the terminal: ") + std::strerror(errno);
  }
  // Reading ends with EIO once the program closed its side of the terminal.
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(terminal, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    result.out.append(buffer, static_cast<size_t>(n));
  }
  close(terminal);
  result.exit_code = WaitFor(pid);
  return result;
}

}  // namespace omniforge::testing
