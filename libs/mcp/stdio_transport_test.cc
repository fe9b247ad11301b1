// The stdio transport with /bin/sh standing in for a server: the child's
// working directory and environment, stderr in the logs, long lines, exit
// reasons, writes to a process that is gone, and the SIGTERM/SIGKILL ladder.
#include "libs/mcp/stdio_transport.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libs/core/logging.h"

namespace omniforge::mcp {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::mutex log_mu;
std::vector<std::string>* captured_logs = nullptr;

void CaptureLog(const std::string& line) {
  std::lock_guard lock(log_mu);
  if (captured_logs != nullptr) captured_logs->push_back(line);
}

// Collects what the transport hands over.
struct Received {
  std::mutex mu;
  std::vector<std::string> messages;
  std::promise<absl::Status> closed;
  std::promise<void> got_message;
  size_t wanted = 1;

  TransportHandlers Handlers() {
    TransportHandlers handlers;
    handlers.on_message = [this](std::string_view message) {
      std::lock_guard lock(mu);
      messages.emplace_back(message);
      if (messages.size() == wanted) got_message.set_value();
    };
    handlers.on_closed = [this](const absl::Status& reason) { closed.set_value(reason); };
    return handlers;
  }
};

StdioServerConfig Shell(const std::string& script) {
  StdioServerConfig config;
  config.server_name = "sh";
  config.command = "sh";
  config.args = {"-c", script};
  return config;
}

SendOptions SoonWithEpoch(uint64_t epoch) {
  SendOptions options;
  options.deadline = Clock::now() + std::chrono::seconds(5);
  options.epoch = epoch;
  return options;
}

TEST(StdioTransportTest, ChildGetsItsDirectoryAndEnvironmentAndStderrIsLogged) {
  std::vector<std::string> logs;
  {
    std::lock_guard lock(log_mu);
    captured_logs = &logs;
  }
  core::SetLogSinkForTesting(&CaptureLog);
  ::setenv("OMNIFORGE_MCP_STDIO_SECRET", "leak", 1);
  StdioServerConfig config = Shell(
      "pwd; echo \"given=$GIVEN secret=$OMNIFORGE_MCP_STDIO_SECRET\"; echo complaint >&2; "
      "exec cat >/dev/null");
  config.cwd = "/";
  config.env = {{"GIVEN", "yes"}};
  StdioTransport transport(config);
  Received received;
  received.wanted = 2;
  ASSERT_TRUE(transport.Open(received.Handlers(), 1).ok());
  ASSERT_EQ(received.got_message.get_future().wait_for(std::chrono::seconds(5)),
            std::future_status::ready);
  transport.Close();
  core::SetLogSinkForTesting(nullptr);
  ::unsetenv("OMNIFORGE_MCP_STDIO_SECRET");
  {
    std::lock_guard lock(received.mu);
    EXPECT_THAT(received.messages, ElementsAre("/", "given=yes secret="));
  }
  std::lock_guard lock(log_mu);
  captured_logs = nullptr;
  bool logged = false;
  for (const std::string& line : logs) {
    logged |= line.find("mcp server stderr") != std::string::npos &&
              line.find("complaint") != std::string::npos &&
              line.find(R"("server":"sh")") != std::string::npos;
  }
  EXPECT_TRUE(logged);
}

TEST(StdioTransportTest, LinesLongerThanTheLimitAreDropped) {
  StdioServerConfig config =
      Shell(R"(head -c 3000 /dev/zero | tr '\000' a; echo; echo '{"ok":1}'; exec cat >/dev/null)");
  config.max_message_bytes = 1024;
  StdioTransport transport(config);
  Received received;
  ASSERT_TRUE(transport.Open(received.Handlers(), 1).ok());
  ASSERT_EQ(received.got_message.get_future().wait_for(std::chrono::seconds(5)),
            std::future_status::ready);
  transport.Close();
  std::lock_guard lock(received.mu);
  EXPECT_THAT(received.messages, ElementsAre("{\"ok\":1}"));
}

TEST(StdioTransportTest, ExitIsReportedWithItsStatus) {
  StdioTransport transport(Shell("exit 3"));
  Received received;
  ASSERT_TRUE(transport.Open(received.Handlers(), 1).ok());
  std::future<absl::Status> closed = received.closed.get_future();
  ASSERT_EQ(closed.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  const absl::Status reason = closed.get();
  EXPECT_EQ(reason.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(reason.message(), HasSubstr("exited with status 3"));
  // Writing to the process that is gone fails instead of raising SIGPIPE.
  const absl::Status sent = transport.Send("{}", SoonWithEpoch(1));
  EXPECT_EQ(sent.code(), absl::StatusCode::kUnavailable) << sent;
}

TEST(StdioTransportTest, MessagesFromAnEarlierOpenAreRefused) {
  StdioTransport transport(Shell("exec cat >/dev/null"));
  Received first;
  ASSERT_TRUE(transport.Open(first.Handlers(), 1).ok());
  Received second;
  ASSERT_TRUE(transport.Open(second.Handlers(), 2).ok());
  EXPECT_EQ(transport.Send("{}", SoonWithEpoch(1)).code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(transport.Send("{}", SoonWithEpoch(2)).ok());
  transport.Close();
}

TEST(StdioTransportTest, CloseEscalatesToSigkill) {
  StdioServerConfig config = Shell("trap '' TERM; while :; do sleep 1; done");
  config.shutdown_grace = std::chrono::milliseconds(100);
  StdioTransport transport(config);
  Received received;
  ASSERT_TRUE(transport.Open(received.Handlers(), 1).ok());
  ASSERT_GT(transport.pid(), 0);
  const auto start = std::chrono::steady_clock::now();
  transport.Close();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(transport.pid(), -1);
  // Close reports nothing: the server did not go away by itself.
  EXPECT_EQ(received.closed.get_future().wait_for(std::chrono::milliseconds(0)),
            std::future_status::timeout);
}

TEST(StdioTransportTest, MissingCommandIsUnavailable) {
  StdioServerConfig config;
  config.server_name = "ghost";
  config.command = "omniforge-no-such-mcp-server";
  StdioTransport transport(config);
  Received received;
  const absl::Status opened = transport.Open(received.Handlers(), 1);
  EXPECT_EQ(opened.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(opened.message(), HasSubstr("not on PATH"));
}

// run_as: the server runs as the configured user and group, without our
// supplementary groups, its environment and directory as without run_as.
TEST(StdioTransportTest, RunAsStartsTheServerAsAnotherUser) {
  StdioServerConfig config =
      Shell("echo \"$(id -u) $(id -g) $(id -G) $(pwd) $GIVEN\"; exec cat >/dev/null");
  config.cwd = "/";
  config.env = {{"GIVEN", "yes"}};
  config.run_as = RunAs{65534, 65534};
  StdioTransport transport(config);
  Received received;
  const absl::Status opened = transport.Open(received.Handlers(), 1);
  if (::geteuid() != 0) {
    // Changing user needs root: refused at start, naming why.
    EXPECT_EQ(opened.code(), absl::StatusCode::kUnavailable);
    EXPECT_THAT(opened.message(), HasSubstr("not permitted"));
    return;
  }
  ASSERT_TRUE(opened.ok()) << opened;
  ASSERT_EQ(received.got_message.get_future().wait_for(std::chrono::seconds(5)),
            std::future_status::ready);
  transport.Close();
  std::lock_guard lock(received.mu);
  EXPECT_THAT(received.messages, ElementsAre("65534 65534 65534 / yes"));
}

TEST(StdioTransportTest, RunAsFailureToExecIsReportedAtOpen) {
  StdioServerConfig config = Shell("true");
  config.command = "/nonexistent/server";
  config.run_as = RunAs{::geteuid(), ::getegid()};
  StdioTransport transport(config);
  Received received;
  const absl::Status opened = transport.Open(received.Handlers(), 1);
  EXPECT_EQ(opened.code(), absl::StatusCode::kUnavailable);
  // Not root: changing groups already fails, before exec.
  EXPECT_THAT(opened.message(), HasSubstr(::geteuid() == 0 ? "No such file" : "not permitted"));
}

// The file sandbox: a server reads the system and the paths it was given,
// writes only where it was told, and reaches nothing else of ours: not a
// key file beside its directories, not /tmp, and (Landlock ABI 6) cannot
// signal the service that started it.
TEST(StdioTransportTest, ASandboxedServerReachesOnlyItsPaths) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / absl::StrCat("omniforge-sandbox-", ::getpid());
  std::filesystem::create_directories(dir / "given");
  std::ofstream(dir / "identity.key") << "secret\n";
  std::ofstream(dir / "given" / "shared.txt") << "shared\n";
  const std::string script = absl::StrCat(
      R"(try() { if eval "$2" >/dev/null 2>&1; then echo "$1=yes"; else echo "$1=no"; fi; }; )",
      "try system 'cat /etc/passwd'; ", "try key 'cat ", (dir / "identity.key").string(), "'; ",
      "try list 'ls ", dir.string(), "'; ", "try given 'cat ",
      (dir / "given" / "shared.txt").string(), "'; ", "try given_write 'echo x > ",
      (dir / "given" / "new.txt").string(), "'; ", "try own_write 'echo x > ",
      (dir / "own" / "state.json").string(), "'; ", "try tmp_write 'echo x > ",
      (dir / "stray.txt").string(), "'; ", "try signal 'kill -0 $PPID'; exec cat >/dev/null");
  StdioServerConfig config = Shell(script);
  config.sandbox = SandboxMode::kRequired;
  config.read_paths = {(dir / "given").string()};
  config.write_paths = {(dir / "own").string()};  // made for it
  StdioTransport transport(config);
  Received received;
  received.wanted = 8;
  const absl::Status opened = transport.Open(received.Handlers(), 1);
  if (LandlockAbi() == 0) {
    // Required, and the kernel cannot: refused at start, naming why.
    EXPECT_EQ(opened.code(), absl::StatusCode::kFailedPrecondition) << opened;
    EXPECT_THAT(opened.message(), HasSubstr("Landlock"));
    std::filesystem::remove_all(dir);
    return;
  }
  ASSERT_TRUE(opened.ok()) << opened;
  ASSERT_EQ(received.got_message.get_future().wait_for(std::chrono::seconds(10)),
            std::future_status::ready);
  transport.Close();
  const bool scoped = LandlockAbi() >= 6;
  {
    std::lock_guard lock(received.mu);
    EXPECT_THAT(received.messages,
                ElementsAre("system=yes", "key=no", "list=no", "given=yes", "given_write=no",
                            "own_write=yes", "tmp_write=no", scoped ? "signal=no" : "signal=yes"));
  }
  EXPECT_TRUE(std::filesystem::exists(dir / "own" / "state.json"));
  EXPECT_FALSE(std::filesystem::exists(dir / "stray.txt"));
  EXPECT_FALSE(std::filesystem::exists(dir / "given" / "new.txt"));

  // The same server unsandboxed reaches all of it: the sandbox made the
  // difference.
  config.sandbox = SandboxMode::kOff;
  StdioTransport open_server(config);
  Received unsandboxed;
  unsandboxed.wanted = 8;
  ASSERT_TRUE(open_server.Open(unsandboxed.Handlers(), 1).ok());
  ASSERT_EQ(unsandboxed.got_message.get_future().wait_for(std::chrono::seconds(10)),
            std::future_status::ready);
  open_server.Close();
  {
    std::lock_guard lock(unsandboxed.mu);
    EXPECT_THAT(unsandboxed.messages,
                ElementsAre("system=yes", "key=yes", "list=yes", "given=yes", "given_write=yes",
                            "own_write=yes", "tmp_write=yes", "signal=yes"));
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace omniforge::mcp
