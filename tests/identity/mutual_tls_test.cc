// Mutual TLS between the services: with server.tls_client_ca_file a service
// serves only clients whose certificate the internal CA signed, and the
// orchestrator (client_tls.*) reaches the three services over it; the CLI
// verifies servers (--tls-ca) and presents a certificate (--tls-cert).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "libs/core/ids.h"
#include "tests/support/command.h"
#include "tests/support/identity_keys.h"
#include "tests/support/service_stack.h"
#include "tests/support/test_database.h"

namespace omniforge {
namespace {

namespace fs = std::filesystem;

// What each certificate is for (openssl x509 -extfile).
constexpr char kExtensions[] =
    "subjectAltName=DNS:localhost,IP:127.0.0.1\\n"
    "extendedKeyUsage=serverAuth,clientAuth\\n";

// Makes a CA (`ca`) and, signed by it, a certificate for `name` valid for
// localhost and 127.0.0.1 as server and client. Returns false on failure.
bool MakeCertificates(const fs::path& dir, const std::string& ca,
                      const std::vector<std::string>& names) {
  std::string script = absl::StrCat(
      "(set -e; cd ", dir.string(),
      "; openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=",
      ca, " -keyout ", ca, ".key -out ", ca, ".crt");
  for (const std::string& name : names) {
    absl::StrAppend(&script, "; printf '", kExtensions, "' > ", name,
                    ".ext; openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes",
                    " -subj /CN=", name, " -keyout ", name, ".key -out ", name, ".csr");
    absl::StrAppend(&script, "; openssl x509 -req -in ", name, ".csr -CA ", ca, ".crt -CAkey ", ca,
                    ".key -CAcreateserial -days 1 -out ", name, ".crt -extfile ", name, ".ext");
  }
  script += ") >/dev/null 2>&1";
  return std::system(script.c_str()) == 0;
}

class MutualTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("omniforge-mtls-" + core::NewUuid()));
    fs::create_directories(*dir_);
    ASSERT_TRUE(MakeCertificates(*dir_, "internal-ca", {"service", "orchestrator", "operator"}));
    ASSERT_TRUE(MakeCertificates(*dir_, "rogue-ca", {"rogue"}));
    db_ = new testing::TestDatabase();
    keys_ = new std::vector<std::string>(
        testing::WriteApiKeyFile(*dir_ / "api_keys", {{"mtls", "alice"}}, "mtls"));
    const std::vector<std::string> serve = {
        "OMNIFORGE_SERVER_TLS_CERT_FILE=" + File("service.crt"),
        "OMNIFORGE_SERVER_TLS_KEY_FILE=" + File("service.key"),
        "OMNIFORGE_SERVER_TLS_CLIENT_CA_FILE=" + File("internal-ca.crt")};
    const std::vector<std::string> call = {
        "OMNIFORGE_CLIENT_TLS_CA_FILE=" + File("internal-ca.crt"),
        "OMNIFORGE_CLIENT_TLS_CERT_FILE=" + File("orchestrator.crt"),
        "OMNIFORGE_CLIENT_TLS_KEY_FILE=" + File("orchestrator.key"),
        "OMNIFORGE_CLIENT_TLS_SERVER_NAME=localhost"};
    stack_ = new testing::ServiceStack({OMNIFORGE_CONVERSATION_BIN, OMNIFORGE_INTENT_BIN,
                                        OMNIFORGE_EXECUTOR_BIN, OMNIFORGE_ORCHESTRATOR_BIN});
    // The public side (the orchestrator's server) stays plaintext here.
    ASSERT_EQ(stack_->Start(*db_, File("api_keys"), {serve, serve, serve, call}), std::nullopt);
  }
  static void TearDownTestSuite() {
    delete stack_;
    delete keys_;
    delete db_;
    fs::remove_all(*dir_);
    delete dir_;
  }

  static std::string File(const std::string& name) { return (*dir_ / name).string(); }

  // `omniforge TLS... --server ADDRESS ARGS...` as alice, signed with the
  // key the stack trusts.
  static testing::CommandResult Cli(const std::string& address, const std::vector<std::string>& tls,
                                    const std::vector<std::string>& args) {
    std::vector<std::string> argv = {OMNIFORGE_CLI_BIN,
                                     "--server",
                                     address,
                                     "--timeout",
                                     "5",
                                     "--tenant",
                                     "mtls",
                                     "--user",
                                     "alice",
                                     "--identity-key",
                                     testing::TestIdentityKeys().signing_key,
                                     "--identity-key-id",
                                     testing::kTestIdentityKeyId};
    argv.insert(argv.end(), tls.begin(), tls.end());
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::RunCommand(argv);
  }

  static fs::path* dir_;
  static testing::TestDatabase* db_;
  static std::vector<std::string>* keys_;
  static testing::ServiceStack* stack_;
};

fs::path* MutualTlsTest::dir_ = nullptr;
testing::TestDatabase* MutualTlsTest::db_ = nullptr;
std::vector<std::string>* MutualTlsTest::keys_ = nullptr;
testing::ServiceStack* MutualTlsTest::stack_ = nullptr;

