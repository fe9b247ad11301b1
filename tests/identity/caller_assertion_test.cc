// Every internal service, given trusted keys, believes only a signed caller
// assertion for itself: identity metadata alone, an assertion for another
// service, one signed by a key it does not trust, an expired or altered
// one, or metadata naming someone other than the assertion is
// UNAUTHENTICATED. (The real binaries, each with the test stacks' trusted
// key, probed with a read each: the refusal comes before any handler.)
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "libs/core/assertion.h"
#include "libs/core/clock.h"
#include "libs/core/grpc_identity.h"
#include "omniforge/conversation/v1/conversation_service.grpc.pb.h"
#include "omniforge/executor/v1/executor_service.grpc.pb.h"
#include "omniforge/intent/v1/intent_service.grpc.pb.h"
#include "tests/support/identity_keys.h"
#include "tests/support/master_keys.h"
#include "tests/support/server_process.h"
#include "tests/support/test_database.h"

namespace omniforge {
namespace {

// Test data only (as tests/support/service_stack.cc).
constexpr char kMasterKey[] = "4f6d6e69666f7267652d746573742d6d61737465722d6b65792d303030303030";
constexpr char kUntrustedSeed[] =
    "9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a";

struct Service {
  std::string audience;
  std::string binary;
};

class CallerAssertionTest : public ::testing::TestWithParam<Service> {
 protected:
  static void SetUpTestSuite() { database_ = new testing::TestDatabase(); }
  static void TearDownTestSuite() {
    delete database_;
    database_ = nullptr;
  }

  // What the service under test is started with: its database, master key
  // and the test's keys.
  std::vector<std::string> Env() const {
    std::vector<std::string> env = {testing::TrustTestKeyEnv()};
    if (GetParam().audience != core::kIntentAudience) {                  // it has no database
      env = testing::DatabaseEnv(*database_, GetParam().audience, env);  // named as the service
    }
    if (GetParam().audience == core::kConversationAudience) {
      env.push_back(std::string("OMNIFORGE_ENCRYPTION_MASTER_KEY=") + kMasterKey);
    }
    if (GetParam().audience == core::kExecutorAudience) {  // it also signs its own calls
      env.insert(env.end(), {testing::ExecutorMasterKeyEnv(), testing::SignWithTestKeyEnv(),
                             testing::SignWithTestKeyIdEnv()});
    }
    return env;
  }

  void SetUp() override {
    server_ = std::make_unique<testing::ServerProcess>(GetParam().binary);
    auto error = server_->Start(Env());
    ASSERT_FALSE(error.has_value()) << *error;
    channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
  }

  // One cheap call of the service under test, with exactly `metadata`.
  grpc::Status Probe(const std::vector<std::pair<std::string, std::string>>& metadata) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    for (const auto& [key, value] : metadata) context.AddMetadata(key, value);
    const std::string& audience = GetParam().audience;
    if (audience == core::kConversationAudience) {
      conversation::v1::ListConversationsRequest request;
      conversation::v1::ListConversationsResponse response;
      return conversation::v1::ConversationService::NewStub(channel_)->ListConversations(
          &context, request, &response);
    }
    if (audience == core::kIntentAudience) {
      intent::v1::AnalyzeIntentRequest request;
      request.set_message("list my agents");
      intent::v1::AnalyzeIntentResponse response;
      return intent::v1::IntentService::NewStub(channel_)->AnalyzeIntent(&context, request,
                                                                         &response);
    }
    executor::v1::ListToolsRequest request;
    executor::v1::ListToolsResponse response;
    return executor::v1::ExecutorService::NewStub(channel_)->ListTools(&context, request,
                                                                       &response);
  }

  static std::vector<std::pair<std::string, std::string>> Told(const core::Identity& who) {
    return {{core::kTenantMetadataKey, who.tenant_id}, {core::kUserMetadataKey, who.user_id}};
  }
  static std::vector<std::pair<std::string, std::string>> Asserted(const core::Identity& who,
                                                                   const std::string& token) {
    auto metadata = Told(who);
    metadata.emplace_back(core::kAssertionMetadataKey, token);
    return metadata;
  }

  core::AssertionSigner TrustedSigner() const {
    return core::AssertionSigner("orchestrator", testing::kTestIdentityKeyId,
                                 *core::ReadSigningKeyFile(testing::TestIdentityKeys().signing_key),
                                 core::SystemClock());
  }

