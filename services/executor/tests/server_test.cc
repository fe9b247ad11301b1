// Black-box tests of the omniforge-executor binary: the real process,
// configured only through its environment, on a fresh PostgreSQL database,
// driven over gRPC and HTTP exactly as the orchestrator and operators drive it.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX kill, not <csignal>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include "grpc/health/v1/health.grpc.pb.h"
#include "libs/core/grpc_identity.h"
#include "libs/core/ids.h"
#include "omniforge/conversation/v1/conversation_service.grpc.pb.h"
#include "omniforge/executor/v1/executor_service.grpc.pb.h"
#include "tests/support/identity_keys.h"
#include "tests/support/master_keys.h"
#include "tests/support/server_process.h"
#include "tests/support/test_database.h"

namespace omniforge::executor {
namespace {

namespace pb = ::omniforge::executor::v1;
namespace cpb = ::omniforge::conversation::v1;
namespace health = ::grpc::health::v1;
using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr auto kRpcTimeout = std::chrono::seconds(10);

using testing::ServerProcess;

// The environment of an omniforge-executor process on `dsn`, plus `extra`.
std::vector<std::string> ServerEnv(const testing::TestDatabase& db,
                                   std::vector<std::string> extra = {},
                                   const std::string& service = "executor") {
  // A master key of the test's own when it gives none (the executor's).
  const bool keyed = std::any_of(extra.begin(), extra.end(), [](const std::string& e) {
    return e.rfind("OMNIFORGE_ENCRYPTION_MASTER_KEY=", 0) == 0;
  });
  if (!keyed) extra.push_back(testing::ExecutorMasterKeyEnv());
  extra.emplace_back("OMNIFORGE_SERVER_DRAIN_TIMEOUT_S=10");
  const auto identity = testing::TestIdentityEnv(
      service == "executor" ? testing::TestKeyUse::kBoth : testing::TestKeyUse::kVerify);
  extra.insert(extra.end(), identity.begin(), identity.end());
  return testing::DatabaseEnv(db, service, extra);
}

std::unique_ptr<grpc::ClientContext> Call(const std::optional<core::Identity>& who,
                                          std::string_view audience = core::kExecutorAudience) {
  auto context = std::make_unique<grpc::ClientContext>();
  if (who) core::AttachIdentity(*context, *who, audience);
  context->set_deadline(std::chrono::system_clock::now() + kRpcTimeout);
  return context;
}

core::Identity FreshUser(const std::string& tenant = "acme") {
  return {tenant, "user-" + core::NewUuid()};
}

class ExecutorServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { database_ = new testing::TestDatabase(); }
  static void TearDownTestSuite() {
    delete database_;
    database_ = nullptr;
  }

  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(OMNIFORGE_EXECUTOR_BIN);
    const auto error = server_->Start(ServerEnv(*database_));
    ASSERT_FALSE(error.has_value()) << *error;
    channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    stub_ = pb::ExecutorService::NewStub(channel_);
  }

  void TearDown() override {
    stub_.reset();
    channel_.reset();
    const auto status = server_->Stop();
    EXPECT_TRUE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
        << "server did not exit cleanly; log:\n"
        << server_->JoinedLog();
  }

  grpc::Status Invoke(const std::optional<core::Identity>& who, const std::string& tool,
                      const std::string& args, pb::InvokeToolResponse* response,
                      const std::string& key = "") {
    pb::InvokeToolRequest request;
    request.set_tool_name(tool);
    request.set_arguments_json(args);
    request.set_idempotency_key(key);
    return stub_->InvokeTool(Call(who).get(), request, response);
  }

  Json InvokeOk(const core::Identity& who, const std::string& tool, const Json& args) {
    pb::InvokeToolResponse response;
    const grpc::Status status = Invoke(who, tool, args.dump(), &response);
    EXPECT_TRUE(status.ok()) << tool << ": " << status.error_message();
    EXPECT_FALSE(response.is_error()) << response.result_json();
    return Json::parse(response.result_json(), nullptr, false);
  }

  static testing::TestDatabase* database_;
  std::unique_ptr<ServerProcess> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::ExecutorService::Stub> stub_;
};

testing::TestDatabase* ExecutorServerTest::database_ = nullptr;

