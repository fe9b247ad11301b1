// A stdio MCP server cannot read the environment of the service that
// started it once the service called core::ShieldProcessFromChildren().
//
// Root may read any process's /proc files, so the service is played by a
// forked helper running as an unprivileged user (nobody when the test runs
// as root). The helper first starts the probe without the shield (it must
// read the environment: the check can fail), then shields itself and
// starts it again. Its own binary: fork() is safe only before any thread.
#include <grp.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libs/core/process_shield.h"
#include "libs/mcp/stdio_transport.h"

namespace omniforge::mcp {
namespace {

constexpr uid_t kNobody = 65534;
constexpr int kCannotDropRoot = 77;

// What the probe, started through the stdio transport as an MCP server
// would be, says of its parent's /proc/<ppid>/environ: "readable" when it
// read a PATH= entry there, "denied" otherwise.
std::string Probe(SandboxMode sandbox) {
  StdioServerConfig config;
  config.sandbox = sandbox;
  config.server_name = "probe";
  config.command = "sh";
  config.cwd = "/";
  config.args = {"-c",
                 "if tr '\\0' '\\n' < /proc/$PPID/environ 2>/dev/null | grep -q '^PATH='; "
                 "then echo readable; else echo denied; fi; exec cat >/dev/null"};
  StdioTransport transport(config);
  std::promise<std::string> said;
  bool once = false;
  TransportHandlers handlers;
  handlers.on_message = [&](std::string_view line) {
    if (!once) said.set_value(std::string(line));
    once = true;
  };
  if (!transport.Open(handlers, 1).ok()) return "cannot start";
  std::future<std::string> answer = said.get_future();
  if (answer.wait_for(std::chrono::seconds(10)) != std::future_status::ready) return "silent";
  std::string line = answer.get();
  transport.Close();
  return line;
}

// The helper: drops root if it has it, then probes without and with the
// shield. Writes "<without> <with>" to `out`.
int Helper(int out) {
  if (::geteuid() == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) {
      return kCannotDropRoot;
    }
    // Changing user made us undumpable; a service started as that user is
    // dumpable until it shields itself.
    ::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
  }
  // The file sandbox also keeps a server from reading its parent's /proc
  // (Landlock denies tracing outside the sandbox): the shield is checked
  // without it, then the sandbox alone.
  const std::string without = Probe(SandboxMode::kOff);
  const std::string sandboxed = Probe(SandboxMode::kBestEffort);
  if (!core::ShieldProcessFromChildren().ok() || core::ProcessIsDumpable()) return 3;
  const std::string with = Probe(SandboxMode::kOff);
  const std::string report = without + " " + with + " " + sandboxed;
  return ::write(out, report.data(), report.size()) == static_cast<ssize_t>(report.size()) ? 0 : 4;
}

TEST(ProcessShieldTest, AStdioServerCannotReadTheShieldedParentsEnvironment) {
  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(report[0]);
    ::_exit(Helper(report[1]));
  }
  ::close(report[1]);
  std::string said;
  char buffer[256];
  for (ssize_t n; (n = ::read(report[0], buffer, sizeof buffer)) > 0;) said.append(buffer, n);
  ::close(report[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == kCannotDropRoot) {
    GTEST_SKIP() << "running as root without the right to become nobody (65534)";
  }
  ASSERT_EQ(WEXITSTATUS(status), 0);
  // Without the shield the probe reads it: the check itself works. The
  // sandbox alone denies it where the kernel has Landlock.
  EXPECT_EQ(said, LandlockAbi() > 0 ? "readable denied denied" : "readable denied readable");
}

}  // namespace
}  // namespace omniforge::mcp
