// The real MCP servers from npm (tests/node) that the integration tests run
// against, and Streamable HTTP server processes bound to loopback.
#pragma once

#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX kill, not <csignal>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

namespace omniforge::mcp::testing {

inline bool NodeAvailable() { return std::system("command -v node >/dev/null 2>&1") == 0; }

inline std::filesystem::path NodeModules() {
  return std::filesystem::path(OMNIFORGE_SOURCE_DIR) / "tests" / "node" / "node_modules";
}

// The entry script of an npm MCP server package, e.g. "server-everything".
inline std::filesystem::path ServerScript(const std::string& package) {
  return NodeModules() / "@modelcontextprotocol" / package / "dist" / "index.js";
}

inline std::string MissingPackageMessage(const std::string& package) {
  return "tests/node/node_modules/@modelcontextprotocol/" + package +
         " is missing: run `npm ci --prefix tests/node` (scripts/deps.sh does it when node and "
         "npm are installed)";
}

// tests/node/resumable_mcp_server.mjs: the official SDK's Streamable HTTP
// server transport with an event store, driven by its tools.
inline std::filesystem::path ResumableServerScript() {
  return NodeModules().parent_path() / "resumable_mcp_server.mjs";
}

// A Node.js MCP server speaking Streamable HTTP on 127.0.0.1 and a port the
// kernel chose; stopped (SIGKILL) on destruction.
class NodeHttpServer {
 public:
  // `script` run by node with `arguments` (shell words).
  NodeHttpServer(const std::filesystem::path& script, const std::string& arguments) {
    const std::filesystem::path preload = std::filesystem::path(OMNIFORGE_SOURCE_DIR) / "libs" /
                                          "mcp" / "testing" / "loopback_listen.cjs";
    const std::string command = "echo $$; PORT=0 exec node -r '" + preload.string() + "' '" +
                                script.string() + "' " + arguments + " 2>&1";
    pipe_ = ::popen(command.c_str(), "r");
    if (pipe_ == nullptr) return;
    char line[4096];
    if (std::fgets(line, sizeof line, pipe_) == nullptr) return;
    pid_ = static_cast<pid_t>(std::atol(line));
    while (std::fgets(line, sizeof line, pipe_) != nullptr) {
      unsigned port = 0;
      if (std::sscanf(line, "omniforge-test-listening %*s %u", &port) == 1) {
        port_ = static_cast<int>(port);
        break;
      }
    }
    // The server logs every request to stdout: keep the pipe drained.
    drain_ = std::thread([pipe = pipe_] {
      char buffer[4096];
      while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) {
      }
    });
  }
  NodeHttpServer(const NodeHttpServer&) = delete;
  NodeHttpServer& operator=(const NodeHttpServer&) = delete;
  virtual ~NodeHttpServer() {
    Kill();
    if (drain_.joinable()) drain_.join();
    if (pipe_ != nullptr) ::pclose(pipe_);
  }
  void Kill() {
    if (pid_ > 0) ::kill(pid_, SIGKILL);
  }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/mcp"; }

 private:
  FILE* pipe_ = nullptr;
  pid_t pid_ = -1;
  int port_ = 0;
  std::thread drain_;
};

// server-everything's Streamable HTTP transport.
class EverythingHttpServer final : public NodeHttpServer {
 public:
  EverythingHttpServer() : NodeHttpServer(ServerScript("server-everything"), "streamableHttp") {}
};

}  // namespace omniforge::mcp::testing
