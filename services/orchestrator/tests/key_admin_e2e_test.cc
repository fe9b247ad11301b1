// API keys managed at runtime, over the real stack: two orchestrator
// replicas sharing one database, each serving KeyAdminService on its admin
// port. Keys made through one replica's admin API work on both, and stop
// working on both within a second of being revoked or rotated away; the
// admin API refuses callers without a known admin key and keeps a
// tenant's admin to its tenant; gateway keys name the user of each call.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "libs/core/api_keys.h"
#include "libs/core/ids.h"
#include "omniforge/orchestrator/v1/chat_service.grpc.pb.h"
#include "omniforge/orchestrator/v1/key_admin_service.grpc.pb.h"
#include "tests/support/command.h"
#include "tests/support/server_process.h"
#include "tests/support/service_stack.h"
#include "tests/support/test_database.h"

namespace omniforge::orchestrator {
namespace {

namespace pb = ::omniforge::orchestrator::v1;
using Clock = std::chrono::steady_clock;

// How soon every replica must refuse a revoked key.
constexpr auto kPropagation = std::chrono::seconds(1);

std::unique_ptr<grpc::ClientContext> WithKey(const std::string& key,
                                             const std::string& on_behalf_of = "") {
  auto context = std::make_unique<grpc::ClientContext>();
  if (!key.empty()) context->AddMetadata("authorization", "Bearer " + key);
  if (!on_behalf_of.empty()) context->AddMetadata(core::kOnBehalfOfHeader, on_behalf_of);
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  return context;
}

// The admin port a replica logged.
int AdminPort(const testing::ServerProcess& process) {
  for (int i = 0; i < 100; ++i) {
    for (const std::string& line : process.LogLines()) {
      if (testing::LogField(line, "msg") == "key admin API started") {
        return std::stoi(testing::LogField(line, "admin_port"));
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return -1;
}

struct Replica {
  std::unique_ptr<pb::ChatService::Stub> chat;
  std::unique_ptr<pb::KeyAdminService::Stub> admin;
};

Replica Connect(const testing::ServerProcess& process) {
  Replica r;
  r.chat = pb::ChatService::NewStub(
      grpc::CreateChannel(process.address(), grpc::InsecureChannelCredentials()));
  r.admin = pb::KeyAdminService::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(AdminPort(process)), grpc::InsecureChannelCredentials()));
  return r;
}

class KeyAdminEndToEndTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    db_ = new testing::TestDatabase();
    dir_ = new std::filesystem::path(std::filesystem::temp_directory_path() /
                                     ("omniforge-keys-" + core::NewUuid()));
    std::filesystem::create_directories(*dir_);
    file_key_ = new std::string(
        testing::WriteApiKeyFile(*dir_ / "api_keys", {{"acme", "file-user"}}, "file").at(0));
    std::ofstream admin_file(*dir_ / "admin_keys");
    auto admin_key = [&](const core::Identity& who) {
      absl::StatusOr<core::NewApiKey> key = core::GenerateApiKey(who, "test", std::nullopt, true);
      admin_file << key->file_line << "\n";
      return new std::string(key->key);
    };
    root_key_ = admin_key({core::kAllTenants, "root"});
    acme_admin_key_ = admin_key({"acme", "acme-admin"});
    admin_file.close();

    // The periodic full reading is far off: only the notifications can make
    // a change reach the other replica within a second.
    std::vector<std::string> env =
        testing::DatabaseEnv(*db_, "orchestrator",
                             {"OMNIFORGE_ADMIN_PORT=0",
                              "OMNIFORGE_AUTH_ADMIN_KEYS_FILE=" + (*dir_ / "admin_keys").string(),
                              "OMNIFORGE_AUTH_RELOAD_INTERVAL_MS=600000"});
    stack_ = new testing::ServiceStack({OMNIFORGE_CONVERSATION_BIN, OMNIFORGE_INTENT_BIN,
                                        OMNIFORGE_EXECUTOR_BIN, OMNIFORGE_ORCHESTRATOR_BIN});
    ASSERT_EQ(stack_->Start(*db_, (*dir_ / "api_keys").string(), {.orchestrator = env}),
              std::nullopt);
    second_ = new testing::ServerProcess(OMNIFORGE_ORCHESTRATOR_BIN);
    std::vector<std::string> second_env = stack_->OrchestratorReplicaEnv();
    second_env.push_back("OMNIFORGE_SPOOL_DIR=" + (*dir_ / "spool-2").string());
    ASSERT_EQ(second_->Start(second_env), std::nullopt);
    replicas_ = new std::vector<Replica>();
    replicas_->push_back(Connect(stack_->orchestrator()));
    replicas_->push_back(Connect(*second_));
  }

