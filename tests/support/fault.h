// A fault the fault suite (tests/faults) and the soak (bench/soak_bench)
// inject: its name, what injects it (takes a process or the database down)
// and what restores it (nullopt once it is back, else why not).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "tests/support/server_process.h"

namespace omniforge::testing {

struct Fault {
  std::string name;
  std::function<void()> inject;
  std::function<std::optional<std::string>()> restore;
};

// kill -9 of a service binary ("kill -9 <service>"), restarted on its port.
inline Fault KillAndRestart(const std::string& service, ServerProcess& process) {
  return {"kill -9 " + service, [&process] { process.Kill(); },
          [&process] { return process.Restart(); }};
}

}  // namespace omniforge::testing