TEST_F(ExecutorServerTest, HealthCheckReportsServing) {
  auto stub = health::Health::NewStub(channel_);
  health::HealthCheckRequest request;
  health::HealthCheckResponse response;
  const grpc::Status status = stub->Check(Call(std::nullopt).get(), request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.status(), health::HealthCheckResponse::SERVING);
}

TEST_F(ExecutorServerTest, ListToolsDescribesEveryToolAndFiltersByRisk) {
  const auto alice = FreshUser();
  pb::ListToolsRequest request;
  pb::ListToolsResponse all;
  ASSERT_TRUE(stub_->ListTools(Call(alice).get(), request, &all).ok());
  ASSERT_EQ(all.tools_size(), 23);
  for (int i = 1; i < all.tools_size(); ++i) {
    EXPECT_LT(all.tools(i - 1).name(), all.tools(i).name());
  }
  for (const auto& tool : all.tools()) {
    EXPECT_EQ(tool.source(), "builtin");
    EXPECT_FALSE(tool.description().empty());
    EXPECT_EQ(Json::parse(tool.parameters_json_schema())["type"], "object") << tool.name();
    EXPECT_NE(tool.risk(), pb::TOOL_RISK_UNSPECIFIED);
  }

  request.set_max_risk(pb::TOOL_RISK_READ);
  pb::ListToolsResponse reads;
  ASSERT_TRUE(stub_->ListTools(Call(alice).get(), request, &reads).ok());
  EXPECT_EQ(reads.tools_size(), 10);
  for (const auto& tool : reads.tools()) EXPECT_EQ(tool.risk(), pb::TOOL_RISK_READ);

  request.set_max_risk(pb::TOOL_RISK_UNSPECIFIED);
  request.add_names("delete_agent");
  pb::ListToolsResponse one;
  ASSERT_TRUE(stub_->ListTools(Call(alice).get(), request, &one).ok());
  ASSERT_EQ(one.tools_size(), 1);
  EXPECT_EQ(one.tools(0).risk(), pb::TOOL_RISK_HIGH);

  request.set_max_risk(static_cast<pb::ToolRisk>(42));
  pb::ListToolsResponse ignored;
  const grpc::Status bad = stub_->ListTools(Call(alice).get(), request, &ignored);
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(bad.error_message(), HasSubstr("max_risk"));
}

TEST_F(ExecutorServerTest, InvokeToolRunsBuiltinToolsForTheCaller) {
  const auto alice = FreshUser();
  pb::InvokeToolResponse created;
  grpc::Status status =
      Invoke(alice, "create_agent", R"({"name": "digest", "description": "weekly"})", &created);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_FALSE(created.is_error());
  EXPECT_EQ(created.risk(), pb::TOOL_RISK_WRITE);
  EXPECT_FALSE(created.deduplicated());
  EXPECT_TRUE(created.has_duration());
  const std::string id = Json::parse(created.result_json())["agent"]["id"];

  Json listed = InvokeOk(alice, "list_agents", Json::object());
  ASSERT_EQ(listed["count"], 1);
  EXPECT_EQ(listed["agents"][0]["id"], id);

  // Another tenant cannot see it, by id or by name: a tool error, not an RPC error.
  pb::InvokeToolResponse other;
  ASSERT_TRUE(Invoke(FreshUser("globex"), "get_agent", Json({{"agent", id}}).dump(), &other).ok());
  EXPECT_TRUE(other.is_error());
  EXPECT_EQ(Json::parse(other.result_json())["error"]["code"], "not_found");
  EXPECT_EQ(InvokeOk(FreshUser("globex"), "list_agents", Json::object())["count"], 0);

  pb::InvokeToolResponse deleted;
  ASSERT_TRUE(Invoke(alice, "delete_agent", Json({{"agent", id}}).dump(), &deleted).ok());
  EXPECT_EQ(deleted.risk(), pb::TOOL_RISK_HIGH);
}

