// The omniforge-executor binary with the shipped local configuration
// (deploy/local/executor.yaml) and the environment scripts/stack.sh gives
// it: the sandbox servers serve the email, calendar and contacts domains,
// driven over gRPC as the orchestrator drives them (ListTools, InvokeTool).
#include <gmock/gmock.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "libs/core/grpc_identity.h"
#include "omniforge/executor/v1/executor_service.grpc.pb.h"
#include "services/sandbox/src/sandbox_time.h"
#include "tests/support/identity_keys.h"
#include "tests/support/master_keys.h"
#include "tests/support/server_process.h"
#include "tests/support/test_database.h"

namespace omniforge::sandbox {
namespace {

namespace pb = ::omniforge::executor::v1;
using ::testing::HasSubstr;
using Json = nlohmann::json;

// The sandbox's "now" in these tests (a Tuesday morning): the seed's
// "tomorrow" and the tests' are then the same day whenever they run.
constexpr char kNow[] = "2026-11-24T08:00:00Z";

// What scripts/stack.sh sets for the executor's sandbox servers, on `db`
// (no owner login: the schema is applied once, by MigrateSandbox), with
// the sandbox's clock started at kNow.
std::vector<std::string> ExecutorEnv(const omniforge::testing::TestDatabase& db) {
  std::vector<std::string> env = {omniforge::testing::ExecutorMasterKeyEnv()};
  const auto identity = omniforge::testing::TestIdentityEnv(omniforge::testing::TestKeyUse::kBoth);
  env.insert(env.end(), identity.begin(), identity.end());
  for (const char* domain : {"EMAIL", "CALENDAR", "CONTACTS"}) {
    const std::string prefix = std::string("OMNIFORGE_MCP_SERVERS_SANDBOX_") + domain;
    env.push_back(prefix + "_COMMAND=" + OMNIFORGE_SANDBOX_BIN);
    env.push_back(prefix + "_ENV=OMNIFORGE_DATABASE_DSN=" + db.service_dsn("sandbox") +
                  ",OMNIFORGE_DATABASE_MIGRATE_ON_START=false,OMNIFORGE_SANDBOX_NOW=" + kNow);
  }
  return omniforge::testing::DatabaseEnv(db, "executor", env);
}

// `omniforge-sandbox-mcp migrate` as the owner, as scripts/stack.sh's `up`
// runs it; its exit status.
int MigrateSandbox(const omniforge::testing::TestDatabase& db) {
  return std::system(("OMNIFORGE_DATABASE_MIGRATE_DSN='" + db.owner_dsn() + "' " +
                      OMNIFORGE_SANDBOX_BIN + " migrate 2>&1")
                         .c_str());
}

// The day after kNow at hh:mm UTC.
std::string Tomorrow(int hour, int minute) {
  const absl::TimeZone utc = absl::UTCTimeZone();
  return FormatRfc3339(AtTime(StartOfDay(*ParseRfc3339("now", kNow), utc, 1), utc, hour, minute),
                       utc);
}

class SandboxExecutorServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(MigrateSandbox(db_), 0);
    const auto error = executor_.Start(
        ExecutorEnv(db_),
        {"--config", std::string(OMNIFORGE_SOURCE_DIR) + "/deploy/local/executor.yaml"});
    ASSERT_FALSE(error.has_value()) << *error;
    stub_ = pb::ExecutorService::NewStub(
        grpc::CreateChannel(executor_.address(), grpc::InsecureChannelCredentials()));
  }

  void TearDown() override {
    stub_.reset();  // the channel closes first, so nothing holds the drain up
    const auto status = executor_.Stop();
    EXPECT_TRUE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << executor_.JoinedLog();
  }

  std::unique_ptr<grpc::ClientContext> Context() const {
    auto context = std::make_unique<grpc::ClientContext>();
    core::AttachIdentity(*context, alice_, core::kExecutorAudience);
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    return context;
  }

  pb::InvokeToolResponse Invoke(const std::string& tool, const Json& args) {
    pb::InvokeToolRequest request;
    request.set_tool_name(tool);
    request.set_arguments_json(args.dump());
    pb::InvokeToolResponse response;
    const grpc::Status status = stub_->InvokeTool(Context().get(), request, &response);
    EXPECT_TRUE(status.ok()) << tool << ": " << status.error_message() << "\n"
                             << executor_.JoinedLog();
    return response;
  }

  omniforge::testing::TestDatabase db_;
  omniforge::testing::ServerProcess executor_{OMNIFORGE_EXECUTOR_BIN};
  std::unique_ptr<pb::ExecutorService::Stub> stub_;
  const core::Identity alice_{"acme", "alice"};
};

TEST_F(SandboxExecutorServerTest, TheShippedConfigOffersTheSandboxDomainsWithTheirRisks) {
  pb::ListToolsRequest request;
  pb::ListToolsResponse response;
  ASSERT_TRUE(stub_->ListTools(Context().get(), request, &response).ok());
  std::map<std::string, pb::ToolRisk> risks;
  std::map<std::string, std::string> sources;
  for (const auto& tool : response.tools()) {
    risks[tool.name()] = tool.risk();
    sources[tool.name()] = tool.source();
  }
  ASSERT_TRUE(risks.contains("calendar__create_event")) << executor_.JoinedLog();
  EXPECT_EQ(risks["calendar__create_event"], pb::TOOL_RISK_WRITE);
  EXPECT_EQ(risks["calendar__find_free_slots"], pb::TOOL_RISK_READ);
  EXPECT_EQ(risks["calendar__delete_event"], pb::TOOL_RISK_HIGH);
  EXPECT_EQ(risks["contacts__find_contacts"], pb::TOOL_RISK_READ);
  EXPECT_EQ(risks["email__draft_message"], pb::TOOL_RISK_READ);  // tool_risk in the config
  EXPECT_EQ(risks["email__send_message"], pb::TOOL_RISK_WRITE);
  EXPECT_EQ(sources["calendar__create_event"], "sandbox_calendar");
  EXPECT_FALSE(risks.contains("sandbox_calendar__create_event"));
}

TEST_F(SandboxExecutorServerTest, InvokeToolBooksAroundAConflict) {
  const Json wanted = {{"title", "Call with Sarah and John Smith"},
                       {"start", Tomorrow(14, 0)},
                       {"end", Tomorrow(14, 30)},
                       {"attendees", {"sarah.chen@example.com", "john.smith@example.com"}}};
  const pb::InvokeToolResponse refused = Invoke("calendar__create_event", wanted);
  EXPECT_TRUE(refused.is_error());
  EXPECT_EQ(refused.risk(), pb::TOOL_RISK_WRITE);
  const Json conflict = Json::parse(refused.result_json());
  EXPECT_EQ(conflict["data"]["error"]["code"], "conflict") << refused.result_json();
  ASSERT_EQ(conflict["data"]["error"]["alternatives"].size(), 3u);

  Json moved = wanted;
  moved["start"] = conflict["data"]["error"]["alternatives"][0]["start"];
  moved["end"] = conflict["data"]["error"]["alternatives"][0]["end"];
  const pb::InvokeToolResponse booked = Invoke("calendar__create_event", moved);
  EXPECT_FALSE(booked.is_error()) << booked.result_json();
  EXPECT_EQ(Json::parse(booked.result_json())["data"]["event"]["start"], moved["start"]);

  const pb::InvokeToolResponse johns = Invoke("contacts__find_contacts", {{"query", "John"}});
  EXPECT_THAT(johns.result_json(), HasSubstr("Which John do you mean"));
}

}  // namespace
}  // namespace omniforge::sandbox