  static testing::TestDatabase* database_;
  std::unique_ptr<testing::ServerProcess> server_;
  std::shared_ptr<grpc::Channel> channel_;
  const core::Identity alice_{"acme", "alice"};
};

testing::TestDatabase* CallerAssertionTest::database_ = nullptr;

TEST_P(CallerAssertionTest, AnAssertionSignedByATrustedKeyForThisServiceIsBelieved) {
  core::AssertionSigner signer = TrustedSigner();
  const grpc::Status status = Probe(Asserted(alice_, signer.Assert(alice_, GetParam().audience)));
  EXPECT_TRUE(status.ok()) << status.error_message();
  // The assertion alone suffices: the metadata is a copy.
  EXPECT_TRUE(
      Probe({{core::kAssertionMetadataKey, signer.Assert(alice_, GetParam().audience)}}).ok());
}

TEST_P(CallerAssertionTest, IdentityMetadataAloneIsRefused) {
  const grpc::Status status = Probe(Told(alice_));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << status.error_message();
  EXPECT_NE(status.error_message().find("caller assertion missing"), std::string::npos)
      << status.error_message();
}

TEST_P(CallerAssertionTest, AnAssertionForAnotherServiceIsRefused) {
  core::AssertionSigner signer = TrustedSigner();
  const std::string other =
      GetParam().audience == core::kExecutorAudience ? "conversation" : "executor";
  const grpc::Status status = Probe(Asserted(alice_, signer.Assert(alice_, other)));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << status.error_message();
}

TEST_P(CallerAssertionTest, AnUntrustedKeyIsRefusedEvenUnderTheTrustedKeysId) {
  core::AssertionSigner forger("orchestrator", testing::kTestIdentityKeyId,
                               *core::ParseSigningKey(kUntrustedSeed), core::SystemClock());
  const grpc::Status status = Probe(Asserted(alice_, forger.Assert(alice_, GetParam().audience)));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << status.error_message();
}

TEST_P(CallerAssertionTest, MetadataNamingSomeoneElseThanTheAssertionIsRefused) {
  core::AssertionSigner signer = TrustedSigner();
  const std::string token = signer.Assert(alice_, GetParam().audience);
  for (const core::Identity& other :
       {core::Identity{"globex", "alice"}, core::Identity{"acme", "mallory"}}) {
    const grpc::Status status = Probe(Asserted(other, token));
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED)
        << other.tenant_id << "/" << other.user_id << ": " << status.error_message();
  }
}

// A signer whose clock is ten minutes behind: its assertions have expired
// by the service's clock.
class TenMinutesAgo final : public core::Clock {
 public:
  core::TimePoint Now() const override {
    return core::SystemClock().Now() - std::chrono::minutes(10);
  }
};

TEST_P(CallerAssertionTest, AnExpiredAssertionIsRefused) {
  const TenMinutesAgo past;
  core::AssertionSigner signer("orchestrator", testing::kTestIdentityKeyId,
                               *core::ReadSigningKeyFile(testing::TestIdentityKeys().signing_key),
                               past);
  const grpc::Status status = Probe(Asserted(alice_, signer.Assert(alice_, GetParam().audience)));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << status.error_message();
  EXPECT_NE(status.error_message().find("expired"), std::string::npos) << status.error_message();
}

TEST_P(CallerAssertionTest, AnAlteredAssertionIsRefused) {
  core::AssertionSigner signer = TrustedSigner();
  std::string token = signer.Assert(alice_, GetParam().audience);
  token[token.size() / 2] = token[token.size() / 2] == 'x' ? 'y' : 'x';
  const grpc::Status status = Probe(Asserted(alice_, token));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << status.error_message();
}

// Without trusted keys a service would believe any identity it is told: it
// does not start, unless a test set-up says so explicitly.
TEST_P(CallerAssertionTest, WithoutTrustedKeysTheServiceRefusesToStart) {
  std::vector<std::string> env = Env();
  std::erase(env, testing::TrustTestKeyEnv());
  testing::ServerProcess unkeyed(GetParam().binary);
  const std::optional<std::string> error = unkeyed.Start(env);
  ASSERT_TRUE(error.has_value()) << "started without trusted keys";
  EXPECT_NE(error->find("identity.trusted_keys is empty"), std::string::npos) << *error;
  ASSERT_TRUE(unkeyed.WaitForExit(std::chrono::seconds(10)).has_value());

  // Explicitly unverified (a test set-up): it runs and believes the metadata.
  env.emplace_back("OMNIFORGE_IDENTITY_ALLOW_UNVERIFIED=true");
  testing::ServerProcess unverified(GetParam().binary);
  const std::optional<std::string> started = unverified.Start(env);
  ASSERT_FALSE(started.has_value()) << *started;
  EXPECT_NE(unverified.JoinedLog().find("identity.allow_unverified is set"), std::string::npos);
}

// The executor also signs its calls to the conversation service: without a
// signing key they would all be refused, so it does not start either.
TEST(CallerAssertionSigning, AnExecutorWithoutItsSigningKeyRefusesToStart) {
  testing::TestDatabase database;
  testing::ServerProcess executor(OMNIFORGE_EXECUTOR_BIN);
  const std::optional<std::string> error = executor.Start(
      testing::DatabaseEnv(database, core::kExecutorAudience,
                           {testing::TrustTestKeyEnv(), testing::ExecutorMasterKeyEnv()}));
  ASSERT_TRUE(error.has_value()) << "started without a signing key";
  EXPECT_NE(error->find("identity.signing_key_file is empty"), std::string::npos) << *error;
}

INSTANTIATE_TEST_SUITE_P(
    EveryInternalService, CallerAssertionTest,
    ::testing::Values(Service{core::kConversationAudience, OMNIFORGE_CONVERSATION_BIN},
                      Service{core::kIntentAudience, OMNIFORGE_INTENT_BIN},
                      Service{core::kExecutorAudience, OMNIFORGE_EXECUTOR_BIN}),
    [](const ::testing::TestParamInfo<Service>& info) { return info.param.audience; });

}  // namespace
}  // namespace omniforge