TEST_F(ExecutorServerTest, BadCallsGetClearErrorsAndChangeNothing) {
  const auto alice = FreshUser();
  pb::InvokeToolResponse response;
  grpc::Status status = Invoke(alice, "create_agent", R"({"name": 7})", &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("$.name: expected string, got integer"));
  EXPECT_THAT(status.error_message(), HasSubstr("missing required property \"description\""));

  status = Invoke(alice, "create_agent",
                  Json({{"name", std::string(300, 'x')}, {"description", ""}}).dump(), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("$.name: must be 1 to 100 characters"));

  status = Invoke(alice, "create_agent", "not json", &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("arguments_json"));

  status = Invoke(alice, "launch_rockets", "{}", &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(), HasSubstr("launch_rockets"));

  status = Invoke(std::nullopt, "list_agents", "{}", &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);

  // Even signed by a trusted key, an assertion naming a malformed user is
  // refused.
  status = Invoke(core::Identity{"acme", "bad user!"}, "list_agents", "{}", &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(status.error_message(), HasSubstr("names no valid identity"));

  EXPECT_EQ(InvokeOk(alice, "list_agents", Json::object())["count"], 0);
}

// Inputs a live probe used to crash the executor or garble its errors.
TEST_F(ExecutorServerTest, DeeplyNestedArgumentsAndHugeNamesGetClearErrorsAndTheServerLives) {
  const auto alice = FreshUser();
  pb::InvokeToolResponse response;
  // 58,000 levels in 116 KB, under the size cap: the serializer's recursion
  // overflowed the stack. Now refused before it is parsed.
  const std::string deep = R"({"name":"x","description":"d","config":{"a":)" +
                           std::string(58000, '[') + std::string(58000, ']') + "}}";
  grpc::Status status = Invoke(alice, "create_agent", deep, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(),
            "arguments_json: JSON nested more than 64 levels deep (the limit)");
  // 2,000 levels used to reach PostgreSQL and come back INTERNAL (its own
  // stack depth, sqlstate 54001).
  const std::string middling = R"({"name":"x","description":"d","config":{"a":)" +
                               std::string(2000, '[') + std::string(2000, ']') + "}}";
  status = Invoke(alice, "create_agent", middling, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // A tool name of 9,000 characters was echoed whole into the status, which
  // overflowed gRPC's metadata: RESOURCE_EXHAUSTED instead of NOT_FOUND.
  status = Invoke(alice, std::string(9000, 'q'), "{}", &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(), HasSubstr("no tool named 'qqqq"));
  EXPECT_LT(status.error_message().size(), 400u);
  // The server is alive and nothing was created.
  EXPECT_EQ(InvokeOk(alice, "list_agents", Json::object())["count"], 0);
}

TEST_F(ExecutorServerTest, RetriedCallWithTheSameKeyIsNotRunAgain) {
  const auto alice = FreshUser();
  InvokeOk(alice, "create_agent", {{"name", "reporter"}, {"description", "reports"}});
  pb::InvokeToolResponse first, retry;
  ASSERT_TRUE(Invoke(alice, "run_agent", R"({"agent": "reporter"})", &first, "turn-1:0").ok());
  ASSERT_TRUE(Invoke(alice, "run_agent", R"({"agent": "reporter"})", &retry, "turn-1:0").ok());
  EXPECT_FALSE(first.deduplicated());
  EXPECT_TRUE(retry.deduplicated());
  EXPECT_EQ(retry.result_json(), first.result_json());
  EXPECT_EQ(InvokeOk(alice, "list_runs", Json::object())["count"], 1);

  pb::InvokeToolResponse reused;
  const grpc::Status status =
      Invoke(alice, "run_agent", R"({"agent": "reporter", "input": {}})", &reused, "turn-1:0");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
}

TEST_F(ExecutorServerTest, TheRecordOfAToolsResultIsSealedAtRestAndARetryReadsItBack) {
  const auto alice = FreshUser();
  const std::string args = R"({"name": "Atlas", "description": "the Zanzibar merger files"})";
  pb::InvokeToolResponse first, retry;
  ASSERT_TRUE(Invoke(alice, "create_project", args, &first, "turn-9:0").ok());
  ASSERT_THAT(first.result_json(), HasSubstr("Zanzibar"));
  pqxx::connection conn(database_->dsn());
  pqxx::nontransaction tx(conn);
  const pqxx::result rows = tx.exec_params(
      "SELECT result FROM platform.tool_invocations WHERE user_id = $1", alice.user_id);
  ASSERT_EQ(rows.size(), 1u);
  const std::string stored = rows[0][0].as<std::string>();
  EXPECT_EQ(stored.rfind("ofs1:", 0), 0u) << stored;
  EXPECT_THAT(stored, Not(HasSubstr("Zanzibar")));
  ASSERT_TRUE(Invoke(alice, "create_project", args, &retry, "turn-9:0").ok());
  EXPECT_TRUE(retry.deduplicated());
  EXPECT_EQ(retry.result_json(), first.result_json());
}

// A planner's side of one Converse dialogue.
class Dialogue {
 public:
  Dialogue(pb::ExecutorService::Stub& stub, const std::optional<core::Identity>& who) {
    if (who) core::AttachIdentity(context_, *who, core::kExecutorAudience);
    context_.set_deadline(std::chrono::system_clock::now() + kRpcTimeout);
    stream_ = stub.Converse(&context_);
  }
  bool Send(const pb::ConverseRequest& request) { return stream_->Write(request); }
  std::optional<pb::ConverseResponse> Next() {
    pb::ConverseResponse response;
    if (!stream_->Read(&response)) return std::nullopt;
    return response;
  }
  // Reads up to and including the next question or final event.
  std::vector<pb::ConverseResponse> Until() {
    std::vector<pb::ConverseResponse> out;
    while (auto r = Next()) {
      out.push_back(*r);
      if (r->has_question() || r->has_task_complete() || r->has_error()) break;
    }
    return out;
  }
  // Drops the call, as a planner that crashed or timed out would.
  void Cancel() { context_.TryCancel(); }
  grpc::Status Finish() {
    stream_->WritesDone();
    while (Next()) {
    }
    return stream_->Finish();
  }

 private:
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<pb::ConverseRequest, pb::ConverseResponse>> stream_;
};

pb::ConverseRequest Assign(const std::vector<std::pair<std::string, std::string>>& calls,
                           bool writes = false) {
  pb::ConverseRequest request;
  auto* a = request.mutable_task_assignment();
  a->set_task("prepare the marketing review");
  a->set_goal("a quarterly review");
  a->set_step_id("step-7");
  a->set_writes_approved(writes);
  for (const auto& [tool, args] : calls) {
    auto* call = a->add_tool_calls();
    call->set_tool_name(tool);
    call->set_arguments_json(args);
    if (writes) a->add_allowed_tools(tool);
  }
  return request;
}

TEST_F(ExecutorServerTest, ConverseRunsAStepAndAsksWhenANameIsAmbiguous) {
  const auto alice = FreshUser();
  InvokeOk(alice, "create_project", {{"name", "Spring marketing"}});
  InvokeOk(alice, "create_project", {{"name", "Autumn marketing"}});
  Dialogue dialogue(*stub_, alice);
  ASSERT_TRUE(
      dialogue.Send(Assign({{"search_projects", R"({"query": "marketing"})"},
                            {"create_context_document",
                             R"({"project": "marketing", "title": "Review", "content": "Q3"})"}},
                           /*writes=*/true)));
  auto events = dialogue.Until();
  ASSERT_FALSE(events.empty());
  ASSERT_TRUE(events.back().has_question()) << events.back().DebugString();
  EXPECT_TRUE(events[0].has_progress_update());
  EXPECT_EQ(events[0].step_id(), "step-7");
  EXPECT_TRUE(events[1].has_partial_result());
  EXPECT_EQ(Json::parse(events[1].partial_result().result_json())["count"], 2);
  const auto& question = events.back().question();
  EXPECT_THAT(question.options(), ::testing::ElementsAre("Autumn marketing", "Spring marketing"));

  pb::ConverseRequest answer;
  answer.mutable_clarification()->set_question_id(question.question_id());
  answer.mutable_clarification()->set_answer("Spring marketing");
  ASSERT_TRUE(dialogue.Send(answer));
  events = dialogue.Until();
  ASSERT_TRUE(events.back().has_task_complete()) << events.back().DebugString();
  const auto& done = events.back().task_complete();
  EXPECT_EQ(done.status(), pb::TASK_STATUS_SUCCESS);
  EXPECT_EQ(done.tool_calls_size(), 4);  // search, the failed lookup, the name search, the retry
  EXPECT_TRUE(dialogue.Finish().ok());
  Json details = InvokeOk(alice, "get_project_details", {{"project", "Spring marketing"}});
  EXPECT_EQ(details["context_documents"][0]["title"], "Review");
}

TEST_F(ExecutorServerTest, ConverseCancelAndProtocolErrorsEndWithAnErrorEvent) {
  const auto alice = FreshUser();
  InvokeOk(alice, "create_project", {{"name", "North sales"}});
  InvokeOk(alice, "create_project", {{"name", "South sales"}});
  {
    Dialogue dialogue(*stub_, alice);
    ASSERT_TRUE(dialogue.Send(Assign({{"list_tasks", R"({"project": "sales"})"}})));
    ASSERT_TRUE(dialogue.Until().back().has_question());
    pb::ConverseRequest cancel;
    cancel.mutable_cancel()->set_reason("the user changed their mind");
    ASSERT_TRUE(dialogue.Send(cancel));
    auto events = dialogue.Until();
    ASSERT_TRUE(events.back().has_error());
    EXPECT_EQ(events.back().error().code(), pb::ERROR_CODE_CANCELLED);
    EXPECT_TRUE(dialogue.Finish().ok());
  }
  {
    Dialogue dialogue(*stub_, alice);
    pb::ConverseRequest answer;
    answer.mutable_clarification()->set_answer("yes");
    ASSERT_TRUE(dialogue.Send(answer));
    auto events = dialogue.Until();
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].error().code(), pb::ERROR_CODE_PROTOCOL);
    EXPECT_TRUE(dialogue.Finish().ok());
  }
  {
    Dialogue dialogue(*stub_, alice);
    ASSERT_TRUE(dialogue.Send(Assign({{"delete_agent", R"({"agent": "x"})"}})));
    auto events = dialogue.Until();
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].error().code(), pb::ERROR_CODE_INVALID_ASSIGNMENT);
    EXPECT_TRUE(dialogue.Finish().ok());
  }
  httplib::Client client("127.0.0.1", server_->metrics_port());
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_THAT(metrics->body, HasSubstr("omniforge_executor_dialogues_total{outcome="
                                       "\"ERROR_CODE_CANCELLED\"} 1"));
  {
    Dialogue dialogue(*stub_, std::nullopt);
    EXPECT_EQ(dialogue.Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
}

TEST_F(ExecutorServerTest, MetricsCountToolCallsByToolAndOutcome) {
  const auto alice = FreshUser();
  InvokeOk(alice, "list_agents", Json::object());
  pb::InvokeToolResponse ignored;
  (void)Invoke(alice, "list_agents", R"({"limit": -1})", &ignored);
  httplib::Client client("127.0.0.1", server_->metrics_port());
  auto response = client.Get("/metrics");
  ASSERT_TRUE(response);
  EXPECT_THAT(response->body,
              HasSubstr("omniforge_executor_tool_calls_total{outcome=\"ok\",risk=\"read\",tool="
                        "\"list_agents\"} 1"));
  EXPECT_THAT(response->body, HasSubstr("outcome=\"INVALID_ARGUMENT\""));
  EXPECT_THAT(
      response->body,
      HasSubstr(R"(grpc_server_handled_total{grpc_code="OK",grpc_method="InvokeTool",)"
                R"(grpc_service="omniforge.executor.v1.ExecutorService",grpc_type="unary"})"));
}

// An executor that stores its dialogues in a conversation service, both on
// one fresh database, and a parent chat of a fresh user's to store them under.
class ExecutorDialogueStorageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto error = conversation_.Start(
        ServerEnv(database_,
                  {"OMNIFORGE_ENCRYPTION_MASTER_KEY="
                   "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"},
                  "conversation"));
    ASSERT_FALSE(error.has_value()) << *error;
    error = executor_.Start(
        ServerEnv(database_, {"OMNIFORGE_CONVERSATION_ADDRESS=" + conversation_.address()}));
    ASSERT_FALSE(error.has_value()) << *error;
    memory_ = cpb::ConversationService::NewStub(
        grpc::CreateChannel(conversation_.address(), grpc::InsecureChannelCredentials()));
    tools_ = pb::ExecutorService::NewStub(
        grpc::CreateChannel(executor_.address(), grpc::InsecureChannelCredentials()));
    cpb::CreateConversationRequest create;
    create.set_title("quarterly review");
    cpb::CreateConversationResponse parent;
    ASSERT_TRUE(
        memory_
            ->CreateConversation(Call(alice_, core::kConversationAudience).get(), create, &parent)
            .ok());
    parent_id_ = parent.conversation().id();
  }

  void TearDown() override {
    memory_.reset();
    tools_.reset();
    EXPECT_TRUE(executor_.Stop().has_value());
    EXPECT_TRUE(conversation_.Stop().has_value());
  }

  // An assignment of `calls` stored under the parent chat.
  pb::ConverseRequest StoredAssign(const std::vector<std::pair<std::string, std::string>>& calls) {
    pb::ConverseRequest assign = Assign(calls);
    assign.mutable_task_assignment()->set_parent_conversation_id(parent_id_);
    return assign;
  }

  bool InvokeTool(const core::Identity& who, const std::string& tool, const std::string& args) {
    pb::InvokeToolRequest request;
    request.set_tool_name(tool);
    request.set_arguments_json(args);
    pb::InvokeToolResponse response;
    const grpc::Status status = tools_->InvokeTool(Call(who).get(), request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return status.ok() && !response.is_error();
  }

  cpb::DialogueStatus StatusOf(const std::string& dialogue_id) {
    cpb::GetConversationRequest request;
    request.set_conversation_id(dialogue_id);
    cpb::GetConversationResponse response;
    const grpc::Status status = memory_->GetConversation(
        Call(alice_, core::kConversationAudience).get(), request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response.conversation().status();
  }

  testing::TestDatabase database_;
  ServerProcess conversation_{OMNIFORGE_CONVERSATION_BIN};
  ServerProcess executor_{OMNIFORGE_EXECUTOR_BIN};
  std::unique_ptr<cpb::ConversationService::Stub> memory_;
  std::unique_ptr<pb::ExecutorService::Stub> tools_;
  const core::Identity alice_ = FreshUser();
  std::string parent_id_;
};

TEST_F(ExecutorDialogueStorageTest, TheStoredDialogueMatchesWhatWasStreamed) {
  for (const char* name : {"Spring marketing", "Autumn marketing"}) {
    ASSERT_TRUE(InvokeTool(alice_, "create_project", Json({{"name", name}}).dump()));
  }

  Dialogue dialogue(*tools_, alice_);
  ASSERT_TRUE(dialogue.Send(StoredAssign({{"list_tasks", R"({"project": "marketing"})"}})));
  std::vector<pb::ConverseResponse> streamed = dialogue.Until();
  ASSERT_TRUE(streamed.back().has_question());
  EXPECT_EQ(StatusOf(streamed[0].dialogue_conversation_id()), cpb::DIALOGUE_STATUS_ACTIVE);
  pb::ConverseRequest answer;
  answer.mutable_clarification()->set_question_id(streamed.back().question().question_id());
  answer.mutable_clarification()->set_answer("1");
  ASSERT_TRUE(dialogue.Send(answer));
  for (auto& event : dialogue.Until()) streamed.push_back(event);
  ASSERT_TRUE(streamed.back().has_task_complete());
  EXPECT_TRUE(dialogue.Finish().ok());
  const std::string dialogue_id = streamed[0].dialogue_conversation_id();
  ASSERT_FALSE(dialogue_id.empty());
  for (const auto& event : streamed) EXPECT_EQ(event.dialogue_conversation_id(), dialogue_id);

  cpb::ListConversationsRequest children;
  children.set_parent_conversation_id(parent_id_);
  cpb::ListConversationsResponse listed;
  ASSERT_TRUE(
      memory_->ListConversations(Call(alice_, core::kConversationAudience).get(), children, &listed)
          .ok());
  ASSERT_EQ(listed.conversations_size(), 1);
  EXPECT_EQ(listed.conversations(0).id(), dialogue_id);
  EXPECT_EQ(listed.conversations(0).kind(), cpb::CONVERSATION_KIND_AGENT_DIALOGUE);
  EXPECT_EQ(listed.conversations(0).status(), cpb::DIALOGUE_STATUS_COMPLETED);

  cpb::ListMessagesRequest read;
  read.set_conversation_id(dialogue_id);
  read.set_limit(500);
  cpb::ListMessagesResponse stored;
  ASSERT_TRUE(
      memory_->ListMessages(Call(alice_, core::kConversationAudience).get(), read, &stored).ok());
  // The assignment and the clarification from the planner, every event
  // from the executor, in the order they happened.
  std::vector<std::string> expected = {"planner:task_assignment"};
  for (const auto& event : streamed) {
    std::string type = event.has_progress_update()  ? "progress_update"
                       : event.has_partial_result() ? "partial_result"
                       : event.has_question()       ? "question"
                       : event.has_task_complete()  ? "task_complete"
                                                    : "error";
    expected.push_back("executor:" + type);
    if (type == "question") expected.emplace_back("planner:clarification");
  }
  std::vector<std::string> actual;
  for (const auto& m : stored.messages()) {
    actual.push_back(std::string(m.role() == cpb::ROLE_PLANNER ? "planner:" : "executor:") +
                     m.metadata().fields().at("type").string_value());
  }
  EXPECT_EQ(actual, expected);
  const auto& last = stored.messages(stored.messages_size() - 1);
  EXPECT_EQ(last.metadata().fields().at("status").string_value(), "completed");
  EXPECT_THAT(last.content(), HasSubstr(streamed.back().task_complete().summary()));
}

TEST_F(ExecutorDialogueStorageTest, EachDialogueEndsWithTheStatusOfHowItEnded) {
  ASSERT_TRUE(InvokeTool(alice_, "create_project", R"({"name": "Spring sales"})"));
  ASSERT_TRUE(InvokeTool(alice_, "create_project", R"({"name": "Autumn sales"})"));
  {  // A write the step was not approved for: failed.
    Dialogue dialogue(*tools_, alice_);
    ASSERT_TRUE(dialogue.Send(StoredAssign({{"delete_agent", R"({"agent": "x"})"}})));
    auto events = dialogue.Until();
    ASSERT_TRUE(events.back().has_error());
    EXPECT_TRUE(dialogue.Finish().ok());
    EXPECT_EQ(StatusOf(events.back().dialogue_conversation_id()), cpb::DIALOGUE_STATUS_FAILED);
  }
  {  // The planner cancels while the executor waits for an answer: cancelled.
    Dialogue dialogue(*tools_, alice_);
    ASSERT_TRUE(dialogue.Send(StoredAssign({{"list_tasks", R"({"project": "sales"})"}})));
    auto events = dialogue.Until();
    ASSERT_TRUE(events.back().has_question());
    pb::ConverseRequest cancel;
    cancel.mutable_cancel()->set_reason("the user changed their mind");
    ASSERT_TRUE(dialogue.Send(cancel));
    events = dialogue.Until();
    ASSERT_TRUE(events.back().has_error());
    EXPECT_TRUE(dialogue.Finish().ok());
    EXPECT_EQ(StatusOf(events.back().dialogue_conversation_id()), cpb::DIALOGUE_STATUS_CANCELLED);
  }
  // The planner's call goes away while the executor waits for an answer:
  // cancelled, once the executor has seen the stream end.
  std::string dropped_id;
  {
    Dialogue dialogue(*tools_, alice_);
    ASSERT_TRUE(dialogue.Send(StoredAssign({{"list_tasks", R"({"project": "sales"})"}})));
    auto events = dialogue.Until();
    ASSERT_TRUE(events.back().has_question());
    dropped_id = events.back().dialogue_conversation_id();
    EXPECT_EQ(StatusOf(dropped_id), cpb::DIALOGUE_STATUS_ACTIVE);
    dialogue.Cancel();
    EXPECT_EQ(dialogue.Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  const auto give_up = Clock::now() + std::chrono::seconds(10);
  while (StatusOf(dropped_id) == cpb::DIALOGUE_STATUS_ACTIVE && Clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(StatusOf(dropped_id), cpb::DIALOGUE_STATUS_CANCELLED);
}

std::pair<int, std::string> RunBinary(const std::string& env, const std::string& args) {
  const std::string command =
      "env -i PATH=/usr/bin:/bin " + env + " " + OMNIFORGE_EXECUTOR_BIN + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  std::string output;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

TEST(ExecutorConfigTest, UnknownKeyStopsStartAndNamesIt) {
  const auto [status, output] = RunBinary("OMNIFORGE_TOOLS_MAX_RESULT_BYTES=lots", "");
  EXPECT_EQ(status, 2) << output;
  EXPECT_THAT(output, HasSubstr("tools.max_result_bytes"));
  char path[] = "/tmp/omniforge-executor-config-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string yaml = "tools:\n  max_result_byte: 10\n";
  ASSERT_EQ(write(fd, yaml.data(), yaml.size()), static_cast<ssize_t>(yaml.size()));
  close(fd);
  const auto [file_status, file_output] = RunBinary("", std::string("--config ") + path);
  unlink(path);
  EXPECT_EQ(file_status, 2) << file_output;
  EXPECT_THAT(file_output, HasSubstr("max_result_byte"));
}

TEST(ExecutorConfigTest, ADomainNamingNoConfiguredServerStopsStartAndNamesIt) {
  char path[] = "/tmp/omniforge-executor-config-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string yaml =
      "mcp:\n  servers:\n    mail: {transport: stdio, command: node}\n"
      "domains:\n  email: {servers: [mail]}\n  calendar: {servers: [gcal]}\n";
  ASSERT_EQ(write(fd, yaml.data(), yaml.size()), static_cast<ssize_t>(yaml.size()));
  close(fd);
  const auto [status, output] = RunBinary("", std::string("--config ") + path);
  unlink(path);
  EXPECT_EQ(status, 2) << output;
  EXPECT_THAT(output, HasSubstr("domains.calendar.servers: 'gcal' is not an enabled server"));
}

TEST(ExecutorConfigTest, AnUnknownMcpTrustStopsStartAndNamesIt) {
  char path[] = "/tmp/omniforge-executor-config-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string yaml =
      "mcp:\n  servers:\n    mail: {transport: stdio, command: node, trust: everything}\n";
  ASSERT_EQ(write(fd, yaml.data(), yaml.size()), static_cast<ssize_t>(yaml.size()));
  close(fd);
  const auto [status, output] = RunBinary("", std::string("--config ") + path);
  unlink(path);
  EXPECT_EQ(status, 2) << output;
  EXPECT_THAT(output, HasSubstr("mcp.servers.mail.trust: 'everything' is not none or read_hints"));
}

// The executor with the fake email service (fake_saas_mcp.mjs) as an MCP
// server the operator did not mark trusted: its tidy_mailbox claims
// readOnlyHint (and deletes the mailbox), and ListTools does not call it READ.
TEST(ExecutorMcpTrustTest, ListToolsDoesNotTakeAServersWordThatAToolIsReadOnly) {
  if (std::system("command -v node >/dev/null 2>&1") != 0) GTEST_SKIP() << "node is not on PATH";
  testing::TestDatabase database;
  char path[] = "/tmp/omniforge-executor-config-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string yaml =
      "mcp:\n  servers:\n    mail: {transport: stdio, command: node, args: ['" +
      std::string(OMNIFORGE_SOURCE_DIR) + "/services/executor/tests/fake_saas_mcp.mjs', email]}\n";
  ASSERT_EQ(write(fd, yaml.data(), yaml.size()), static_cast<ssize_t>(yaml.size()));
  close(fd);
  ServerProcess server(OMNIFORGE_EXECUTOR_BIN);
  const auto error = server.Start(ServerEnv(database), {"--config", path});
  unlink(path);
  ASSERT_FALSE(error.has_value()) << *error;
  auto stub = pb::ExecutorService::NewStub(
      grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()));
  const auto alice = FreshUser();

  pb::ListToolsRequest request;
  request.add_names("mail__tidy_mailbox");
  request.add_names("mail__search_messages");
  pb::ListToolsResponse named;
  ASSERT_TRUE(stub->ListTools(Call(alice).get(), request, &named).ok());
  ASSERT_EQ(named.tools_size(), 2) << server.JoinedLog();
  for (const auto& tool : named.tools()) {
    EXPECT_EQ(tool.source(), "mail");
    EXPECT_EQ(tool.risk(), pb::TOOL_RISK_WRITE) << tool.name();
  }

  pb::ListToolsRequest reads_only;
  reads_only.set_max_risk(pb::TOOL_RISK_READ);
  pb::ListToolsResponse reads;
  ASSERT_TRUE(stub->ListTools(Call(alice).get(), reads_only, &reads).ok());
  EXPECT_GT(reads.tools_size(), 0);
  for (const auto& tool : reads.tools()) EXPECT_EQ(tool.source(), "builtin") << tool.name();
  const auto status = server.Stop();
  EXPECT_TRUE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << server.JoinedLog();
}

TEST(ExecutorMigrateTest, MigrateAppliesEachMigrationOnceAndExits) {
  testing::TestDatabase database;
  const std::string env = "OMNIFORGE_DATABASE_DSN='" + database.dsn() + "'";
  auto [status, output] = RunBinary(env, "migrate");
  EXPECT_EQ(status, 0) << output;
  EXPECT_THAT(output, HasSubstr("0001_init.sql"));
  EXPECT_THAT(output, HasSubstr("0002_invocation_retention.sql"));
  std::tie(status, output) = RunBinary(env, "migrate");
  EXPECT_EQ(status, 0) << output;
  EXPECT_THAT(output, HasSubstr("\"applied\":\"0\""));
}

}  // namespace
}  // namespace omniforge::executor
