// A PostgreSQL cluster of one test's own, for tests that crash, stop or
// reconfigure the server (the fault suite, the TLS test): scripts/pg.sh on
// a free loopback port, in a directory of the test's, thrown away at the
// end. The shared test cluster (the ctest fixture) is never touched.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/command.h"

namespace omniforge::testing {

// A TCP port on 127.0.0.1 that nothing listened on a moment ago (0 when
// none could be had).
int FreePort();

class PrivateCluster final {
 public:
  // The cluster lives in `dir`/pg; `env` adds scripts/pg.sh settings
  // (NAME=value, e.g. OMNIFORGE_PG_TLS_CERT).
  explicit PrivateCluster(std::filesystem::path dir, std::vector<std::string> env = {});
  // Stops the cluster if it still runs.
  ~PrivateCluster();
  PrivateCluster(const PrivateCluster&) = delete;
  PrivateCluster& operator=(const PrivateCluster&) = delete;

  // Picks a free port and starts the cluster; what pg.sh said when it did
  // not start.
  std::optional<std::string> Start();
  // Starts the cluster again on its port, after Crash() (crash recovery)
  // or Stop(); what pg.sh said when it did not start.
  std::optional<std::string> Restart();
  // Stops the cluster; what pg.sh said when it did not stop.
  std::optional<std::string> Stop();
  // scripts/pg.sh `command` (start, stop, ...) for this cluster.
  CommandResult Pg(const std::string& command) const;
  // A crash: SIGQUIT to the postmaster (what `pg_ctl stop -m immediate`
  // sends: no checkpoint, crash recovery at the next start); returns once
  // it has exited, or the error.
  std::optional<std::string> Crash() const;

  int port() const { return port_; }
  // What scripts/pg.sh start printed (e.g. "TLS on").
  const std::string& start_output() const { return start_output_; }
  // host=127.0.0.1 port=<port> user=omniforge dbname=postgres
  std::string dsn() const;

 private:
  const std::filesystem::path dir_;
  const std::vector<std::string> env_;
  int port_ = 0;
  bool started_ = false;
  std::string start_output_;
};

}  // namespace omniforge::testing