  static void TearDownTestSuite() {
    delete replicas_;
    delete second_;
    delete stack_;
    std::error_code ignored;
    std::filesystem::remove_all(*dir_, ignored);
    delete dir_;
    delete db_;
  }

  static pb::KeyAdminService::Stub& Admin(size_t replica = 0) {
    return *(*replicas_)[replica].admin;
  }

  // A turn on `replica` with `key`: its status once the stream ends.
  static grpc::Status Chat(size_t replica, const std::string& key,
                           const std::string& on_behalf_of = "") {
    auto context = WithKey(key, on_behalf_of);
    pb::StreamChatRequest request;
    request.set_message("hello");
    auto reader = (*replicas_)[replica].chat->StreamChat(context.get(), request);
    pb::ChatEvent event;
    while (reader->Read(&event)) {
    }
    return reader->Finish();
  }

  // The conversations `key` (for `on_behalf_of`) sees on `replica`.
  static std::vector<std::string> Conversations(size_t replica, const std::string& key,
                                                const std::string& on_behalf_of = "") {
    auto context = WithKey(key, on_behalf_of);
    pb::ListConversationsResponse response;
    grpc::Status status = (*replicas_)[replica].chat->ListConversations(
        context.get(), pb::ListConversationsRequest(), &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    std::vector<std::string> ids;
    for (const auto& c : response.conversations()) ids.push_back(c.id());
    return ids;
  }

  static pb::CreateKeyResponse Create(const std::string& tenant, const std::string& user,
                                      pb::KeyKind kind = pb::KEY_KIND_USER) {
    pb::CreateKeyRequest request;
    request.set_tenant_id(tenant);
    request.set_user_id(user);
    request.set_kind(kind);
    request.set_label("made by the test");
    pb::CreateKeyResponse response;
    grpc::Status status = Admin().CreateKey(WithKey(*root_key_).get(), request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response;
  }

  // Whether a turn with `key` succeeds on `replica` within `within`: a key
  // made on one replica reaches the other through PostgreSQL's notification.
  static grpc::Status ChatsWithin(size_t replica, const std::string& key, Clock::duration within,
                                  const std::string& on_behalf_of = "") {
    const Clock::time_point deadline = Clock::now() + within;
    grpc::Status status;
    while (!(status = Chat(replica, key, on_behalf_of)).ok() && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return status;
  }

  // Whether both replicas refuse `key` with UNAUTHENTICATED within `within`.
  static bool RefusedEverywhereWithin(const std::string& key, Clock::duration within) {
    const Clock::time_point deadline = Clock::now() + within;
    for (auto& replica : *replicas_) {
      for (;;) {
        auto context = WithKey(key);
        pb::ListConversationsResponse response;
        grpc::Status status = replica.chat->ListConversations(
            context.get(), pb::ListConversationsRequest(), &response);
        if (status.error_code() == grpc::StatusCode::UNAUTHENTICATED) break;
        if (Clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    return true;
  }

  static inline testing::TestDatabase* db_ = nullptr;
  static inline std::filesystem::path* dir_ = nullptr;
  static inline std::string* file_key_ = nullptr;
  static inline std::string* root_key_ = nullptr;
  static inline std::string* acme_admin_key_ = nullptr;
  static inline testing::ServiceStack* stack_ = nullptr;
  static inline testing::ServerProcess* second_ = nullptr;
  static inline std::vector<Replica>* replicas_ = nullptr;
};

TEST_F(KeyAdminEndToEndTest, AKeyMadeAtRuntimeChatsOnBothReplicasUntilRevokedThenNowhere) {
  const pb::CreateKeyResponse made = Create("acme", "alice");
  ASSERT_TRUE(made.key().starts_with("ofk_" + made.api_key().key_id() + "_")) << made.key();
  EXPECT_EQ(made.api_key().user_id(), "alice");
  EXPECT_TRUE(made.api_key().has_create_time());
  // The replica that made it knows it as soon as the call returns; the
  // other learns of it through PostgreSQL's notification.
  const grpc::Status here = Chat(0, made.key());
  EXPECT_TRUE(here.ok()) << here.error_message();
  const grpc::Status there = ChatsWithin(1, made.key(), kPropagation);
  EXPECT_TRUE(there.ok()) << there.error_message();

  pb::ListKeysRequest list;
  list.set_tenant_id("acme");
  pb::ListKeysResponse listed;
  ASSERT_TRUE(Admin(1).ListKeys(WithKey(*root_key_).get(), list, &listed).ok());
  bool found = false;
  for (const pb::ApiKey& key : listed.api_keys()) {
    found = found || key.key_id() == made.api_key().key_id();
    EXPECT_EQ(listed.DebugString().find(made.key()), std::string::npos) << "no secret in a list";
  }
  EXPECT_TRUE(found);

  pb::RevokeKeyRequest revoke;
  revoke.set_tenant_id("acme");
  revoke.set_key_id(made.api_key().key_id());
  pb::RevokeKeyResponse revoked;
  ASSERT_TRUE(Admin().RevokeKey(WithKey(*root_key_).get(), revoke, &revoked).ok());
  EXPECT_TRUE(revoked.api_key().has_revoke_time());
  EXPECT_EQ(Chat(0, made.key()).error_code(), grpc::StatusCode::UNAUTHENTICATED)
      << "refused at once by the replica that revoked it";
  EXPECT_TRUE(RefusedEverywhereWithin(made.key(), kPropagation));
  EXPECT_EQ(Chat(1, made.key()).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  // The key file's keys work as before.
  EXPECT_TRUE(Chat(1, *file_key_).ok());
}

TEST_F(KeyAdminEndToEndTest, ARotatedKeysOldSecretWorksThroughItsGracePeriodOnly) {
  const pb::CreateKeyResponse made = Create("acme", "rotating");
  pb::RotateKeyRequest rotate;
  rotate.set_tenant_id("acme");
  rotate.set_key_id(made.api_key().key_id());
  rotate.mutable_grace_period()->set_seconds(2);
  pb::RotateKeyResponse rotated;
  ASSERT_TRUE(Admin().RotateKey(WithKey(*root_key_).get(), rotate, &rotated).ok());
  EXPECT_NE(rotated.key(), made.key());
  EXPECT_TRUE(rotated.key().starts_with("ofk_" + made.api_key().key_id() + "_"));
  EXPECT_TRUE(rotated.api_key().has_previous_secret_expire_time());
  EXPECT_TRUE(ChatsWithin(1, rotated.key(), kPropagation).ok());
  EXPECT_TRUE(Chat(1, made.key()).ok()) << "the old secret works through the grace period";
  EXPECT_TRUE(RefusedEverywhereWithin(made.key(), std::chrono::seconds(3)));
  EXPECT_TRUE(Chat(0, rotated.key()).ok());

  // Without a grace period the old secret stops at once.
  rotate.clear_grace_period();
  pb::RotateKeyResponse again;
  ASSERT_TRUE(Admin().RotateKey(WithKey(*root_key_).get(), rotate, &again).ok());
  EXPECT_TRUE(RefusedEverywhereWithin(rotated.key(), kPropagation));
  EXPECT_TRUE(Chat(1, again.key()).ok());
}

TEST_F(KeyAdminEndToEndTest, AKeyStopsAtItsExpiryAndAnExpiryInThePastIsRefused) {
  pb::CreateKeyRequest request;
  request.set_tenant_id("acme");
  request.set_user_id("expiring");
  request.mutable_expire_time()->set_seconds(
      std::chrono::duration_cast<std::chrono::seconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count() -
      60);
  pb::CreateKeyResponse response;
  grpc::Status status = Admin().CreateKey(WithKey(*root_key_).get(), request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("expire_time"), std::string::npos);

  request.mutable_expire_time()->set_seconds(request.expire_time().seconds() + 64);
  ASSERT_TRUE(Admin().CreateKey(WithKey(*root_key_).get(), request, &response).ok());
  EXPECT_TRUE(ChatsWithin(1, response.key(), kPropagation).ok());
  std::this_thread::sleep_for(std::chrono::seconds(4));
  const grpc::Status expired = Chat(1, response.key());
  EXPECT_EQ(expired.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(expired.error_message().find("expired"), std::string::npos) << expired.error_message();
}

TEST_F(KeyAdminEndToEndTest, TheAdminApiNeedsAnAdminKeyAndATenantsAdminStaysInItsTenant) {
  pb::ListKeysRequest list;
  list.set_tenant_id("acme");
  pb::ListKeysResponse listed;
  EXPECT_EQ(Admin().ListKeys(WithKey("").get(), list, &listed).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  std::string wrong = *root_key_;
  wrong.back() = wrong.back() == '0' ? '1' : '0';
  EXPECT_EQ(Admin().ListKeys(WithKey(wrong).get(), list, &listed).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Admin().ListKeys(WithKey(*file_key_).get(), list, &listed).error_code(),
            grpc::StatusCode::UNAUTHENTICATED)
      << "an API key is no admin key";

  EXPECT_TRUE(Admin().ListKeys(WithKey(*acme_admin_key_).get(), list, &listed).ok());
  const pb::CreateKeyResponse globex = Create("globex", "gina");
  list.set_tenant_id("globex");
  EXPECT_EQ(Admin().ListKeys(WithKey(*acme_admin_key_).get(), list, &listed).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  pb::RevokeKeyRequest revoke;
  revoke.set_tenant_id("globex");
  revoke.set_key_id(globex.api_key().key_id());
  pb::RevokeKeyResponse revoked;
  EXPECT_EQ(Admin().RevokeKey(WithKey(*acme_admin_key_).get(), revoke, &revoked).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  // Naming its own tenant does not reach another tenant's key either.
  revoke.set_tenant_id("acme");
  EXPECT_EQ(Admin().RevokeKey(WithKey(*acme_admin_key_).get(), revoke, &revoked).error_code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_TRUE(ChatsWithin(1, globex.key(), kPropagation).ok()) << "the key still works";
}

TEST_F(KeyAdminEndToEndTest, AGatewayKeyActsForTheUserItNamesAndAUserKeyMayNotName) {
  const pb::CreateKeyResponse gateway = Create("acme", "", pb::KEY_KIND_GATEWAY);
  EXPECT_EQ(gateway.api_key().kind(), pb::KEY_KIND_GATEWAY);
  ASSERT_TRUE(ChatsWithin(1, gateway.key(), kPropagation, "bob").ok());
  EXPECT_EQ(Conversations(0, gateway.key(), "bob").size(), 1u);
  EXPECT_TRUE(Conversations(0, gateway.key(), "carol").empty()) << "bob's conversation is his";

  const grpc::Status unnamed = Chat(1, gateway.key());
  EXPECT_EQ(unnamed.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(unnamed.error_message().find(core::kOnBehalfOfHeader), std::string::npos);
  EXPECT_EQ(Chat(1, gateway.key(), "bob smith").error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  const pb::CreateKeyResponse user = Create("acme", "dave");
  std::this_thread::sleep_for(kPropagation);
  EXPECT_EQ(Chat(1, user.key(), "bob").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Chat(1, *file_key_, "bob").error_code(), grpc::StatusCode::PERMISSION_DENIED);
}

TEST_F(KeyAdminEndToEndTest, BadRequestsAreRefusedAndChangeNothing) {
  pb::ListKeysRequest list;
  list.set_tenant_id("initech");
  list.set_include_revoked(true);
  pb::ListKeysResponse before;
  ASSERT_TRUE(Admin().ListKeys(WithKey(*root_key_).get(), list, &before).ok());

  pb::CreateKeyRequest create;
  create.set_tenant_id("initech");
  create.set_user_id("ivan");
  create.set_label("two\nlines");
  pb::CreateKeyResponse made;
  EXPECT_EQ(Admin().CreateKey(WithKey(*root_key_).get(), create, &made).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  create.set_label(std::string(201, 'x'));
  EXPECT_EQ(Admin().CreateKey(WithKey(*root_key_).get(), create, &made).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  create.set_label("");
  create.set_kind(pb::KEY_KIND_GATEWAY);
  EXPECT_EQ(Admin().CreateKey(WithKey(*root_key_).get(), create, &made).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT)
      << "a gateway key names no user";

  pb::RevokeKeyRequest revoke;
  revoke.set_tenant_id("initech");
  revoke.set_key_id("0123456789ab");
  pb::RevokeKeyResponse revoked;
  EXPECT_EQ(Admin().RevokeKey(WithKey(*root_key_).get(), revoke, &revoked).error_code(),
            grpc::StatusCode::NOT_FOUND);
  revoke.set_key_id("not-a-key-id");
  EXPECT_EQ(Admin().RevokeKey(WithKey(*root_key_).get(), revoke, &revoked).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  pb::ListKeysResponse after;
  ASSERT_TRUE(Admin().ListKeys(WithKey(*root_key_).get(), list, &after).ok());
  EXPECT_EQ(after.api_keys_size(), before.api_keys_size());

  // A key of the key file is managed there.
  revoke.set_tenant_id("acme");
  revoke.set_key_id(std::string(core::ApiKeyIdOf(*file_key_)));
  const grpc::Status file_key = Admin().RevokeKey(WithKey(*root_key_).get(), revoke, &revoked);
  EXPECT_EQ(file_key.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(file_key.error_message().find("auth.api_keys_file"), std::string::npos);
  EXPECT_TRUE(Chat(1, *file_key_).ok());
}

// `omniforge keys ...` as an operator runs it against replica A's admin
// port: a key it creates chats on both replicas, is listed without its
// secret, rotates to a new secret and is revoked everywhere; without an
// admin key or with a wrong one it changes nothing.
TEST_F(KeyAdminEndToEndTest, TheCliCreatesListsRotatesAndRevokesKeys) {
  const std::string admin = "127.0.0.1:" + std::to_string(AdminPort(stack_->orchestrator()));
  auto keys = [&](std::vector<std::string> args, const std::string& admin_key) {
    std::vector<std::string> argv = {OMNIFORGE_CLI_BIN, "--json", "keys", "--admin-server", admin};
    if (!admin_key.empty()) argv.insert(argv.end(), {"--admin-key", admin_key});
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::RunCommand(argv);
  };
  const testing::CommandResult created = keys(
      {"create", "--tenant", "acme", "--user", "carol", "--label", "from the cli"}, *root_key_);
  ASSERT_EQ(created.exit_code, 0) << created.err;
  const nlohmann::json made = nlohmann::json::parse(created.out);
  const std::string secret = made.at("key");
  const std::string key_id = made.at("apiKey").at("keyId");
  EXPECT_EQ(made["apiKey"].value("userId", ""), "carol");
  EXPECT_TRUE(Chat(0, secret).ok());
  EXPECT_TRUE(ChatsWithin(1, secret, kPropagation).ok()) << "the other replica learns of it";

  const testing::CommandResult listed = keys({"list", "--tenant", "acme"}, *acme_admin_key_);
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find(key_id), std::string::npos);
  EXPECT_EQ(listed.out.find(secret), std::string::npos) << "a list never shows a secret";

  const testing::CommandResult rotated = keys({"rotate", key_id, "--tenant", "acme"}, *root_key_);
  ASSERT_EQ(rotated.exit_code, 0) << rotated.err;
  const std::string new_secret = nlohmann::json::parse(rotated.out).at("key");
  EXPECT_NE(new_secret, secret);
  EXPECT_TRUE(RefusedEverywhereWithin(secret, kPropagation)) << "no grace period was given";
  EXPECT_TRUE(Chat(1, new_secret).ok());

  // Without an admin key: refused before any call; with a wrong one: the
  // server's refusal, and the key still works.
  const testing::CommandResult no_admin = keys({"revoke", key_id, "--tenant", "acme"}, "");
  EXPECT_EQ(no_admin.exit_code, 2) << no_admin.err;
  const testing::CommandResult wrong_admin =
      keys({"revoke", key_id, "--tenant", "acme"}, "ofk_000000000000_notanadminkey");
  EXPECT_EQ(wrong_admin.exit_code, 1);
  EXPECT_NE(wrong_admin.err.find("UNAUTHENTICATED"), std::string::npos) << wrong_admin.err;
  EXPECT_TRUE(Chat(0, new_secret).ok());

  const testing::CommandResult revoked = keys({"revoke", key_id, "--tenant", "acme"}, *root_key_);
  ASSERT_EQ(revoked.exit_code, 0) << revoked.err;
  EXPECT_TRUE(RefusedEverywhereWithin(new_secret, kPropagation));
}

}  // namespace
}  // namespace omniforge::orchestrator
