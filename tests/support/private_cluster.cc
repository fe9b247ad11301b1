#include "tests/support/private_cluster.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX kill, not <csignal>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"

namespace omniforge::testing {

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  close(fd);
  return port;
}

PrivateCluster::PrivateCluster(std::filesystem::path dir, std::vector<std::string> env)
    : dir_(std::move(dir)), env_(std::move(env)) {}

PrivateCluster::~PrivateCluster() { Stop(); }

std::optional<std::string> PrivateCluster::Stop() {
  if (!started_) return std::nullopt;
  started_ = false;
  const CommandResult stopped = Pg("stop");
  if (stopped.exit_code == 0) return std::nullopt;
  return "scripts/pg.sh stop: " + stopped.out + stopped.err;
}

std::optional<std::string> PrivateCluster::Start() {
  port_ = FreePort();
  if (port_ == 0) return "no free port for PostgreSQL";
  return Restart();
}

std::optional<std::string> PrivateCluster::Restart() {
  const CommandResult started = Pg("start");
  if (started.exit_code != 0) return "scripts/pg.sh start: " + started.out + started.err;
  started_ = true;
  start_output_ = started.out;
  return std::nullopt;
}

CommandResult PrivateCluster::Pg(const std::string& command) const {
  std::vector<std::string> env = {absl::StrCat("OMNIFORGE_PG_PORT=", port_),
                                  "OMNIFORGE_PG_DIR=" + (dir_ / "pg").string(),
                                  "OMNIFORGE_PG_THROWAWAY=1"};
  env.insert(env.end(), env_.begin(), env_.end());
  return RunCommand({"/bin/bash", OMNIFORGE_PG_SCRIPT, command}, "", env);
}

std::optional<std::string> PrivateCluster::Crash() const {
  std::ifstream pid_file(dir_ / "pg" / "data" / "postmaster.pid");
  pid_t pid = 0;
  if (!(pid_file >> pid)) return "no postmaster.pid";
  if (kill(pid, SIGQUIT) != 0) return std::string("kill: ") + std::strerror(errno);
  for (const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
       kill(pid, 0) == 0;) {
    if (std::chrono::steady_clock::now() > give_up) return "the postmaster did not exit";
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return std::nullopt;
}

std::string PrivateCluster::dsn() const {
  return absl::StrCat("host=127.0.0.1 port=", port_, " user=omniforge dbname=postgres");
}

}  // namespace omniforge::testing
