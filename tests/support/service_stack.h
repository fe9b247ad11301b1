// The four omniforge services in local mode on free loopback ports, over one
// test database, with an API key file: what a client of the public chat API
// talks to. Stopped (orchestrator first) when destroyed; the orchestrator's
// append spool is a temporary directory removed then.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libs/core/identity.h"
#include "tests/support/server_process.h"
#include "tests/support/test_database.h"

namespace omniforge::testing {

struct ServiceBinaries {
  std::string conversation;
  std::string intent;
  std::string executor;
  std::string orchestrator;
};

class ServiceStack final {
 public:
  explicit ServiceStack(const ServiceBinaries& binaries)
      : conversation_(binaries.conversation),
        intent_(binaries.intent),
        executor_(binaries.executor),
        orchestrator_(binaries.orchestrator) {}
  ~ServiceStack();
  ServiceStack(const ServiceStack&) = delete;
  ServiceStack& operator=(const ServiceStack&) = delete;

  // More environment for each service (after the stack's own).
  struct ExtraEnv {
    std::vector<std::string> conversation, intent, executor, orchestrator;
  };

  // Starts the services on database `db` (each logged in as its own role)
  // with the orchestrator's keys from `api_keys_file`. Returns the first
  // service's error (with its log).
  std::optional<std::string> Start(const TestDatabase& db, const std::string& api_keys_file,
                                   const ExtraEnv& extra = {});

  ServerProcess& conversation() { return conversation_; }
  ServerProcess& intent() { return intent_; }
  ServerProcess& executor() { return executor_; }
  ServerProcess& orchestrator() { return orchestrator_; }
  // The orchestrator's environment as started, but for its spool directory
  // (a replica needs its own): what another replica of it starts with.
  std::vector<std::string> OrchestratorReplicaEnv() const;

 private:
  ServerProcess conversation_;
  ServerProcess intent_;
  ServerProcess executor_;
  ServerProcess orchestrator_;
  // The orchestrator's append spool, a directory of this stack's own.
  std::string spool_dir_;
  std::vector<std::string> orchestrator_env_;
};

// Writes the orchestrator's API key file at `path`, one new key per user
// (labelled `label`), and returns the keys in the users' order; fewer keys
// than users when one could not be made.
std::vector<std::string> WriteApiKeyFile(const std::filesystem::path& path,
                                         const std::vector<core::Identity>& users,
                                         std::string_view label);

}  // namespace omniforge::testing