TEST_F(MutualTlsTest, AServiceServesOnlyClientsTheInternalCaSigned) {
  EXPECT_NE(stack_->conversation().JoinedLog().find(R"("tls":"mutual")"), std::string::npos);
  const std::string address = stack_->conversation().address();
  const std::vector<std::string> operator_tls = {
      "--tls-ca",  File("internal-ca.crt"), "--tls-cert",        File("operator.crt"),
      "--tls-key", File("operator.key"),    "--tls-server-name", "localhost"};
  // A peer: a real call, not only the handshake.
  const testing::CommandResult peer = Cli(
      address, operator_tls, {"--json", "conversations", "create", "--title", "over mutual TLS"});
  EXPECT_EQ(peer.exit_code, 0) << peer.out << peer.err;
  EXPECT_NE(peer.out.find("over mutual TLS"), std::string::npos) << peer.out;

  const std::vector<std::pair<std::string, std::vector<std::string>>> refused = {
      {"plaintext", {}},
      {"TLS without a client certificate",
       {"--tls-ca", File("internal-ca.crt"), "--tls-server-name", "localhost"}},
      {"a client certificate another CA signed",
       {"--tls-ca", File("internal-ca.crt"), "--tls-cert", File("rogue.crt"), "--tls-key",
        File("rogue.key"), "--tls-server-name", "localhost"}},
      {"a server verified against another CA",
       {"--tls-ca", File("rogue-ca.crt"), "--tls-cert", File("operator.crt"), "--tls-key",
        File("operator.key"), "--tls-server-name", "localhost"}},
  };
  for (const auto& [what, tls] : refused) {
    const testing::CommandResult result = Cli(address, tls, {"conversations", "list"});
    EXPECT_NE(result.exit_code, 0) << what << ": " << result.out;
    EXPECT_NE(result.err.find("UNAVAILABLE"), std::string::npos) << what << ": " << result.err;
  }
  // A certificate without its key is a usage error, before any call.
  const testing::CommandResult half =
      Cli(address, {"--tls-ca", File("internal-ca.crt"), "--tls-cert", File("operator.crt")},
          {"health"});
  EXPECT_EQ(half.exit_code, 2) << half.err;
}

TEST_F(MutualTlsTest, TheOrchestratorReachesEveryServiceOverMutualTls) {
  // A turn that analyses intent, lists agents through the executor and
  // stores both messages in the conversation service.
  const testing::CommandResult turn = testing::RunCommand(
      {OMNIFORGE_CLI_BIN, "--json", "chat", "--chat-server", stack_->orchestrator().address(),
       "--api-key", (*keys_)[0], "list my agents"});
  ASSERT_EQ(turn.exit_code, 0) << turn.out << turn.err;
  EXPECT_NE(turn.out.find("\"done\""), std::string::npos) << turn.out;
  EXPECT_EQ(turn.out.find("\"error\""), std::string::npos) << turn.out;
  const std::smatch id = [&] {
    std::smatch m;
    std::regex_search(turn.out, m, std::regex(R"re("conversation_id":\s*"([0-9a-f-]{36})")re"));
    return m;
  }();
  ASSERT_EQ(id.size(), 2U) << turn.out;
  const testing::CommandResult stored =
      Cli(stack_->conversation().address(),
          {"--tls-ca", File("internal-ca.crt"), "--tls-cert", File("operator.crt"), "--tls-key",
           File("operator.key"), "--tls-server-name", "localhost"},
          {"--json", "conversations", "show", id[1].str()});
  ASSERT_EQ(stored.exit_code, 0) << stored.err;
  EXPECT_NE(stored.out.find("list my agents"), std::string::npos) << stored.out;

  // An orchestrator without the client certificate reaches none of them.
  testing::ServerProcess plain(OMNIFORGE_ORCHESTRATOR_BIN);
  ASSERT_EQ(plain.Start({"OMNIFORGE_AUTH_API_KEYS_FILE=" + File("api_keys"),
                         "OMNIFORGE_SPOOL_DIR=" + File("plain-spool"),
                         "OMNIFORGE_DOWNSTREAM_CONVERSATION=" + stack_->conversation().address(),
                         "OMNIFORGE_DOWNSTREAM_INTENT=" + stack_->intent().address(),
                         "OMNIFORGE_DOWNSTREAM_EXECUTOR=" + stack_->executor().address(),
                         testing::SignWithTestKeyEnv(), testing::SignWithTestKeyIdEnv()}),
            std::nullopt);
  const testing::CommandResult cut =
      testing::RunCommand({OMNIFORGE_CLI_BIN, "--json", "chat", "--chat-server", plain.address(),
                           "--api-key", (*keys_)[0], "list my agents"});
  EXPECT_NE(cut.exit_code, 0) << cut.out;
  EXPECT_NE(cut.out.find("CHAT_ERROR_CODE_STORAGE_UNAVAILABLE"), std::string::npos) << cut.out;
  EXPECT_NE(cut.out.find("the intent service could not be reached"), std::string::npos) << cut.out;
}

}  // namespace
}  // namespace omniforge
