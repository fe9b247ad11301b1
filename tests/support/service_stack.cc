#include "tests/support/service_stack.h"

#include <filesystem>
#include <fstream>

#include "libs/core/api_keys.h"
#include "libs/core/ids.h"
#include "tests/support/identity_keys.h"
#include "tests/support/master_keys.h"

namespace omniforge::testing {
namespace {

// The encryption master key of test stacks (64 hex digits; test data only).
constexpr char kTestMasterKey[] =
    "4f6d6e69666f7267652d746573742d6d61737465722d6b65792d303030303030";

}  // namespace

std::optional<std::string> ServiceStack::Start(const TestDatabase& db,
                                               const std::string& api_keys_file,
                                               const ExtraEnv& extra) {
  auto with = [](std::vector<std::string> env, const std::vector<std::string>& more) {
    env.insert(env.end(), more.begin(), more.end());
    return env;
  };
  // The services believe only signed caller assertions, the orchestrator's
  // and the executor's, and so does this process's own calls' (the tests
  // call the services directly too).
  SignCallsWithTestKey();
  std::vector<std::string> conversation_env = DatabaseEnv(
      db, "conversation",
      {std::string("OMNIFORGE_ENCRYPTION_MASTER_KEY=") + kTestMasterKey, TrustTestKeyEnv()});
  if (auto error = conversation_.Start(with(conversation_env, extra.conversation))) return error;
  if (auto error = intent_.Start(with({TrustTestKeyEnv()}, extra.intent))) return error;
  std::vector<std::string> executor_env = DatabaseEnv(
      db, "executor",
      {ExecutorMasterKeyEnv(), TrustTestKeyEnv(), SignWithTestKeyEnv(), SignWithTestKeyIdEnv()});
  if (auto error = executor_.Start(with(executor_env, extra.executor))) return error;
  spool_dir_ =
      (std::filesystem::temp_directory_path() / ("omniforge-spool-" + core::NewUuid())).string();
  orchestrator_env_ = with({"OMNIFORGE_AUTH_API_KEYS_FILE=" + api_keys_file,
                            "OMNIFORGE_DOWNSTREAM_CONVERSATION=" + conversation_.address(),
                            "OMNIFORGE_DOWNSTREAM_INTENT=" + intent_.address(),
                            "OMNIFORGE_DOWNSTREAM_EXECUTOR=" + executor_.address(),
                            std::string("OMNIFORGE_ENCRYPTION_MASTER_KEY=") + kTestMasterKey,
                            SignWithTestKeyEnv(), SignWithTestKeyIdEnv()},
                           extra.orchestrator);
  return orchestrator_.Start(with({"OMNIFORGE_SPOOL_DIR=" + spool_dir_}, orchestrator_env_));
}

std::vector<std::string> ServiceStack::OrchestratorReplicaEnv() const { return orchestrator_env_; }

ServiceStack::~ServiceStack() {
  // Callers first, so no call in flight meets a stopped downstream.
  for (ServerProcess* process : {&orchestrator_, &executor_, &intent_, &conversation_}) {
    process->Stop();
  }
  if (!spool_dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(spool_dir_, ignored);
  }
}

std::vector<std::string> WriteApiKeyFile(const std::filesystem::path& path,
                                         const std::vector<core::Identity>& users,
                                         std::string_view label) {
  std::vector<std::string> keys;
  std::ofstream file(path);
  for (const core::Identity& who : users) {
    absl::StatusOr<core::NewApiKey> key = core::GenerateApiKey(who, label);
    if (!key.ok()) break;
    file << key->file_line << "\n";
    keys.push_back(key->key);
  }
  return keys;
}

}  // namespace omniforge::testing
