// End-to-end tests of a chat turn over the real stack: PostgreSQL and the
// four service binaries on loopback, in local mode, driven through the
// public ChatService exactly as a gateway client drives it.
//
// What a turn does on its own is proven by the unit tests on fakes
// (orchestrator_turn_*_test); these tests keep the journeys that need the
// real binaries: gRPC wiring, keys and tenants, PostgreSQL, restarts,
// replicas, the append spool, the real intent service, executor and MCP.
// Moved to unit tests (e2e test -> unit test that proves it):
//   AHighRiskActionWaitsForApprovalThenIsCancelledOrDone
//     -> TurnApprovalTest.AHighRiskDeleteWaitsThenCancelKeepsTheAgentAndYesDeletesIt
//   OkButDeleteBetaInsteadNeverDeletesAlpha
//     -> TurnApprovalTest.AChangedTargetIsPreviewedAnewAndTheOldPreviewApprovesNothing
//   StructuredDecisionsApproveOrRejectExactlyThePreviewedAction (cut to
//     AButtonApprovesThePreviewedActionAndAMalformedOneIsRefused)
//     -> TurnApprovalTest.ButtonsApproveOrRejectExactlyThePreviewedActionOnce
//   AtMostTwoClarifyingQuestionsInARow
//     -> TurnGuardrailTest.AtMostTwoClarifyingQuestionsInARowThenTheTurnProceeds
//   ARetriedTurnIsReplayedNotRunAgain
//     -> TurnRunnerTest.ARetriedTurnReplaysItsReplyWithoutRunningAgain,
//        TurnRetryTest.ARetryOfAFinishedModelTurnIsReplayedWithoutAskingTheModel
//   ADraftPlanTheUserDropsNeverRuns -> TurnPlanTest.ADraftPlanTheUserDropsNeverRuns
//   AnAuditPlanOnlyReadsAndRunsAtOnce -> TurnPlanTest.AnAuditPlanOnlyReadsAndRunsAtOnce
//   AWriteTheModelCallsIsPreviewedAndRunsOnlyAfterYes
//     -> TurnApprovalTest.AWriteTheModelCallsIsPreviewedInWordsAndRunsOnYesWithoutTheModel
//   TwoWritesInOneResponseAreBothPreviewedAndBothRunAfterYes
//     -> TurnApprovalTest.TwoWritesInOneAnswerAreBothPreviewedAndBothRunAfterYes
//   AModelObeyingAnInjectedToolResultCannotDeleteWithoutAPreview
//     -> TurnApprovalTest.AModelObeyingAToolResultCannotDeleteWithoutAPreview
//   AReviewedPlanIsRevisedWithTheReviewersNotesThenRuns
//     -> TurnPlanTest.AReviewedPlanIsRevisedWithTheReviewersNotesThenRuns
//   ThePlannerStopsAtItsIterationLimit
//     -> TurnGuardrailTest.TheIterationLimitEndsTheTurnKeepsItsToolsAndIsFiled
//   TheTurnStopsAtItsToolCallLimitAndKeepsWhatWasDone
//     -> TurnGuardrailTest.NineReadsAskedAtOnceStopAtTheEighthAndTheModelIsNotAskedAgain
//   TheModelsQuestionsStopAtTheCapAndAnswersSkipTheAnalysis
//     -> TurnGuardrailTest.TheModelsQuestionsStopAtTheCapAndAnswersSkipTheAnalysis
//   WhenTheModelFailsOnAnAnswerTheTurnProceedsInsteadOfAsking
//     -> TurnGuardrailTest.WhenTheModelFailsOnAnAnswerTheTurnProceedsInsteadOfAsking
#include <gmock/gmock.h>
#include <google/protobuf/util/json_util.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/security/credentials.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"
#include "libs/core/api_keys.h"
#include "libs/core/clock.h"
#include "libs/core/error_reason.h"
#include "libs/core/grpc_identity.h"
#include "libs/core/grpc_status.h"
#include "libs/core/ids.h"
#include "libs/llm/testing/fake_provider.h"
#include "libs/mcp/testing/node_servers.h"
#include "libs/pg/pool.h"
#include "libs/seal/sealed_text.h"
#include "omniforge/conversation/v1/conversation_service.grpc.pb.h"
#include "omniforge/executor/v1/executor_service.grpc.pb.h"
#include "omniforge/orchestrator/v1/chat_service.grpc.pb.h"
#include "services/orchestrator/approvals/approval_gate.h"
#include "services/orchestrator/storage/pg_approval_audit.h"
#include "services/orchestrator/storage/pg_plan_store.h"
#include "services/orchestrator/storage/pg_turn_bus.h"
#include "services/orchestrator/storage/tenant_keys.h"
#include "tests/support/chat_turn.h"
#include "tests/support/command.h"
#include "tests/support/identity_keys.h"
#include "tests/support/master_keys.h"
#include "tests/support/server_process.h"
#include "tests/support/service_stack.h"
#include "tests/support/test_database.h"

namespace omniforge::orchestrator {
namespace {

namespace pb = ::omniforge::orchestrator::v1;
namespace execpb = ::omniforge::executor::v1;
namespace intentpb = ::omniforge::intent::v1;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

// The agent a preview acts on, as the user knows it: its arguments name the
// agent's id (resolved when the preview was made), `affected` its name.
std::string PreviewTarget(const pb::PreviewEvent& preview) {
  const json args = json::parse(preview.arguments_json());
  EXPECT_TRUE(args["agent"].is_string() && args["agent"].get<std::string>().size() == 36)
      << "the target is resolved to its id: " << preview.arguments_json();
  return preview.affected_size() > 0 ? preview.affected(0) : "";
}

constexpr char kMasterKey[] = "4f6d6e69666f7267652d746573742d6d61737465722d6b65792d303030303030";
// More than the tests of a run of the whole program, so none shares a user.
constexpr int kUsers = 64;

using Turn = testing::ChatTurn;

class ChatEndToEndTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    db_ = new testing::TestDatabase();
    dir_ = new std::filesystem::path(std::filesystem::temp_directory_path() /
                                     ("omniforge-e2e-" + core::NewUuid()));
    std::filesystem::create_directories(*dir_);
    std::vector<core::Identity> users;
    users.reserve(kUsers);
    for (int i = 0; i < kUsers; ++i) {
      users.push_back({i == kUsers - 1 ? "globex" : "acme", "user-" + std::to_string(i)});
    }
    const std::vector<std::string> keys =
        testing::WriteApiKeyFile(*dir_ / "api_keys", users, "e2e");
    ASSERT_EQ(keys.size(), users.size());
    keys_ = new std::vector<std::pair<core::Identity, std::string>>();
    for (size_t i = 0; i < users.size(); ++i) keys_->emplace_back(users[i], keys[i]);

    conversation_ = new testing::ServerProcess(OMNIFORGE_CONVERSATION_BIN);
    ASSERT_EQ(conversation_->Start(testing::DatabaseEnv(
                  *db_, "conversation",
                  {std::string("OMNIFORGE_ENCRYPTION_MASTER_KEY=") + kMasterKey,
                   testing::TrustTestKeyEnv()})),
              std::nullopt);
    intent_ = new testing::ServerProcess(OMNIFORGE_INTENT_BIN);
    ASSERT_EQ(intent_->Start(testing::TestIdentityEnv(testing::TestKeyUse::kVerify)), std::nullopt);
    executor_ = new testing::ServerProcess(OMNIFORGE_EXECUTOR_BIN);
    std::vector<std::string> executor_env = testing::TestIdentityEnv(testing::TestKeyUse::kBoth);
    executor_env.push_back(testing::ExecutorMasterKeyEnv());
    ASSERT_EQ(executor_->Start(testing::DatabaseEnv(*db_, "executor", executor_env)), std::nullopt);
    orchestrator_ = new testing::ServerProcess(OMNIFORGE_ORCHESTRATOR_BIN);
    StartOrchestrator();
    executor_stub_ =
        execpb::ExecutorService::NewStub(
            grpc::CreateChannel(executor_->address(), grpc::InsecureChannelCredentials()))
            .release();
    conversation_stub_ =
        conversation::v1::ConversationService::NewStub(
            grpc::CreateChannel(conversation_->address(), grpc::InsecureChannelCredentials()))
            .release();
  }

  // The orchestrator's tenant keys, opened with its master key: what an
  // operator holding that key reads (made once per suite's database).
  static seal::KeyRing& OrchestratorKeys() {
    if (sealing_ == nullptr) {
      pg::PgOptions options;
      options.dsn = db_->service_dsn("orchestrator");
      sealing_ = new Sealing{*pg::PgPool::Create(options), nullptr};
      sealing_->keys =
          std::make_unique<seal::KeyRing>(*sealing_->pool, kOrchestratorKeys,
                                          *seal::KeyRing::ParseMasterKey(kMasterKey), "primary");
    }
    return *sealing_->keys;
  }

  // A value the orchestrator sealed in `table` (a jsonb column's text when
  // `json`), opened; the test fails when it was stored in the clear.
  static std::string Unsealed(const std::string& tenant, std::string_view table,
                              const std::string& row, std::string_view column,
                              const std::string& stored, bool json = false) {
    EXPECT_TRUE(seal::IsSealedText(json ? stored.substr(1) : stored))
        << table << "." << column << " is stored in the clear: " << stored;
    pg::PgOptions options;
    options.dsn = db_->service_dsn("orchestrator");
    auto pool = pg::PgPool::Create(options);
    std::string opened;
    const absl::Status status =
        pg::WithTenantTransaction(**pool, tenant, [&](pqxx::work& tx) -> absl::Status {
          const std::string ad = seal::SealedAd(table, tenant, row, column);
          auto value = json ? seal::OpenJson(OrchestratorKeys(), tx, tenant, stored, ad)
                            : seal::OpenText(OrchestratorKeys(), tx, tenant, stored, ad);
          if (!value.ok()) return value.status();
          opened = *std::move(value);
          return absl::OkStatus();
        });
    EXPECT_TRUE(status.ok()) << status;
    return opened;
  }

  // What every orchestrator of the tests runs with (its spool in `spool`).
  static std::vector<std::string> OrchestratorEnv(std::vector<std::string> env,
                                                  const std::string& spool = "spool") {
    env.insert(env.end(),
               {"OMNIFORGE_AUTH_API_KEYS_FILE=" + (*dir_ / "api_keys").string(),
                "OMNIFORGE_SPOOL_DIR=" + (*dir_ / spool).string(),
                "OMNIFORGE_DOWNSTREAM_CONVERSATION=" + conversation_->address(),
                "OMNIFORGE_DOWNSTREAM_INTENT=" + intent_->address(),
                "OMNIFORGE_DOWNSTREAM_EXECUTOR=" + executor_->address(), "FAKE_LLM_KEY=fake-key",
                std::string("OMNIFORGE_ENCRYPTION_MASTER_KEY=") + kMasterKey});
    const auto identity = testing::TestIdentityEnv(testing::TestKeyUse::kSign);
    env.insert(env.end(), identity.begin(), identity.end());
    return env;
  }

  static void StartOrchestrator(const std::vector<std::string>& args = {},
                                std::vector<std::string> env = {}) {
    ASSERT_EQ(orchestrator_->Start(OrchestratorEnv(std::move(env)), args), std::nullopt);
    stub_ = pb::ChatService::NewStub(
        grpc::CreateChannel(orchestrator_->address(), grpc::InsecureChannelCredentials()));
  }

  static void TearDownTestSuite() {
    delete executor_stub_;
    delete conversation_stub_;
    stub_.reset();
    for (testing::ServerProcess* p : {orchestrator_, executor_, intent_, conversation_}) delete p;
    delete keys_;
    std::filesystem::remove_all(*dir_);
    delete dir_;
    delete sealing_;
    sealing_ = nullptr;
    delete db_;
  }

  // A user of its own for every test (the last key is another tenant's).
  static int NextUser() {
    static int next = 0;
    return next++ % (kUsers - 1);
  }

  void SetUp() override { user_ = NextUser(); }

  const std::string& key() const { return (*keys_)[user_].second; }
  const core::Identity& who() const { return (*keys_)[user_].first; }

  static std::unique_ptr<grpc::ClientContext> Context(const std::string& key) {
    auto context = std::make_unique<grpc::ClientContext>();
    if (!key.empty()) context->AddMetadata("authorization", "Bearer " + key);
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    return context;
  }

  Turn Chat(const std::string& message, const std::string& conversation_id = "",
            const std::string& turn_id = "", const std::string& as_key = "") const {
    pb::StreamChatRequest request;
    request.set_message(message);
    request.set_conversation_id(conversation_id);
    request.set_turn_id(turn_id);
    return Send(request, as_key);
  }

  // A turn from a screen of the client (a project being created, audited).
  Turn ChatIn(pb::ContextType context_type, const std::string& message,
              const std::string& conversation_id = "", const std::string& entity_id = "") const {
    pb::StreamChatRequest request;
    request.set_message(message);
    request.set_conversation_id(conversation_id);
    request.set_context_type(context_type);
    request.set_entity_id(entity_id);
    return Send(request);
  }

  Turn Send(const pb::StreamChatRequest& request, const std::string& as_key = "",
            pb::ChatService::Stub* through = nullptr) const {
    auto context = Context(as_key.empty() ? key() : as_key);
    auto reader = (through != nullptr ? through : stub_.get())->StreamChat(context.get(), request);
    Turn turn;
    testing::ReadToEnd(*reader, turn);
    return turn;
  }

  // Runs a tool as this test's user, straight on the executor.
  json Invoke(const std::string& tool, const json& args) const {
    grpc::ClientContext context;
    core::AttachIdentity(context, who(), core::kExecutorAudience);
    execpb::InvokeToolRequest request;
    request.set_tool_name(tool);
    request.set_arguments_json(args.dump());
    execpb::InvokeToolResponse response;
    grpc::Status status = executor_stub_->InvokeTool(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    json result = json::parse(response.result_json(), nullptr, false);
    if (response.is_error()) result["is_error"] = true;
    return result;
  }

  // The user's two agents of the list tests: listed by name, invoice-chaser
  // comes first.
  // "yes" to a run_agent preview in `conversation` runs `agent`, once.
  void YesRunsTheAgent(const std::string& conversation, const std::string& agent) const {
    Turn yes = Chat("yes", conversation);
    ExpectWellFormed(yes);
    EXPECT_EQ(yes.tools_called(), std::vector<std::string>{"run_agent"});
    const json runs = Invoke("list_runs", json::object());
    ASSERT_EQ(runs["runs"].size(), 1u);
    EXPECT_EQ(runs["runs"][0]["agent_name"], agent);
  }

  void CreateTwoAgents() const {
    Invoke("create_agent", {{"name", "weekly-sales-digest"}, {"description", "Sums up sales"}});
    Invoke("create_agent", {{"name", "invoice-chaser"}, {"description", "Chases invoices"}});
  }

  // Stores a message in `conversation` straight through the conversation
  // service, as another of the user's clients would (not through a turn).
  grpc::Status StoreAsAnotherClient(const std::string& conversation, conversation::v1::Role role,
                                    const std::string& content,
                                    const std::string& metadata_json = "") const {
    conversation::v1::AppendMessageRequest message;
    message.set_conversation_id(conversation);
    message.set_role(role);
    message.set_content(content);
    message.set_metadata_json(metadata_json);
    conversation::v1::AppendMessageResponse stored;
    grpc::ClientContext context;
    core::AttachIdentity(context, who(), core::kConversationAudience);
    return conversation_stub_->AppendMessage(&context, message, &stored);
  }

  // The routing metadata stored with the newest assistant message, read
  // from the conversation service (the public API does not show it).
  json LastRouting(const std::string& conversation) const {
    grpc::ClientContext context;
    core::AttachIdentity(context, who(), core::kConversationAudience);
    ::omniforge::conversation::v1::ListMessagesRequest request;
    request.set_conversation_id(conversation);
    ::omniforge::conversation::v1::ListMessagesResponse messages;
    EXPECT_TRUE(conversation_stub_->ListMessages(&context, request, &messages).ok());
    for (int i = messages.messages_size() - 1; i >= 0; --i) {
      if (messages.messages(i).role() != ::omniforge::conversation::v1::ROLE_ASSISTANT) continue;
      std::string text;
      EXPECT_TRUE(
          google::protobuf::util::MessageToJsonString(messages.messages(i).metadata(), &text).ok());
      return json::parse(text);
    }
    return json::object();
  }

  // The state of the flow the newest reply belongs to, as the orchestrator
  // stored it in orchestration.flows; an empty object when it stored none.
  json LastFlow(const std::string& conversation) const {
    const std::string flow_id = LastRouting(conversation).value("flow_id", "");
    pqxx::connection conn(db_->dsn());
    pqxx::nontransaction tx(conn);
    const pqxx::result rows = tx.exec_params(
        "SELECT state::text, tenant_id FROM orchestration.flows WHERE flow_id = $1", flow_id);
    if (rows.empty() || rows[0][0].is_null()) return json::object();
    return json::parse(Unsealed(rows[0][1].as<std::string>(), "orchestration.flows", flow_id,
                                "state", rows[0][0].as<std::string>(), /*json=*/true));
  }

  // The states the turn went through.
  static std::vector<pb::AgentState> States(const Turn& turn) {
    std::vector<pb::AgentState> states;
    for (const pb::ChatEvent& e : turn.Of(pb::ChatEvent::kAgentState)) {
      states.push_back(e.agent_state().state());
    }
    return states;
  }

  // Checks what every turn guarantees: session first, done last, seq 1..n.
  static void ExpectWellFormed(const Turn& turn) {
    ASSERT_TRUE(turn.status.ok()) << turn.status.error_message();
    ASSERT_GE(turn.events.size(), 3u);
    EXPECT_TRUE(turn.events.front().has_session());
    EXPECT_TRUE(turn.events.back().has_done());
    for (size_t i = 0; i < turn.events.size(); ++i) {
      EXPECT_EQ(turn.events[i].seq(), static_cast<int>(i + 1));
      if (i + 1 < turn.events.size()) {
        EXPECT_FALSE(turn.events[i].has_done());
      }
    }
    EXPECT_EQ(turn.Of(pb::ChatEvent::kIntent).size(), 1u);
  }

  int user_ = 0;
  struct Sealing {
    std::unique_ptr<pg::PgPool> pool;
    std::unique_ptr<seal::KeyRing> keys;
  };
  static Sealing* sealing_;
  static testing::TestDatabase* db_;
  static std::filesystem::path* dir_;
  static std::vector<std::pair<core::Identity, std::string>>* keys_;
  static testing::ServerProcess* conversation_;
  static testing::ServerProcess* intent_;
  static testing::ServerProcess* executor_;
  static testing::ServerProcess* orchestrator_;
  static std::unique_ptr<pb::ChatService::Stub> stub_;
  static execpb::ExecutorService::Stub* executor_stub_;
  // Straight to the conversation service, as another client of the user's.
  static conversation::v1::ConversationService::Stub* conversation_stub_;
};

testing::TestDatabase* ChatEndToEndTest::db_ = nullptr;
ChatEndToEndTest::Sealing* ChatEndToEndTest::sealing_ = nullptr;
std::filesystem::path* ChatEndToEndTest::dir_ = nullptr;
std::vector<std::pair<core::Identity, std::string>>* ChatEndToEndTest::keys_ = nullptr;
testing::ServerProcess* ChatEndToEndTest::conversation_ = nullptr;
testing::ServerProcess* ChatEndToEndTest::intent_ = nullptr;
testing::ServerProcess* ChatEndToEndTest::executor_ = nullptr;
testing::ServerProcess* ChatEndToEndTest::orchestrator_ = nullptr;
std::unique_ptr<pb::ChatService::Stub> ChatEndToEndTest::stub_;
execpb::ExecutorService::Stub* ChatEndToEndTest::executor_stub_ = nullptr;
conversation::v1::ConversationService::Stub* ChatEndToEndTest::conversation_stub_ = nullptr;

TEST_F(ChatEndToEndTest, AProblemInPlainWordsLeadsToAnAgentProposal) {
  Turn turn = Chat("our Monday Notion updates take hours — can you help?");
  ExpectWellFormed(turn);
  EXPECT_TRUE(turn.session().conversation_created());
  EXPECT_FALSE(turn.session().conversation_id().empty());
  EXPECT_EQ(turn.Of(pb::ChatEvent::kIntent)[0].intent().analysis().action_type(),
            pb::ACTION_TYPE_CREATE_AGENT);
  ASSERT_TRUE(turn.preview().has_value());
  EXPECT_EQ(turn.preview()->tool_name(), "create_agent");
  EXPECT_EQ(turn.preview()->risk(), execpb::TOOL_RISK_WRITE);
  EXPECT_THAT(turn.text(), HasSubstr("Shall I go ahead?"));
  EXPECT_FALSE(turn.done().is_final());
  EXPECT_TRUE(turn.tools_called().empty()) << "nothing is written before the user agrees";
  EXPECT_EQ(Invoke("list_agents", json::object())["count"], 0);
}

TEST_F(ChatEndToEndTest, LaterAnswersFillTheDraftAndTheAgentIsCreatedWithAllOfThem) {
  Turn first = Chat("our Monday Notion updates take hours — can you help?");
  ExpectWellFormed(first);
  const std::string conversation = first.session().conversation_id();
  Turn second =
      Chat("make it run every monday at 9am and send it to the team channel", conversation);
  ExpectWellFormed(second);
  ASSERT_TRUE(second.preview().has_value());
  const json draft = json::parse(second.preview()->arguments_json());
  EXPECT_EQ(draft["schedule"], "every monday at 9am");
  EXPECT_EQ(draft["config"]["recipients"], "the team channel");
  EXPECT_EQ(draft["config"]["data_source"], "notion");
  EXPECT_EQ(second.session().flow_id(), first.session().flow_id());

  Turn third = Chat("yes, do that", conversation);
  ExpectWellFormed(third);
  EXPECT_EQ(third.tools_called(), std::vector<std::string>{"create_agent"});
  auto results = third.Of(pb::ChatEvent::kToolResult);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_FALSE(results[0].tool_result().is_error()) << results[0].tool_result().result_json();
  EXPECT_TRUE(third.done().is_final());

  const json agent = Invoke("get_agent", {{"agent", draft["name"]}})["agent"];
  EXPECT_EQ(agent["schedule"], "every Monday at 09:00 (UTC)");
  EXPECT_EQ(agent["schedule_cron"], "0 9 * * 1");
  EXPECT_EQ(agent["config"]["recipients"], "the team channel");
  EXPECT_EQ(agent["config"]["data_source"], "notion");
}

// Local mode, no model: an agent drafted by chatting is runnable. Its kind
// and the project it reads give it instructions and a step; approved, it is
// created with them; run now, its output lists the project's real tasks and
// the run is stored with its tool call.
TEST_F(ChatEndToEndTest, ADigestAgentDraftedByChattingRunsAndListsTheProjectsTasks) {
  Invoke("create_project_template",
         {{"name", "Harbor plan"},
          {"tasks", {{{"title", "Book the ferry"}}, {{"title", "Print the badges"}}}}});
  Invoke("create_project", {{"name", "Harbor"}, {"template", "Harbor plan"}});
  Turn draft = Chat("I need an agent that posts a weekly digest of the Harbor project");
  ExpectWellFormed(draft);
  ASSERT_TRUE(draft.preview().has_value()) << draft.text();
  const json args = json::parse(draft.preview()->arguments_json());
  EXPECT_EQ(args["config"]["kind"], "digest");
  EXPECT_EQ(args["steps"][0]["tool"], "list_tasks");
  EXPECT_EQ(args["steps"][0]["arguments"]["project"], "Harbor");
  EXPECT_EQ(args["tools"], json::array({"list_tasks"}));
  EXPECT_THAT(args["instructions"].get<std::string>(),
              HasSubstr("read the project 'Harbor' and sum up what is new"));
  EXPECT_THAT(draft.text(), HasSubstr("Each run it lists the tasks of 'Harbor'."));
  EXPECT_THAT(draft.text(), HasSubstr("It runs every Monday at 09:00 (UTC)."));
  const std::string conversation = draft.session().conversation_id();
  Turn yes = Chat("yes", conversation);
  EXPECT_EQ(yes.tools_called(), std::vector<std::string>{"create_agent"}) << yes.text();

  Turn run = Chat("run " + args["name"].get<std::string>() + " now", conversation);
  ASSERT_TRUE(run.preview().has_value()) << run.text();
  Turn ran = Chat("yes", conversation);
  EXPECT_EQ(ran.tools_called(), std::vector<std::string>{"run_agent"}) << ran.text();
  EXPECT_THAT(ran.text(), HasSubstr("ran (succeeded)."));
  EXPECT_THAT(ran.text(), HasSubstr("- Book the ferry (todo)"));
  EXPECT_THAT(ran.text(), HasSubstr("- Print the badges (todo)"));
  const json runs = Invoke("list_runs", {{"agent", args["name"]}});
  ASSERT_EQ(runs["count"], 1);
  const json stored = Invoke("get_run", {{"run_id", runs["runs"][0]["id"]}})["run"];
  EXPECT_EQ(stored["status"], "succeeded");
  ASSERT_EQ(stored["tool_calls"].size(), 1u);
  EXPECT_EQ(stored["tool_calls"][0]["tool"], "list_tasks");
  EXPECT_EQ(stored["tool_calls"][0]["result"]["tasks"].size(), 2u);
}

// A scheduled run that failed while the user was away is told at their
// next turn, once, in their time zone, before the reply; the next turn no
// longer has it. (The scheduler's own tests fire and fail runs; here the
// run is in the table as the scheduler leaves it.)
TEST_F(ChatEndToEndTest, AFailedScheduledRunIsToldOnceAtTheUsersNextTurn) {
  Invoke("update_settings", {{"time_zone", "Europe/Berlin"}});
  const json agent =
      Invoke("create_agent",
             {{"name", "harbor-digest"},
              {"description", "The tasks of Harbor"},
              {"schedule", "every monday at 9am"},
              {"steps", {{{"tool", "list_tasks"}, {"arguments", {{"project", "Harbor"}}}}}}});
  ASSERT_EQ(agent["agent"]["time_zone"], "Europe/Berlin") << agent.dump();
  {
    pqxx::connection conn(db_->dsn());
    pqxx::work tx(conn);
    tx.exec_params(
        "INSERT INTO platform.runs (tenant_id, id, user_id, agent_id, agent_name, status, trigger, "
        "slot, error, started_at, finished_at) VALUES ($1, $2::uuid, $3, $4::uuid, "
        "'harbor-digest', 'failed', 'schedule', '2026-11-23 08:00+00', $5, "
        "'2026-11-23 08:00+00', '2026-11-23 08:00:01+00')",
        who().tenant_id, core::NewUuid(), who().user_id, agent["agent"]["id"].get<std::string>(),
        "no project matches 'Harbor'");
    tx.commit();
  }
  Turn first = Chat("list my agents");
  ExpectWellFormed(first);
  const auto notices = first.Of(pb::ChatEvent::kNotice);
  ASSERT_EQ(notices.size(), 1u) << first.text();
  EXPECT_EQ(notices[0].notice().kind(), pb::NOTICE_KIND_RUN_FAILED);
  EXPECT_EQ(notices[0].notice().agent_name(), "harbor-digest");
  EXPECT_EQ(notices[0].notice().agent_id(), agent["agent"]["id"]);
  EXPECT_EQ(notices[0].notice().error(), "no project matches 'Harbor'");
  EXPECT_THAT(first.text(),
              ::testing::StartsWith("Your agent 'harbor-digest' failed on its scheduled run of "
                                    "Monday 23 November at 09:00 (Europe/Berlin): no project "
                                    "matches 'Harbor'."));
  EXPECT_THAT(first.text(), HasSubstr("1. harbor-digest"));  // the reply itself follows
  Turn second = Chat("list my agents", first.session().conversation_id());
  EXPECT_TRUE(second.Of(pb::ChatEvent::kNotice).empty());
  EXPECT_THAT(second.text(), ::testing::Not(HasSubstr("failed")));
  Turn elsewhere = Chat("list my agents");  // a new conversation: told already
  EXPECT_TRUE(elsewhere.Of(pb::ChatEvent::kNotice).empty());
}

// The user's time zone, said in words: previewed, set on "yes", and then
// the zone a new agent's schedule is read in.
TEST_F(ChatEndToEndTest, TheUsersTimeZoneIsSetByChattingAndNewSchedulesAreReadInIt) {
  Turn set = Chat("set my time zone to Europe/Berlin");
  ExpectWellFormed(set);
  ASSERT_TRUE(set.preview().has_value()) << set.text();
  EXPECT_EQ(set.preview()->tool_name(), "update_settings");
  EXPECT_EQ(Invoke("get_settings", json::object())["settings"]["time_zone"], "UTC");
  Turn yes = Chat("yes", set.session().conversation_id());
  EXPECT_EQ(yes.tools_called(), std::vector<std::string>{"update_settings"}) << yes.text();
  EXPECT_THAT(yes.text(), HasSubstr("your time zone is Europe/Berlin"));
  EXPECT_EQ(Invoke("get_settings", json::object())["settings"]["time_zone"], "Europe/Berlin");

  Turn asked = Chat("what's my time zone?");
  EXPECT_THAT(asked.text(), HasSubstr("Your time zone is Europe/Berlin"));
  Turn draft = Chat("I need an agent that posts a weekly digest of the Harbor project");
  ASSERT_TRUE(draft.preview().has_value()) << draft.text();
  EXPECT_EQ(json::parse(draft.preview()->arguments_json())["time_zone"], "Europe/Berlin");
  EXPECT_THAT(draft.text(), HasSubstr("It runs every Monday at 09:00 (Europe/Berlin)."));
}

TEST_F(ChatEndToEndTest, ListThenRunTheFirstOneRunsTheRightAgent) {
  CreateTwoAgents();
  Turn list = Chat("list my agents");
  ExpectWellFormed(list);
  EXPECT_EQ(list.tools_called(), std::vector<std::string>{"list_agents"});
  EXPECT_THAT(list.text(), HasSubstr("1. invoice-chaser"));
  EXPECT_THAT(list.text(), HasSubstr("2. weekly-sales-digest"));
  // What the client shows while it waits: thinking, then the tool running.
  const std::vector<pb::AgentState> states = States(list);
  ASSERT_GE(states.size(), 2u);
  EXPECT_EQ(states.front(), pb::AGENT_STATE_THINKING);
  EXPECT_THAT(states, ::testing::Contains(pb::AGENT_STATE_EXECUTING_TOOL));
  bool named = false;
  for (const pb::ChatEvent& e : list.Of(pb::ChatEvent::kAgentState)) {
    named |= e.agent_state().state() == pb::AGENT_STATE_EXECUTING_TOOL &&
             e.agent_state().details().find("list_agents") != std::string::npos;
  }
  EXPECT_TRUE(named) << "the running tool is named in the state's details";
  const std::string conversation = list.session().conversation_id();

  Turn run = Chat("run the first one", conversation);
  ExpectWellFormed(run);
  ASSERT_TRUE(run.preview().has_value());
  EXPECT_EQ(run.preview()->tool_name(), "run_agent");
  EXPECT_EQ(PreviewTarget(*run.preview()), "invoice-chaser");

  YesRunsTheAgent(conversation, "invoice-chaser");
}

// The next turn's analysis starts with the agents the user had at the last
// turn while they are listed again; an agent made in between (here straight
// through the executor, as the platform's own pages would) is one the
// analysis must know.
TEST_F(ChatEndToEndTest, AnAgentMadeBetweenTurnsIsOneTheNextTurnKnows) {
  CreateTwoAgents();
  Turn list = Chat("list my agents");
  ExpectWellFormed(list);
  const std::string conversation_id = list.session().conversation_id();

  Invoke("create_agent", {{"name", "standup-notes"}, {"description", "Writes standup notes"}});
  Turn run = Chat("run standup-notes", conversation_id);
  ExpectWellFormed(run);
  ASSERT_TRUE(run.preview().has_value()) << run.text();
  EXPECT_EQ(run.preview()->tool_name(), "run_agent");
  EXPECT_EQ(PreviewTarget(*run.preview()), "standup-notes");

  // With nothing changed, the next turn reads the same agents.
  Turn again = Chat("run invoice-chaser", conversation_id);
  ExpectWellFormed(again);
  ASSERT_TRUE(again.preview().has_value()) << again.text();
  EXPECT_EQ(PreviewTarget(*again.preview()), "invoice-chaser");
}

// The next turn's analysis starts while its message is stored, from the
// window kept after the last turn; a reply stored in between by another
// client makes that window stale, and the analysis must see the new reply.
TEST_F(ChatEndToEndTest, AListStoredBetweenTurnsByAnotherClientIsTheOneTheNextTurnReads) {
  CreateTwoAgents();
  Turn list = Chat("list my agents");
  ExpectWellFormed(list);
  EXPECT_THAT(list.text(), HasSubstr("1. invoice-chaser"));
  const std::string conversation_id = list.session().conversation_id();

  // Another client stores a reply listing them the other way round.
  ASSERT_TRUE(StoreAsAnotherClient(
                  conversation_id, conversation::v1::ROLE_ASSISTANT,
                  "Your agents:\n1. weekly-sales-digest\n2. invoice-chaser",
                  json{{"listed_agents", {"weekly-sales-digest", "invoice-chaser"}}}.dump())
                  .ok());

  Turn run = Chat("run the first one", conversation_id);
  ExpectWellFormed(run);
  const pb::IntentAnalysis analysis = run.Of(pb::ChatEvent::kIntent)[0].intent().analysis();
  EXPECT_EQ(analysis.entities().at("agent_name"), "weekly-sales-digest");
  ASSERT_TRUE(run.preview().has_value());
  EXPECT_EQ(PreviewTarget(*run.preview()), "weekly-sales-digest");

  // Without anything in between, the next turn reads the kept window.
  Turn cancel = Chat("cancel", conversation_id);
  ExpectWellFormed(cancel);
  Turn again = Chat("list my agents", conversation_id);
  ExpectWellFormed(again);
  Turn second = Chat("run the second one", conversation_id);
  ExpectWellFormed(second);
  EXPECT_EQ(second.Of(pb::ChatEvent::kIntent)[0].intent().analysis().entities().at("agent_name"),
            "weekly-sales-digest");
}

TEST_F(ChatEndToEndTest, AnUnclearRequestGetsOptionsTiedToTheUsersAgents) {
  CreateTwoAgents();
  Turn ask = Chat("run one of my agents");
  ExpectWellFormed(ask);
  EXPECT_THAT(ask.text(), HasSubstr("Which agent should I run?"));
  EXPECT_THAT(ask.text(), HasSubstr("1. invoice-chaser"));
  EXPECT_FALSE(ask.done().is_final());
  Turn answer = Chat("the second one", ask.session().conversation_id());
  ExpectWellFormed(answer);
  ASSERT_TRUE(answer.preview().has_value());
  EXPECT_EQ(PreviewTarget(*answer.preview()), "weekly-sales-digest");
  // The answer continues the flow: the intent service read it as the
  // answer to the question (the agent it picks), the flow keeps its action.
  EXPECT_EQ(answer.session().flow_id(), ask.session().flow_id());
  const pb::IntentAnalysis merged = answer.Of(pb::ChatEvent::kIntent)[0].intent().analysis();
  EXPECT_EQ(merged.source(), pb::INTENT_SOURCE_FAST_PATH);
  EXPECT_EQ(merged.action_type(), pb::ACTION_TYPE_EXECUTE_TASK);
  EXPECT_THAT(merged.reasoning(), HasSubstr("clarifying question"));
}

// "where were we?" once an agent is created and a run of it waits: the
// recap names what the user came for, the agent created (from the stored
// history) and the run waiting for approval (from the flow), runs nothing,
// and the run still waits for its "yes".
TEST_F(ChatEndToEndTest, WhereWereWeRecapsTheGoalWhatWasDoneAndWhatIsStillOpen) {
  Turn first = Chat("our Monday Notion updates take hours — can you help?");
  ExpectWellFormed(first);
  const std::string conversation = first.session().conversation_id();
  ASSERT_TRUE(first.preview().has_value());
  const std::string name = json::parse(first.preview()->arguments_json())["name"];
  ExpectWellFormed(
      Chat("make it run every monday at 9am and send it to the team channel", conversation));
  ExpectWellFormed(Chat("yes, do that", conversation));
  Turn run = Chat("run " + name + " now", conversation);
  ExpectWellFormed(run);
  ASSERT_TRUE(run.preview().has_value()) << run.text();

  for (const char* asked : {"where were we?", "what did we decide so far", "recap?"}) {
    Turn recap = Chat(asked, conversation);
    ExpectWellFormed(recap);
    const std::string text = recap.text();
    EXPECT_TRUE(recap.Of(pb::ChatEvent::kIntent)[0].intent().analysis().summary_worthy()) << asked;
    EXPECT_THAT(text, HasSubstr("You came to me with: \"our Monday Notion updates take hours"))
        << asked;
    EXPECT_THAT(text, HasSubstr("Done so far:\n- the agent '" + name +
                                "' is created and runs every Monday at 09:00 (UTC)"))
        << asked;
    EXPECT_THAT(text, HasSubstr("Still open:\n- waiting for your approval: run '" + name + "' now"))
        << asked;
    EXPECT_TRUE(recap.tools_called().empty()) << asked;
    EXPECT_FALSE(recap.done().is_final()) << "the run still waits: " << asked;
  }
  EXPECT_EQ(Invoke("list_runs", json::object())["runs"].size(), 0u);
  YesRunsTheAgent(conversation, name);
}

// A conversation another client stored as plain text (no routing): the
// recap reads the words, what was done in them and the question left open.
TEST_F(ChatEndToEndTest, ARecapReadsPlainTextTurnsToo) {
  Turn hello = Chat("hi");
  ExpectWellFormed(hello);
  const std::string conversation = hello.session().conversation_id();
  ASSERT_TRUE(StoreAsAnotherClient(conversation, conversation::v1::ROLE_USER,
                                   "we keep losing track of overdue invoices")
                  .ok());
  ASSERT_TRUE(StoreAsAnotherClient(conversation, conversation::v1::ROLE_ASSISTANT,
                                   "Done: 'invoice-chaser' ran (succeeded).")
                  .ok());
  ASSERT_TRUE(StoreAsAnotherClient(conversation, conversation::v1::ROLE_ASSISTANT,
                                   "Who should get the weekly summary?")
                  .ok());
  Turn recap = Chat("where were we?", conversation);
  ExpectWellFormed(recap);
  EXPECT_THAT(recap.text(),
              HasSubstr("You came to me with: \"we keep losing track of overdue invoices\""));
  EXPECT_THAT(recap.text(), HasSubstr("Done so far:\n- 'invoice-chaser' ran (succeeded)"));
  EXPECT_THAT(recap.text(), HasSubstr("Still open:\n- my question is not answered yet: \"Who "
                                      "should get the weekly summary?\""));
}

// A request of two parts one agent covers in part: the reply names the
// agent, the part it covers (and what it does) and the part it does not,
// and offers three ways on; the number of one picks it.
TEST_F(ChatEndToEndTest, ATwoPartRequestSaysWhichAgentPartlyFitsAndOffersThreeWaysOn) {
  Invoke("create_agent", {{"name", "weekly-sales-digest"},
                          {"description", "Emails the sales team the deals closed each week"}});
  Invoke("create_agent",
         {{"name", "invoice-chaser"}, {"description", "Reminds customers about overdue invoices"}});
  Turn ask = Chat(
      "can one of my agents chase the overdue invoices and also post a weekly summary to slack?");
  ExpectWellFormed(ask);
  const std::string text = ask.text();
  EXPECT_THAT(text, HasSubstr("'invoice-chaser' partly fits: it covers \"chase the overdue "
                              "invoices\" (it reminds customers about overdue invoices), but "
                              "not \"post a weekly summary to slack\"."));
  EXPECT_THAT(text, HasSubstr("None of your agents does that part."));
  EXPECT_THAT(text, HasSubstr("\n1. Run 'invoice-chaser' anyway"));
  EXPECT_THAT(text, HasSubstr("\n2. Create a new agent that does both"));
  EXPECT_THAT(text, HasSubstr("\n3. Change 'invoice-chaser' so that it also does this: post a "
                              "weekly summary to slack."));
  EXPECT_FALSE(ask.preview().has_value()) << "nothing is drafted before the user picks";
  EXPECT_TRUE(ask.tools_called().empty());
  EXPECT_FALSE(ask.done().is_final());

  Turn pick = Chat("2", ask.session().conversation_id());
  ExpectWellFormed(pick);
  ASSERT_TRUE(pick.preview().has_value()) << pick.text();
  EXPECT_EQ(pick.preview()->tool_name(), "create_agent");
  EXPECT_THAT(json::parse(pick.preview()->arguments_json())["description"].get<std::string>(),
              HasSubstr("Chase the overdue invoices and post a weekly summary to slack"));
  EXPECT_EQ(pick.session().flow_id(), ask.session().flow_id());

  // A vaguer question about the user's agents gets the same answer.
  Turn vague = Chat("is there an agent that chases late invoices and posts a summary to slack");
  ExpectWellFormed(vague);
  EXPECT_THAT(vague.text(), HasSubstr("'invoice-chaser' partly fits: it covers \"chases late "
                                      "invoices\""));
  EXPECT_THAT(vague.text(), HasSubstr("3. Change 'invoice-chaser'"));
}

// A client's buttons over gRPC: an approval by action id runs the previewed
// delete on the executor; a malformed decision is refused as bad input.
// (Rejecting, a second click and words beside a decision:
// TurnApprovalTest.ButtonsApproveOrRejectExactlyThePreviewedActionOnce.)
TEST_F(ChatEndToEndTest, AButtonApprovesThePreviewedActionAndAMalformedOneIsRefused) {
  Invoke("create_agent", {{"name", "invoice-chaser"}, {"description", "Chases invoices"}});
  Turn ask = Chat("delete invoice-chaser");
  ASSERT_TRUE(ask.preview().has_value());
  const std::string conversation = ask.session().conversation_id();
  pb::StreamChatRequest approve;
  approve.set_conversation_id(conversation);
  approve.mutable_decision()->set_kind(pb::DECISION_KIND_APPROVE);
  approve.mutable_decision()->set_action_id(ask.preview()->action_id());
  Turn yes = Send(approve);
  ExpectWellFormed(yes);
  EXPECT_EQ(yes.tools_called(), std::vector<std::string>{"delete_agent"});
  EXPECT_EQ(Invoke("list_agents", json::object())["count"], 0);

  pb::StreamChatRequest bad;
  bad.set_conversation_id(conversation);
  bad.mutable_decision()->set_kind(static_cast<pb::DecisionKind>(42));
  bad.mutable_decision()->set_action_id("x");
  EXPECT_EQ(Send(bad).status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  pb::StreamChatRequest args_on_approve = approve;
  args_on_approve.mutable_decision()->set_arguments_json("{}");
  EXPECT_EQ(Send(args_on_approve).status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  pb::StreamChatRequest no_id = approve;
  no_id.mutable_decision()->clear_action_id();
  EXPECT_EQ(Send(no_id).status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

// The turn's notice that storage was unreachable (nullopt when none came).
std::optional<pb::ErrorEvent> StorageNotice(const Turn& turn) {
  for (const pb::ChatEvent& e : turn.Of(pb::ChatEvent::kError)) {
    if (e.error().code() == pb::CHAT_ERROR_CODE_STORAGE_UNAVAILABLE) return e.error();
  }
  return std::nullopt;
}

// The orchestrator's /metrics page.
std::string MetricsOf(const testing::ServerProcess& process) {
  httplib::Client client("127.0.0.1", process.metrics_port());
  client.set_connection_timeout(5);
  client.set_read_timeout(5);
  auto page = client.Get("/metrics");
  return page && page->status == 200 ? page->body : "";
}

// The previous release stored the whole flow in the reply's routing (no
// `format`): a conversation in flight across the upgrade goes on from it
// when the flow store has no state for the flow (here: no database).
TEST_F(ChatEndToEndTest, AnActionPreviewedBeforeTheUpgradeRunsOnYes) {
  Turn hello = Chat("list my agents");
  ExpectWellFormed(hello);
  const std::string conversation = hello.session().conversation_id();
  const json arguments = {{"name", "invoice-chaser"},
                          {"description", "Chases late invoices"},
                          {"schedule", "every friday at 4pm"}};
  const std::string flow = "flow-" + core::NewUuid();
  const json old_routing = {{"turn_id", "turn-before-the-upgrade"},
                            {"flow_id", flow},
                            {"goal", "our invoices are always paid late"},
                            {"action_type", "ACTION_TYPE_CREATE_AGENT"},
                            {"entities", json::object()},
                            {"listed_agents", json::array()},
                            {"pending_action", true},
                            {"pending_actions",
                             {{{"action_id", "action-before-the-upgrade"},
                               {"tool", "create_agent"},
                               {"arguments", arguments},
                               {"risk", "TOOL_RISK_WRITE"},
                               {"summary", "Create the agent invoice-chaser"},
                               {"digest", ActionDigest("create_agent", arguments)},
                               {"expires_at_micros", core::NowMicros() + 600'000'000},
                               {"targets", json::object()}}}},
                            {"clarifications", 0},
                            {"tools_used", json::array()},
                            {"context_box", {{"goal", "our invoices are always paid late"}}}};
  ASSERT_TRUE(StoreAsAnotherClient(conversation, conversation::v1::ROLE_USER,
                                   "our invoices are always paid late")
                  .ok());
  ASSERT_TRUE(StoreAsAnotherClient(conversation, conversation::v1::ROLE_ASSISTANT,
                                   "I can create invoice-chaser. Shall I go ahead?",
                                   old_routing.dump())
                  .ok());

  Turn yes = Chat("yes", conversation);
  ExpectWellFormed(yes);
  EXPECT_EQ(yes.session().flow_id(), flow) << "the flow of the earlier reply goes on";
  EXPECT_EQ(yes.tools_called(), std::vector<std::string>{"create_agent"});
  EXPECT_EQ(Invoke("get_agent", {{"agent", "invoice-chaser"}})["agent"]["schedule"],
            "every Friday at 16:00 (UTC)");
  EXPECT_EQ(LastRouting(conversation)["format"], 2) << "the reply is stored as a projection";
}

TEST_F(ChatEndToEndTest, WithStorageDownTurnsStillAnswerAndTheirMessagesAreStoredOnceItIsBack) {
  Turn first = Chat("list my agents");
  ExpectWellFormed(first);
  EXPECT_FALSE(StorageNotice(first).has_value());
  const std::string conversation = first.session().conversation_id();
  const int port = conversation_->port();
  // The conversation service dies.
  conversation_->Stop(std::chrono::seconds(0));

  // The reply still streams, and the client learns this turn is not
  // remembered yet.
  Turn offline = Chat("what can you do for me?", conversation, "offline-1");
  ExpectWellFormed(offline);
  EXPECT_FALSE(offline.text().empty());
  std::optional<pb::ErrorEvent> notice = StorageNotice(offline);
  ASSERT_TRUE(notice.has_value());
  EXPECT_FALSE(notice->fatal());
  EXPECT_THAT(notice->message(), HasSubstr("not remembered yet"));
  EXPECT_EQ(offline.session().conversation_id(), conversation);
  EXPECT_TRUE(offline.done().assistant_message_id().empty());
  // The same conversation named in upper case is the same conversation: one
  // queue in the spool, and the id comes back in its one (lower-case) form.
  Turn offline_again = Chat("list my agents", absl::AsciiStrToUpper(conversation), "offline-2");
  ExpectWellFormed(offline_again);
  ASSERT_TRUE(StorageNotice(offline_again).has_value());
  EXPECT_EQ(offline_again.session().conversation_id(), conversation);

  // A new conversation cannot be started: answered, nothing stored.
  Turn fresh = Chat("hello, what is this?");
  ExpectWellFormed(fresh);
  EXPECT_TRUE(fresh.session().conversation_id().empty());
  EXPECT_FALSE(fresh.session().conversation_created());
  ASSERT_TRUE(StorageNotice(fresh).has_value());
  EXPECT_THAT(StorageNotice(fresh)->message(), HasSubstr("not remembered"));
  EXPECT_FALSE(fresh.text().empty());

  const std::string spooled = MetricsOf(*orchestrator_);
  EXPECT_THAT(spooled, HasSubstr("omniforge_orchestrator_spooled_appends_total 4\n"));
  EXPECT_THAT(spooled, HasSubstr("omniforge_orchestrator_spool_depth 4\n"));

  // The orchestrator restarts with both turns still spooled, then storage
  // comes back.
  orchestrator_->Stop();
  StartOrchestrator();
  bool found_spooled = false;
  for (const std::string& line : orchestrator_->LogLines()) {
    if (line.find("left by an earlier process") != std::string::npos) {
      found_spooled = testing::LogField(line, "messages") == "4";
    }
  }
  EXPECT_TRUE(found_spooled) << orchestrator_->JoinedLog();
  ASSERT_EQ(conversation_->Start(testing::DatabaseEnv(
                *db_, "conversation",
                {std::string("OMNIFORGE_ENCRYPTION_MASTER_KEY=") + kMasterKey,
                 "OMNIFORGE_SERVER_PORT=" + std::to_string(port), testing::TrustTestKeyEnv()})),
            std::nullopt);

  // Every message lands, in order, exactly once.
  pb::ListMessagesResponse messages;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (std::chrono::steady_clock::now() < give_up) {
    auto context = Context(key());
    pb::ListMessagesRequest request;
    request.set_conversation_id(conversation);
    messages.Clear();
    if (stub_->ListMessages(context.get(), request, &messages).ok() &&
        messages.messages_size() >= 6) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(messages.messages_size(), 6);
  const std::string drained = MetricsOf(*orchestrator_);
  EXPECT_THAT(
      drained,
      HasSubstr("omniforge_orchestrator_spool_drained_appends_total{outcome=\"stored\"} 4\n"));
  EXPECT_THAT(drained, HasSubstr("omniforge_orchestrator_spool_depth 0\n"));
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"user", "list my agents"},          {"assistant", first.text()},
      {"user", "what can you do for me?"}, {"assistant", offline.text()},
      {"user", "list my agents"},          {"assistant", offline_again.text()}};
  for (int i = 0; i < 6; ++i) {
    const auto& m = messages.messages(i);
    EXPECT_EQ(m.role() == pb::ROLE_USER ? "user" : "assistant", expected[i].first) << i;
    EXPECT_EQ(m.content(), expected[i].second) << i;
  }
  EXPECT_EQ(messages.messages(3).turn_id(), "offline-1");

  // The stored turn is now what a retry of it replays; nothing is added.
  Turn retried = Chat("what can you do for me?", conversation, "offline-1");
  ASSERT_TRUE(retried.status.ok()) << retried.status.error_message();
  EXPECT_TRUE(retried.session().replayed());
  EXPECT_EQ(retried.text(), offline.text());
  auto context = Context(key());
  pb::ListMessagesRequest request;
  request.set_conversation_id(conversation);
  ASSERT_TRUE(stub_->ListMessages(context.get(), request, &messages).ok());
  EXPECT_EQ(messages.messages_size(), 6);
}

// The history a client reads: the public fields, never the routing metadata
// the orchestrator stores with a reply, nor the tenant or user.
TEST_F(ChatEndToEndTest, HistoryReadsThroughWithPublicFieldsOnly) {
  Turn turn = Chat("list my agents");
  ExpectWellFormed(turn);
  const std::string conversation = turn.session().conversation_id();
  auto context = Context(key());
  pb::ListMessagesRequest request;
  request.set_conversation_id(conversation);
  pb::ListMessagesResponse messages;
  ASSERT_TRUE(stub_->ListMessages(context.get(), request, &messages).ok());
  ASSERT_EQ(messages.messages_size(), 2);
  EXPECT_EQ(messages.messages(0).content(), "list my agents");
  EXPECT_EQ(messages.messages(1).content(), turn.text());
  EXPECT_EQ(messages.messages(0).role(), pb::ROLE_USER);
  EXPECT_EQ(messages.messages(1).role(), pb::ROLE_ASSISTANT);
  EXPECT_EQ(messages.messages(0).turn_id(), turn.session().turn_id());
  EXPECT_EQ(messages.messages(1).turn_id(), turn.session().turn_id());
  EXPECT_EQ(messages.messages(1).id(), turn.done().assistant_message_id());
  EXPECT_EQ(messages.messages(1).seq(), 2);
  EXPECT_FALSE(messages.messages(0).secrets_masked());
  // What the orchestrator stored with the reply is there, and not shown.
  ASSERT_TRUE(LastRouting(conversation).contains("flow_id"));
  const std::string flow_id = LastRouting(conversation)["flow_id"];
  std::string shown;
  ASSERT_TRUE(google::protobuf::util::MessageToJsonString(messages, &shown).ok());
  EXPECT_THAT(shown, Not(HasSubstr(flow_id)));
  EXPECT_THAT(shown, Not(HasSubstr("listed_agents")));

  context = Context(key());
  pb::ListConversationsResponse list;
  ASSERT_TRUE(stub_->ListConversations(context.get(), pb::ListConversationsRequest(), &list).ok());
  ASSERT_GE(list.conversations_size(), 1);
  EXPECT_EQ(list.conversations(0).id(), conversation);

  context = Context(key());
  pb::GetConversationRequest get;
  get.set_conversation_id(conversation);
  pb::GetConversationResponse got;
  ASSERT_TRUE(stub_->GetConversation(context.get(), get, &got).ok());
  EXPECT_EQ(got.conversation().id(), conversation);
  EXPECT_EQ(got.conversation().message_count(), 2);
  ASSERT_TRUE(google::protobuf::util::MessageToJsonString(got, &shown).ok());
  EXPECT_THAT(shown, Not(HasSubstr(who().tenant_id)));
}

// The key file is read again on SIGHUP and when it changes: a new key works,
// a revoked or expired one stops working, all without a restart.
TEST_F(ChatEndToEndTest, NewRevokedAndExpiredKeysTakeEffectWithoutARestart) {
  const std::filesystem::path file = *dir_ / "api_keys";
  std::string original;
  {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    original = text.str();
  }
  // Replaces the file as a Secret update does (a new file renamed over it).
  auto write_keys = [&](const std::string& text) {
    std::ofstream(*dir_ / "api_keys.next") << text;
    std::filesystem::rename(*dir_ / "api_keys.next", file);
  };
  auto list = [](const std::string& as_key) {
    auto context = Context(as_key);
    pb::ListConversationsResponse response;
    return stub_->ListConversations(context.get(), pb::ListConversationsRequest(), &response);
  };
  struct Restore {
    std::function<void()> run;
    ~Restore() { run(); }
  } restore{[&] {
    write_keys(original);
    orchestrator_->Stop();
    StartOrchestrator();
  }};
  auto newcomer = core::GenerateApiKey({"acme", "newcomer"}, "");
  auto expired = core::GenerateApiKey({"acme", "expired"}, "", core::NowMicros() - 1'000'000);
  ASSERT_TRUE(newcomer.ok() && expired.ok());

  // Without looking at the file, only SIGHUP reads it.
  orchestrator_->Stop();
  StartOrchestrator({}, {"OMNIFORGE_AUTH_RELOAD_INTERVAL_MS=0"});
  write_keys(original + newcomer->file_line + "\n" + expired->file_line + "\n");
  EXPECT_EQ(list(newcomer->key).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  ASSERT_EQ(::kill(orchestrator_->pid(), SIGHUP), 0);
  grpc::Status status;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
       std::chrono::steady_clock::now() < until;
       std::this_thread::sleep_for(std::chrono::milliseconds(20))) {
    if ((status = list(newcomer->key)).ok()) break;
  }
  EXPECT_TRUE(status.ok()) << status.error_message();
  Turn turn = Chat("list my agents", "", "", newcomer->key);
  ExpectWellFormed(turn);
  const grpc::Status late = list(expired->key);
  EXPECT_EQ(late.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(late.error_message(), HasSubstr("API key expired at"));
  EXPECT_TRUE(list(key()).ok());

  // Watching the file (the default, here every 100 ms): the newcomer's key
  // revoked stops working; a broken file changes nothing.
  orchestrator_->Stop();
  StartOrchestrator({}, {"OMNIFORGE_AUTH_RELOAD_INTERVAL_MS=100"});
  EXPECT_TRUE(list(newcomer->key).ok());
  write_keys(original);
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
       std::chrono::steady_clock::now() < until;
       std::this_thread::sleep_for(std::chrono::milliseconds(20))) {
    if (!(status = list(newcomer->key)).ok()) break;
  }
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  write_keys("this is not a key file\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_TRUE(list(key()).ok()) << "the keys read last stay";
  EXPECT_THAT(orchestrator_->JoinedLog(), HasSubstr("API key file not reloaded"));
}

TEST_F(ChatEndToEndTest, CredentialsAndTenantsAreChecked) {
  Turn mine = Chat("list my agents");
  ExpectWellFormed(mine);
  const std::string conversation = mine.session().conversation_id();

  pb::StreamChatRequest request;
  request.set_message("hello");
  for (const std::string& bad : {std::string(), std::string("ofk_nope"), key() + "0"}) {
    auto context = Context(bad);
    auto reader = stub_->StreamChat(context.get(), request);
    pb::ChatEvent event;
    EXPECT_FALSE(reader->Read(&event));
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  // Another tenant cannot continue, read or list this conversation.
  const std::string other = keys_->back().second;
  Turn theirs = Chat("list my agents", conversation, "", other);
  EXPECT_EQ(theirs.status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_TRUE(theirs.events.empty());
  auto context = Context(other);
  pb::GetConversationRequest get;
  get.set_conversation_id(conversation);
  pb::GetConversationResponse got;
  EXPECT_EQ(stub_->GetConversation(context.get(), get, &got).error_code(),
            grpc::StatusCode::NOT_FOUND);
  context = Context(other);
  pb::ListMessagesRequest messages;
  messages.set_conversation_id(conversation);
  pb::ListMessagesResponse listed;
  EXPECT_EQ(stub_->ListMessages(context.get(), messages, &listed).error_code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(listed.messages_size(), 0);
}

TEST_F(ChatEndToEndTest, TheApprovalTrailIsReadOnlyByItsOwnerAndChecksItsInput) {
  Turn hello = Chat("hello");
  ExpectWellFormed(hello);
  const std::string conversation = hello.session().conversation_id();
  auto list = [&](const std::string& id, int limit, const std::string& as_key) {
    auto context = Context(as_key);
    pb::ListActionsRequest request;
    request.set_conversation_id(id);
    request.set_limit(limit);
    pb::ListActionsResponse response;
    const grpc::Status status = stub_->ListActions(context.get(), request, &response);
    EXPECT_EQ(response.decisions_size(), 0) << "nothing decided here, and nothing on errors";
    return status.error_code();
  };
  // Without a database the trail is kept in memory: empty so far.
  EXPECT_EQ(list(conversation, 0, key()), grpc::StatusCode::OK);
  EXPECT_EQ(list(conversation, 500, key()), grpc::StatusCode::OK);
  // Another tenant's, another user's and a missing conversation: one answer.
  EXPECT_EQ(list(conversation, 0, keys_->back().second), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(list(conversation, 0, (*keys_)[(user_ + 1) % (kUsers - 1)].second),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(list(core::NewUuid(), 0, key()), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(list("not-a-uuid", 0, key()), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(list("", 0, key()), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(list(conversation, -1, key()), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(list(conversation, 501, key()), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(list(conversation, 0, ""), grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(ChatEndToEndTest, BadInputIsRefusedAndStoresNothing) {
  EXPECT_EQ(Chat("").status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Chat(std::string(64 * 1024 + 1, 'a')).status.error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Chat("hi", "not-a-uuid").status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Chat("hi", core::NewUuid()).status.error_code(), grpc::StatusCode::NOT_FOUND);

  // Invalid UTF-8 and an unknown enum value, sent as raw bytes.
  grpc::GenericStub generic(
      grpc::CreateChannel(orchestrator_->address(), grpc::InsecureChannelCredentials()));
  auto raw_call = [&](const std::string& bytes) {
    auto context = Context(key());
    grpc::CompletionQueue cq;
    grpc::Slice slice(bytes);
    grpc::ByteBuffer buffer(&slice, 1);
    std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call = generic.PrepareCall(
        context.get(), "/omniforge.orchestrator.v1.ChatService/StreamChat", &cq);
    void* tag = nullptr;
    bool ok = false;
    call->StartCall(reinterpret_cast<void*>(1));
    cq.Next(&tag, &ok);
    call->Write(buffer, reinterpret_cast<void*>(2));
    cq.Next(&tag, &ok);
    call->WritesDone(reinterpret_cast<void*>(3));
    cq.Next(&tag, &ok);
    grpc::ByteBuffer reply;
    call->Read(&reply, reinterpret_cast<void*>(4));
    cq.Next(&tag, &ok);
    grpc::Status status;
    call->Finish(&status, reinterpret_cast<void*>(5));
    cq.Next(&tag, &ok);
    return status.error_code();
  };
  pb::StreamChatRequest bad_enum;
  bad_enum.set_message("hi");
  bad_enum.set_context_type(static_cast<pb::ContextType>(99));
  EXPECT_EQ(raw_call(bad_enum.SerializeAsString()), grpc::StatusCode::INVALID_ARGUMENT);
  pb::StreamChatRequest utf8;
  utf8.set_message("placeholder");
  std::string bytes = utf8.SerializeAsString();
  bytes.replace(bytes.find("placeholder"), 2, "\xC3\x28");
  EXPECT_EQ(raw_call(bytes), grpc::StatusCode::INVALID_ARGUMENT);

  auto context = Context(key());
  pb::ListConversationsResponse list;
  ASSERT_TRUE(stub_->ListConversations(context.get(), pb::ListConversationsRequest(), &list).ok());
  EXPECT_EQ(list.conversations_size(), 0);
}

// The conversation service's own field checks reach the client through
// the orchestrator with their reason and field (google.rpc.ErrorInfo and
// BadRequest in the status details), as the orchestrator's own do.
TEST_F(ChatEndToEndTest, ReadsRefusedByTheConversationServiceNameTheField) {
  auto context = Context(key());
  pb::GetConversationRequest get;
  get.set_conversation_id("not-a-uuid");
  pb::GetConversationResponse got;
  const absl::Status malformed =
      core::FromGrpcStatus(stub_->GetConversation(context.get(), get, &got));
  EXPECT_EQ(malformed.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(core::ReasonOf(malformed), "FIELD_INVALID");
  ASSERT_EQ(core::FieldViolationsOf(malformed).size(), 1u);
  EXPECT_EQ(core::FieldViolationsOf(malformed)[0].field, "conversation_id");

  const std::string conversation = Chat("hello").session().conversation_id();
  context = Context(key());
  pb::ListMessagesRequest messages;
  messages.set_conversation_id(conversation);
  messages.set_limit(100000);
  pb::ListMessagesResponse page;
  const absl::Status too_many =
      core::FromGrpcStatus(stub_->ListMessages(context.get(), messages, &page));
  EXPECT_EQ(too_many.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(core::ReasonOf(too_many), "FIELD_INVALID");
  ASSERT_EQ(core::FieldViolationsOf(too_many).size(), 1u);
  EXPECT_EQ(core::FieldViolationsOf(too_many)[0].field, "limit");

  context = Context(key());
  pb::ListConversationsRequest list;
  list.set_page_token("forged");
  pb::ListConversationsResponse listed;
  const absl::Status forged =
      core::FromGrpcStatus(stub_->ListConversations(context.get(), list, &listed));
  EXPECT_EQ(core::ReasonOf(forged), "FIELD_INVALID");
  ASSERT_EQ(core::FieldViolationsOf(forged).size(), 1u);
  EXPECT_EQ(core::FieldViolationsOf(forged)[0].field, "page_token");

  context = Context(key());
  get.set_conversation_id(core::NewUuid());
  const absl::Status missing =
      core::FromGrpcStatus(stub_->GetConversation(context.get(), get, &got));
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(core::ReasonOf(missing), "CONVERSATION_NOT_FOUND");
}

// The same stack with the planner on a model: the fake provider (real
// HTTP/SSE wire format) answers the planner's streaming calls.
// Local mode with the orchestrator's database: plans from the local
// policy's templates, carried out by the executor's deterministic agents.
class LocalPlanEndToEndTest : public ChatEndToEndTest {
 protected:
  // Stores `plan` as an orchestrator that died while running it left it.
  static void StorePlan(const Plan& plan) {
    pg::PgOptions options;
    options.dsn = db_->service_dsn("orchestrator");
    auto pool = pg::PgPool::Create(options);
    ASSERT_TRUE(pool.ok()) << pool.status();
    PgPlanStore store(**pool, OrchestratorKeys());
    ASSERT_TRUE(store.Create(plan).ok());
  }

  static void SetUpTestSuite() {
    ChatEndToEndTest::SetUpTestSuite();
    orchestrator_->Stop();
    StartOrchestrator({}, testing::DatabaseEnv(*db_, "orchestrator"));
  }

  // The index of the first event of `kind` for `step_id`, or -1.
  static int IndexOf(const Turn& turn, pb::ChatEvent::EventCase kind, const std::string& step_id) {
    for (size_t i = 0; i < turn.events.size(); ++i) {
      const pb::ChatEvent& e = turn.events[i];
      if (e.event_case() != kind) continue;
      if ((kind == pb::ChatEvent::kStepStart && e.step_start().step_id() == step_id) ||
          (kind == pb::ChatEvent::kStepComplete && e.step_complete().step_id() == step_id)) {
        return static_cast<int>(i);
      }
    }
    return -1;
  }
};

// The flow's state is kept in the orchestrator's database: a preview
// survives a restart of the orchestrator. (Without a database the state is
// kept in memory and goes with the process.)
TEST_F(LocalPlanEndToEndTest, TheConversationResumesAfterTheOrchestratorRestarts) {
  Turn first = Chat("our weekly sales reports are always late");
  ExpectWellFormed(first);
  ASSERT_TRUE(first.preview().has_value());
  orchestrator_->Stop();
  StartOrchestrator({}, testing::DatabaseEnv(*db_, "orchestrator"));
  Turn second = Chat("yes", first.session().conversation_id());
  ExpectWellFormed(second);
  EXPECT_EQ(second.tools_called(), std::vector<std::string>{"create_agent"});
  EXPECT_EQ(Invoke("list_agents", json::object())["count"], 1);
}

TEST_F(LocalPlanEndToEndTest, UnhelpfulAnswersGetTwoQuestionsThenTheLikeliestReading) {
  CreateTwoAgents();
  Turn first = Chat("run one of my agents");
  ExpectWellFormed(first);
  EXPECT_THAT(first.text(), HasSubstr("Which agent should I run?"));
  const std::string conversation = first.session().conversation_id();
  Turn second = Chat("hmm, not sure", conversation);
  ExpectWellFormed(second);
  EXPECT_THAT(second.text(), HasSubstr("Which agent should I run?"));
  EXPECT_FALSE(second.done().is_final());
  EXPECT_EQ(LastFlow(conversation)["clarifications"], 2);
  Turn third = Chat("no idea really", conversation);
  ExpectWellFormed(third);
  EXPECT_THAT(third.text(), ::testing::Not(HasSubstr("Which agent")));
  ASSERT_TRUE(third.preview().has_value()) << third.text();
  EXPECT_EQ(PreviewTarget(*third.preview()), "invoice-chaser")
      << "the first agent of the list the user was shown";
  EXPECT_THAT(third.text(), HasSubstr("I'll take 'invoice-chaser'"));
  EXPECT_EQ(LastFlow(conversation)["clarifications"], 0);
  for (const Turn* answer : {&second, &third}) {
    EXPECT_EQ(answer->Of(pb::ChatEvent::kIntent)[0].intent().analysis().source(),
              pb::INTENT_SOURCE_FAST_PATH);
    EXPECT_EQ(answer->session().flow_id(), first.session().flow_id());
  }
  EXPECT_TRUE(third.tools_called().empty()) << "the guess is previewed, not run";
}

TEST_F(LocalPlanEndToEndTest, TheContextBoxIsKeptWithTheFlowFromTurnToTurn) {
  Turn draft = Chat("our Monday Notion updates take hours — can you help?");
  ExpectWellFormed(draft);
  const std::string conversation = draft.session().conversation_id();
  json box = LastFlow(conversation)["context_box"];
  EXPECT_EQ(box["goal"], "our Monday Notion updates take hours — can you help?");
  EXPECT_EQ(box["entities"]["data_source"], "notion");
  EXPECT_THAT(box["progress"].dump(), HasSubstr("drafted create_agent"));
  EXPECT_THAT(box["blockers"].dump(), HasSubstr("waiting for the user's approval"));
  EXPECT_THAT(box["next"].dump(), HasSubstr("run create_agent once approved"));

  Turn yes = Chat("yes", conversation);
  ExpectWellFormed(yes);
  EXPECT_EQ(yes.tools_called(), std::vector<std::string>{"create_agent"});
  box = LastFlow(conversation)["context_box"];
  EXPECT_EQ(box["goal"], "our Monday Notion updates take hours — can you help?")
      << "the flow keeps its goal";
  EXPECT_THAT(box["progress"].dump(), HasSubstr("drafted create_agent"));
  EXPECT_THAT(box["progress"].dump(), HasSubstr("ran create_agent"));
  EXPECT_THAT(box["progress"].dump(), HasSubstr("approved create_agent"));
  EXPECT_THAT(box["data"].dump(), HasSubstr("create_agent: "));
  EXPECT_TRUE(box["blockers"].empty());
  EXPECT_TRUE(box["next"].empty());
}

TEST_F(LocalPlanEndToEndTest, AProjectIsCreatedByAPlanTheUserReviewsThenApproves) {
  Turn draft =
      ChatIn(pb::CONTEXT_TYPE_PROJECT_CREATE, "Set up a project for the spring campaign launch");
  ExpectWellFormed(draft);
  const std::string conversation = draft.session().conversation_id();
  ASSERT_EQ(draft.Of(pb::ChatEvent::kPlanCreated).size(), 1u);
  ASSERT_EQ(draft.Of(pb::ChatEvent::kPlanReadyForReview).size(), 1u);
  const pb::Plan plan =
      draft.Of(pb::ChatEvent::kPlanReadyForReview)[0].plan_ready_for_review().plan();
  EXPECT_EQ(plan.status(), pb::PLAN_STATUS_PENDING_REVIEW);
  ASSERT_EQ(plan.steps_size(), 3);
  EXPECT_TRUE(draft.Of(pb::ChatEvent::kStepStart).empty()) << "nothing runs before the review";
  EXPECT_THAT(draft.text(), HasSubstr("Here is the plan"));
  EXPECT_THAT(draft.text(), HasSubstr(plan.steps(1).description()));
  EXPECT_THAT(draft.text(), HasSubstr("looks good, run it"));
  EXPECT_FALSE(draft.done().is_final());
  EXPECT_THAT(States(draft), ::testing::Contains(pb::AGENT_STATE_EXECUTING_PLAN));
  EXPECT_EQ(States(draft).back(), pb::AGENT_STATE_WAITING_ON_USER);
  json flow = LastFlow(conversation);
  EXPECT_EQ(flow["plan"]["plan_id"], plan.plan_id());
  EXPECT_EQ(flow["plan"]["status"], "pending_review");

  Turn run = Chat("looks good, run it", conversation);
  ExpectWellFormed(run);
  EXPECT_EQ(run.session().flow_id(), draft.session().flow_id()) << "the same flow goes on";
  EXPECT_TRUE(run.Of(pb::ChatEvent::kPlanCreated).empty()) << "the reviewed plan runs, no new one";
  const auto completes = run.Of(pb::ChatEvent::kStepComplete);
  ASSERT_EQ(completes.size(), 3u);
  for (const auto& e : completes) {
    EXPECT_EQ(e.step_complete().plan_id(), plan.plan_id());
    EXPECT_EQ(e.step_complete().status(), pb::STEP_STATUS_COMPLETED) << e.step_complete().summary();
  }
  EXPECT_EQ(run.Of(pb::ChatEvent::kExecutorSpawned).size(), 3u);
  EXPECT_EQ(run.Of(pb::ChatEvent::kExecutorResult).size(), 3u);
  // Template discovery, then the project, then its brief: one after another.
  const std::string s1 = plan.steps(0).step_id(), s2 = plan.steps(1).step_id(),
                    s3 = plan.steps(2).step_id();
  EXPECT_LT(IndexOf(run, pb::ChatEvent::kStepComplete, s1),
            IndexOf(run, pb::ChatEvent::kStepStart, s2));
  EXPECT_LT(IndexOf(run, pb::ChatEvent::kStepComplete, s2),
            IndexOf(run, pb::ChatEvent::kStepStart, s3));
  EXPECT_THAT(run.text(), HasSubstr("Done:"));
  EXPECT_TRUE(run.done().is_final());
  EXPECT_FALSE(LastFlow(conversation).contains("plan")) << "nothing waits any more";

  // The project exists with its brief.
  const json created = json::parse(completes[1].step_complete().result_json());
  ASSERT_EQ(created["results"][0]["tool"], "create_project") << created.dump();
  EXPECT_EQ(created["results"][0]["result"]["project"]["name"], "Spring campaign launch")
      << "named from the request, not after the whole sentence";
  const json project = Invoke("get_project_details", {{"project", "Spring campaign launch"}});
  ASSERT_FALSE(project.contains("is_error")) << project.dump();
  EXPECT_THAT(project.dump(), HasSubstr("Project brief"));
}

TEST_F(LocalPlanEndToEndTest, AStepsQuestionGoesToTheUserWhoseAnswerLetsThePlanGoOn) {
  for (const char* name : {"Harbor north", "Harbor south"}) {
    ASSERT_FALSE(Invoke("create_project", {{"name", name}, {"description", "rebuild"}})
                     .contains("is_error"));
  }
  // "Harbor" names two projects: the executor asks which, the planner
  // cannot know (local mode), so the user is asked and the plan waits.
  Turn audit = ChatIn(pb::CONTEXT_TYPE_PROJECT_AUDIT, "how is this project doing?", "", "Harbor");
  ExpectWellFormed(audit);
  const std::string conversation = audit.session().conversation_id();
  EXPECT_THAT(audit.text(), HasSubstr("needs your answer"));
  EXPECT_THAT(audit.text(), HasSubstr("Harbor north"));
  EXPECT_FALSE(audit.done().is_final());
  EXPECT_EQ(States(audit).back(), pb::AGENT_STATE_WAITING_ON_USER);
  EXPECT_EQ(LastFlow(conversation)["plan"]["status"], "waiting_on_user");

  // (A question of the user's own in between is answered and the step keeps
  // waiting: TurnPlanTest.AStepsQuestionGoesToTheUserWhoseAnswerLetsThePlanGoOn.)
  // Each answer lets the plan go on (every step that names the project asks
  // once) until it is done.
  Turn answer = Chat("Harbor north", conversation);
  for (int round = 0; round < 3 && !answer.done().is_final(); ++round) {
    ExpectWellFormed(answer);
    ASSERT_EQ(LastFlow(conversation)["plan"]["status"], "waiting_on_user") << answer.text();
    answer = Chat("Harbor north", conversation);
  }
  ExpectWellFormed(answer);
  EXPECT_TRUE(answer.done().is_final()) << answer.text();
  EXPECT_THAT(answer.text(), HasSubstr("Done:"));
  EXPECT_FALSE(LastFlow(conversation).contains("plan"));
}

TEST_F(LocalPlanEndToEndTest, ContinueAfterACrashFinishesThePlanWithoutRepeatingFinishedSteps) {
  Turn hello = Chat("hello");
  ExpectWellFormed(hello);
  const std::string conversation = hello.session().conversation_id();
  // The state an orchestrator leaves when it dies during a plan: the plan
  // running, its first step done, the second not started, no reply stored.
  Plan plan;
  plan.id = core::NewUuid();
  plan.tenant_id = who().tenant_id;
  plan.user_id = who().user_id;
  plan.conversation_id = conversation;
  plan.objective = "Set up the harbor review";
  plan.status = PlanStatus::kRunning;
  plan.writes_approved = true;
  PlanStep first;
  first.id = "s1";
  first.description = "List the agents";
  first.tools = {"list_agents"};
  first.tool_calls = {{"list_agents", json::object()}};
  first.status = StepStatus::kCompleted;
  first.result_summary = "no agents yet";
  first.started_micros = first.finished_micros = core::NowMicros();
  PlanStep second;
  second.id = "s2";
  second.description = "Create the review agent";
  second.tools = {"create_agent"};
  second.depends_on = {"s1"};
  second.tool_calls = {
      {"create_agent", {{"name", "harbor-review"}, {"description", "Reviews the harbor"}}}};
  plan.steps = {first, second};
  ASSERT_NO_FATAL_FAILURE(StorePlan(plan));
  orchestrator_->Stop();
  StartOrchestrator({}, testing::DatabaseEnv(*db_, "orchestrator"));

  Turn resumed = Chat("continue", conversation);
  ExpectWellFormed(resumed);
  std::vector<std::string> started;
  for (const auto& e : resumed.Of(pb::ChatEvent::kStepStart)) {
    EXPECT_EQ(e.step_start().plan_id(), plan.id);
    started.push_back(e.step_start().step_id());
  }
  EXPECT_EQ(started, std::vector<std::string>{"s2"}) << "the finished step is not run again";
  EXPECT_THAT(resumed.text(), HasSubstr("Done: the plan for \"Set up the harbor review\""));
  EXPECT_THAT(resumed.text(), HasSubstr("List the agents: no agents yet"));
  EXPECT_TRUE(resumed.done().is_final());
  EXPECT_EQ(Invoke("get_agent", {{"agent", "harbor-review"}})["agent"]["name"], "harbor-review");
  // Said again, "continue" finds nothing left to run.
  Turn again = Chat("continue", conversation);
  ExpectWellFormed(again);
  EXPECT_TRUE(again.Of(pb::ChatEvent::kStepStart).empty()) << "a finished plan stays finished";
}

// The orchestrator dies while an approved plan's step runs, after the
// step's write reached the executor. Resumed, the step runs again with the
// same key (plan, step, the write's index): the executor's ledger answers
// with the first result, and the agent ran once.
TEST_F(LocalPlanEndToEndTest, AResumedPlanDoesNotRepeatAWriteThatAlreadyHappened) {
  Invoke("create_agent", {{"name", "harbor-review"}, {"description", "Reviews the harbor"}});
  Turn hello = Chat("hello");
  const std::string conversation = hello.session().conversation_id();
  Plan plan;
  plan.id = core::NewUuid();
  plan.tenant_id = who().tenant_id;
  plan.user_id = who().user_id;
  plan.conversation_id = conversation;
  plan.objective = "Run the harbor review";
  plan.status = PlanStatus::kRunning;
  plan.writes_approved = true;  // the user approved it before the crash
  PlanStep step;
  step.id = "s1";
  step.description = "Run the review agent";
  step.tools = {"run_agent"};
  step.tool_calls = {{"run_agent", {{"agent", "harbor-review"}}}};
  step.status = StepStatus::kRunning;  // interrupted
  step.attempts = 1;
  step.started_micros = core::NowMicros();
  plan.steps = {step};
  ASSERT_NO_FATAL_FAILURE(StorePlan(plan));
  // What the step's executor agent did before the orchestrator died.
  const std::string key = "plan:" + plan.id + ":s1:w0";
  {
    grpc::ClientContext context;
    core::AttachIdentity(context, who(), core::kExecutorAudience);
    execpb::InvokeToolRequest request;
    request.set_tool_name("run_agent");
    request.set_arguments_json(R"({"agent": "harbor-review"})");
    request.set_idempotency_key(key);
    execpb::InvokeToolResponse response;
    ASSERT_TRUE(executor_stub_->InvokeTool(&context, request, &response).ok());
    ASSERT_FALSE(response.is_error()) << response.result_json();
  }
  orchestrator_->Stop();
  StartOrchestrator({}, testing::DatabaseEnv(*db_, "orchestrator"));

  Turn resumed = Chat("continue", conversation);
  ExpectWellFormed(resumed);
  ASSERT_EQ(resumed.Of(pb::ChatEvent::kStepComplete).size(), 1u);
  EXPECT_EQ(resumed.Of(pb::ChatEvent::kStepComplete)[0].step_complete().status(),
            pb::STEP_STATUS_COMPLETED);
  const json runs = Invoke("list_runs", {{"agent", "harbor-review"}});
  EXPECT_EQ(runs["count"], 1) << "the write happened once: " << runs.dump();
  // The executor's ledger holds the one call under the plan's key.
  pqxx::connection conn(db_->dsn());
  pqxx::work tx(conn);
  tx.exec_params("SELECT set_config('app.tenant_id', $1, true)", who().tenant_id);
  const pqxx::result ledger = tx.exec_params(
      "SELECT idempotency_key FROM platform.tool_invocations WHERE tenant_id = $1 AND "
      "user_id = $2 AND idempotency_key LIKE $3",
      who().tenant_id, who().user_id, "plan:" + plan.id + ":%");
  ASSERT_EQ(ledger.size(), 1u);
  EXPECT_EQ(ledger[0][0].as<std::string>(), key);
}

// DeleteConversation removes the messages and what the orchestrator keeps of
// the conversation (its flows, its plan and the plan's steps), for its owner
// only; bad ids are refused and a second delete finds nothing.
TEST_F(LocalPlanEndToEndTest, DeletingAConversationRemovesItsMessagesFlowsAndPlans) {
  Turn draft =
      ChatIn(pb::CONTEXT_TYPE_PROJECT_CREATE, "Set up a project for the autumn product launch");
  ExpectWellFormed(draft);
  const std::string conversation = draft.session().conversation_id();
  ASSERT_EQ(draft.Of(pb::ChatEvent::kPlanReadyForReview).size(), 1u);
  auto count = [&](const std::string& table) {
    pqxx::connection conn(db_->dsn());
    pqxx::nontransaction tx(conn);
    const std::string where = table == "orchestration.plan_steps"
                                  ? "plan_id IN (SELECT id FROM orchestration.plans "
                                    "WHERE conversation_id = $1)"
                                  : "conversation_id = $1";
    return tx.exec_params1("SELECT count(*) FROM " + table + " WHERE " + where, conversation)[0]
        .as<int>();
  };
  ASSERT_GE(count("orchestration.flows"), 1);
  ASSERT_EQ(count("orchestration.plans"), 1);
  ASSERT_EQ(count("orchestration.plan_steps"), 3);

  auto remove = [&](const std::string& key, const std::string& id) {
    auto context = Context(key);
    pb::DeleteConversationRequest request;
    request.set_conversation_id(id);
    pb::DeleteConversationResponse response;
    return stub_->DeleteConversation(context.get(), request, &response).error_code();
  };
  EXPECT_EQ(remove(key(), "not-a-uuid"), grpc::StatusCode::INVALID_ARGUMENT);
  // Another tenant's key finds nothing, and changes nothing.
  EXPECT_EQ(remove(keys_->back().second, conversation), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(count("orchestration.plans"), 1);

  // Named in upper case, it is the same conversation, and all of it goes.
  EXPECT_EQ(remove(key(), absl::AsciiStrToUpper(conversation)), grpc::StatusCode::OK);
  EXPECT_EQ(count("orchestration.flows"), 0);
  EXPECT_EQ(count("orchestration.plans"), 0);
  EXPECT_EQ(count("orchestration.plan_steps"), 0);
  auto context = Context(key());
  pb::ListMessagesRequest list;
  list.set_conversation_id(conversation);
  pb::ListMessagesResponse messages;
  EXPECT_EQ(stub_->ListMessages(context.get(), list, &messages).error_code(),
            grpc::StatusCode::NOT_FOUND);
  Turn after = Chat("looks good, run it", conversation);
  EXPECT_EQ(after.status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(remove(key(), conversation), grpc::StatusCode::NOT_FOUND);
}

TEST_F(LocalPlanEndToEndTest, StoredDecisionsAreListedNewestFirstToTheirOwnerOnly) {
  Turn hello = Chat("hello");
  ExpectWellFormed(hello);
  const std::string conversation = hello.session().conversation_id();
  // Decisions as a turn records them, straight into the orchestrator's
  // database: what the API lists is what is stored there.
  const int64_t t0 = 1'700'000'000'000'000;
  {
    pg::PgOptions options;
    options.dsn = db_->service_dsn("orchestrator");
    auto pool = pg::PgPool::Create(options);
    ASSERT_TRUE(pool.ok()) << pool.status();
    PgApprovalAudit audit(**pool, OrchestratorKeys());
    const std::vector<std::pair<pb::ActionOutcome, std::string>> decided = {
        {pb::ACTION_OUTCOME_EDITED, "words"},
        {pb::ACTION_OUTCOME_REJECTED, "api"},
        {pb::ACTION_OUTCOME_APPROVED, "api"}};
    for (size_t i = 0; i < decided.size(); ++i) {
      ActionDecisionRecord r;
      r.tenant_id = who().tenant_id;
      r.user_id = r.decided_by = who().user_id;
      r.conversation_id = conversation;
      r.turn_id = "turn-" + std::to_string(i);
      r.action_id = "action-" + std::to_string(i);
      r.digest = "sha256:" + std::to_string(i);
      r.tool = "delete_agent";
      r.summary = "Delete invoice-chaser";
      r.risk = execpb::TOOL_RISK_HIGH;
      r.outcome = decided[i].first;
      r.via = decided[i].second;
      r.decided_at_micros = t0 + static_cast<int64_t>(i) * 1'000'000;
      ASSERT_TRUE(audit.Record(r).ok());
    }
    // Another user's decision filed under the same conversation id is not
    // this user's, however late it came.
    ActionDecisionRecord other;
    other.tenant_id = who().tenant_id;
    other.user_id = other.decided_by = "someone-else";
    other.conversation_id = conversation;
    other.action_id = "not-yours";
    other.outcome = pb::ACTION_OUTCOME_APPROVED;
    other.via = "api";
    other.decided_at_micros = t0 + 10'000'000;
    ASSERT_TRUE(audit.Record(other).ok());
  }

  auto list = [&](int limit, const std::string& as_key, pb::ListActionsResponse* response) {
    auto context = Context(as_key);
    pb::ListActionsRequest request;
    request.set_conversation_id(conversation);
    request.set_limit(limit);
    return stub_->ListActions(context.get(), request, response).error_code();
  };
  pb::ListActionsResponse all;
  ASSERT_EQ(list(0, key(), &all), grpc::StatusCode::OK);
  ASSERT_EQ(all.decisions_size(), 3);
  EXPECT_EQ(all.decisions(0).action_id(), "action-2");
  EXPECT_EQ(all.decisions(0).outcome(), pb::ACTION_OUTCOME_APPROVED);
  EXPECT_EQ(all.decisions(0).via(), "api");
  EXPECT_EQ(all.decisions(0).decided_by(), who().user_id);
  EXPECT_EQ(all.decisions(0).digest(), "sha256:2");
  EXPECT_EQ(all.decisions(0).tool_name(), "delete_agent");
  EXPECT_EQ(all.decisions(0).summary(), "Delete invoice-chaser");
  EXPECT_EQ(all.decisions(0).risk(), execpb::TOOL_RISK_HIGH);
  EXPECT_EQ(all.decisions(0).turn_id(), "turn-2");
  EXPECT_EQ(all.decisions(0).decided_at_unix_ms(), t0 / 1000 + 2000);
  EXPECT_EQ(all.decisions(1).outcome(), pb::ACTION_OUTCOME_REJECTED);
  EXPECT_EQ(all.decisions(2).outcome(), pb::ACTION_OUTCOME_EDITED);
  EXPECT_EQ(all.decisions(2).via(), "words");
  pb::ListActionsResponse newest;
  ASSERT_EQ(list(2, key(), &newest), grpc::StatusCode::OK);
  ASSERT_EQ(newest.decisions_size(), 2);
  EXPECT_EQ(newest.decisions(0).action_id(), "action-2");
  EXPECT_EQ(newest.decisions(1).action_id(), "action-1");
  pb::ListActionsResponse theirs;
  EXPECT_EQ(list(0, keys_->back().second, &theirs), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(theirs.decisions_size(), 0);
  EXPECT_EQ(list(501, key(), &theirs), grpc::StatusCode::INVALID_ARGUMENT);
}

class ModelPlannerEndToEndTest : public ChatEndToEndTest {
 protected:
  static void SetUpTestSuite() {
    auto fake = llm::testing::FakeLlmServer::Start({}, {.api_key = "fake-key"});
    ASSERT_TRUE(fake.ok()) << fake.status();
    fake_ = fake->release();
    ChatEndToEndTest::SetUpTestSuite();
    RestartWithConfig("");
  }

  // The llm: section of a service on the fake provider: `model` priced at
  // $1 (input), $0.5 (cached) and $2 (output) per million tokens, and
  // `profiles` (the YAML lines under profiles:), one attempt per call.
  static std::string FakeLlmSection(const std::string& model, const std::string& profiles) {
    return "llm:\n  providers:\n    fake:\n      api: openai\n      base_url: " +
           fake_->openai_base_url() + "\n      api_key_env: FAKE_LLM_KEY\n      prices:\n        " +
           model + ": \"1.0 0.5 2.0\"\n  profiles:\n" + profiles + "  retry: {max_attempts: 1}\n";
  }

  // Restarts the orchestrator on the fake provider, with `extra` YAML
  // sections added to the suite's configuration.
  static void RestartWithConfig(const std::string& extra) {
    const std::filesystem::path path = *dir_ / "orchestrator.yaml";
    std::ofstream config(path);
    config << FakeLlmSection("planner-model",
                             "    balanced: [fake/planner-model]\n"
                             "    quality: [fake/reviewer-model]\n")
           << "planner:\n  max_iterations: 3\n  profiles: {task: quality}\n"
           << extra;
    config.close();
    orchestrator_->Stop();
    StartOrchestrator({"--config", path.string()}, testing::DatabaseEnv(*db_, "orchestrator"));
  }
  // An executor of its own with `mcp_servers` (the YAML under mcp.servers),
  // and the orchestrator on it; the suite's executor is back when the
  // returned guard goes.
  struct OwnExecutor {
    std::unique_ptr<testing::ServerProcess> process;
    ~OwnExecutor() {
      if (process != nullptr) RestartWithConfig("");
    }
  };
  static std::unique_ptr<OwnExecutor> OrchestratorOnExecutorWith(const std::string& mcp_servers) {
    const std::filesystem::path config_path = *dir_ / "executor-own.yaml";
    std::ofstream(config_path) << "mcp:\n  servers:\n" << mcp_servers;
    auto own = std::make_unique<OwnExecutor>();
    auto process = std::make_unique<testing::ServerProcess>(OMNIFORGE_EXECUTOR_BIN);
    std::vector<std::string> env = testing::TestIdentityEnv(testing::TestKeyUse::kBoth);
    env.push_back(testing::ExecutorMasterKeyEnv());
    const std::optional<std::string> failed = process->Start(
        testing::DatabaseEnv(*db_, "executor", env), {"--config", config_path.string()});
    EXPECT_EQ(failed, std::nullopt);
    if (failed) return own;
    own->process = std::move(process);
    orchestrator_->Stop();
    StartOrchestrator(
        {"--config", (*dir_ / "orchestrator.yaml").string()},
        testing::DatabaseEnv(*db_, "orchestrator",
                             {"OMNIFORGE_DOWNSTREAM_EXECUTOR=" + own->process->address()}));
    return own;
  }
  static void TearDownTestSuite() {
    ChatEndToEndTest::TearDownTestSuite();
    delete fake_;
  }

  // Restarts the intent service, on the fake provider (every message it
  // cannot read by rule goes to its model) or local, then the orchestrator
  // on it.
  static void RestartIntent(bool with_model) {
    std::vector<std::string> args;
    if (with_model) {
      const std::filesystem::path path = *dir_ / "intent.yaml";
      std::ofstream config(path);
      config << FakeLlmSection("intent-model", "    speed: [fake/intent-model]\n")
             << "intent:\n  llm_threshold: 1.0\n";
      config.close();
      args = {"--config", path.string()};
    }
    intent_->Stop();
    ASSERT_EQ(intent_->Start({"FAKE_LLM_KEY=fake-key", testing::TrustTestKeyEnv()}, args),
              std::nullopt);
    RestartWithConfig("");
  }

  static llm::testing::FakeRule Rule(const std::string& user_contains, bool after_tool,
                                     llm::testing::FakeReply reply) {
    llm::testing::FakeRule rule;
    rule.match.operation = "planner_stream";
    rule.match.last_user_contains = user_contains;
    rule.match.last_is_tool_result = after_tool;
    rule.reply = std::move(reply);
    return rule;
  }

  // The rows `query` ($1 = `key`) returns once there are `count` of them
  // (records written in the background: waits up to 10 s).
  static pqxx::result RowsOf(const std::string& query, const std::string& key, size_t count) {
    pqxx::connection conn(db_->dsn());
    pqxx::result rows;
    for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
         std::chrono::steady_clock::now() < until;
         std::this_thread::sleep_for(std::chrono::milliseconds(20))) {
      pqxx::nontransaction tx(conn);
      rows = tx.exec_params(query, key);
      if (rows.size() >= count) break;
    }
    return rows;
  }

  // The usage rows recorded for a turn.
  static pqxx::result UsageOf(const std::string& turn_id, size_t count) {
    return RowsOf(
        "SELECT tenant_id, user_id, operation_type, profile, model, prompt_tokens, "
        "completion_tokens, cost_usd, outcome, error_kind, context_type, conversation_id::text "
        "FROM orchestration.llm_usage WHERE turn_id = $1 ORDER BY created_at",
        turn_id, count);
  }

  // The error log of a turn: tenant, user, conversation, kind, message
  // (sealed), component, stage, tool, id.
  static pqxx::result ErrorsOf(const std::string& turn_id, size_t count) {
    return RowsOf(
        "SELECT tenant_id, user_id, conversation_id::text, kind, message, component, stage, "
        "tool, id::text "
        "FROM orchestration.error_log WHERE turn_id = $1 ORDER BY created_at",
        turn_id, count);
  }

  // A logged error's message, opened.
  static std::string ErrorMessage(const pqxx::row& logged) {
    return Unsealed(logged[0].as<std::string>(), "orchestration.error_log",
                    logged[8].as<std::string>(), "message", logged[4].as<std::string>());
  }

  // A flow's row: status, state (sealed), turn_id, conversation_id, user_id,
  // tenant_id (none when it is not stored).
  static pqxx::result FlowOf(const std::string& flow_id) {
    return RowsOf(
        "SELECT status, state::text, turn_id, conversation_id::text, user_id, tenant_id "
        "FROM orchestration.flows WHERE flow_id = $1",
        flow_id, 1);
  }

  // The context box of a flow's row, opened.
  static json BoxOf(const pqxx::row& row, const std::string& flow_id) {
    return json::parse(Unsealed(row[5].as<std::string>(), "orchestration.flows", flow_id, "state",
                                row[1].as<std::string>(), /*json=*/true))["context_box"];
  }

  // The system message of a recorded model request.
  static std::string SystemPrompt(const llm::testing::RecordedRequest& request) {
    return json::parse(request.body)["messages"][0]["content"].get<std::string>();
  }

  static llm::testing::FakeLlmServer* fake_;
};

llm::testing::FakeLlmServer* ModelPlannerEndToEndTest::fake_ = nullptr;

// The fake provider's answer to plan generation: these steps.
llm::testing::FakeRule PlanGeneration(const std::string& user_contains, const json& steps) {
  llm::testing::FakeRule rule;
  rule.match.operation = "plan_generation";
  rule.match.last_user_contains = user_contains;
  rule.reply.json = json{{"steps", steps}}.dump();
  return rule;
}

// A plan step the executor's deterministic agent carries out: one call.
json PlannedStep(const std::string& id, const std::string& description, const std::string& tool,
                 const json& arguments, const std::vector<std::string>& depends_on = {}) {
  return {{"id", id},
          {"description", description},
          {"tools", {tool}},
          {"needs_executor", true},
          {"depends_on", depends_on},
          {"expected_output", ""},
          {"tool_calls", json::array({{{"tool", tool}, {"arguments", arguments}}})}};
}

size_t RequestsOf(llm::testing::FakeLlmServer& fake, const std::string& operation) {
  size_t n = 0;
  for (const auto& request : fake.Requests()) n += request.operation == operation;
  return n;
}

// The retry hint of a refusal as a gateway reads it: google.rpc.RetryInfo
// in the status details (grpc-status-details-bin); nullopt without one.
std::optional<std::chrono::milliseconds> RetryDelayOf(const grpc::Status& status) {
  google::rpc::Status details;
  if (status.error_details().empty() || !details.ParseFromString(status.error_details())) {
    return std::nullopt;
  }
  EXPECT_EQ(details.code(), static_cast<int>(status.error_code()));
  for (const google::protobuf::Any& any : details.details()) {
    google::rpc::RetryInfo info;
    if (any.UnpackTo(&info)) {
      return std::chrono::milliseconds(info.retry_delay().seconds() * 1000 +
                                       info.retry_delay().nanos() / 1000000);
    }
  }
  return std::nullopt;
}

// Restores the suite's orchestrator (no limits) when the test ends.
struct NoLimitsAfter {
  std::function<void()> restore;
  ~NoLimitsAfter() { restore(); }
};

TEST_F(ModelPlannerEndToEndTest, AKeyOverItsRateIsRefusedWithARetryHintAndOtherKeysAreNot) {
  const NoLimitsAfter after{[] { RestartWithConfig(""); }};
  RestartWithConfig("limits:\n  key_rate: 0.5\n  key_burst: 2\n");
  auto list = [](const std::string& as_key) {
    auto context = Context(as_key);
    pb::ListConversationsResponse response;
    return stub_->ListConversations(context.get(), pb::ListConversationsRequest(), &response);
  };
  EXPECT_TRUE(list(key()).ok());
  EXPECT_TRUE(list(key()).ok());
  const grpc::Status refused = list(key());
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(refused.error_message(), HasSubstr("rate limit of this API key"));
  const auto delay = RetryDelayOf(refused);
  ASSERT_TRUE(delay.has_value()) << "RetryInfo in the status details";
  EXPECT_GT(*delay, std::chrono::milliseconds(1000));
  EXPECT_LE(*delay, std::chrono::milliseconds(2000));
  // A turn counts against the same bucket and is refused before it starts.
  Turn turn = Chat("hello");
  EXPECT_EQ(turn.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_TRUE(turn.events.empty());
  // Another user's key, and another tenant's, have buckets of their own.
  EXPECT_TRUE(list((*keys_)[(user_ + 1) % (kUsers - 1)].second).ok());
  EXPECT_TRUE(list(keys_->back().second).ok());
  // Waiting out the hint is enough.
  std::this_thread::sleep_for(*delay);
  EXPECT_TRUE(list(key()).ok());
}

TEST_F(ModelPlannerEndToEndTest, AUserAtTheCapOfTurnsAtOnceIsRefusedUntilTheirTurnEnds) {
  const NoLimitsAfter after{[] { RestartWithConfig(""); }};
  RestartWithConfig("limits:\n  user_turns: 1\n");
  llm::testing::FakeRule slow = Rule("slowly", false, {.text = "Done, slowly."});
  slow.first_byte_delay_ms = 2000;
  ASSERT_TRUE(fake_->SetRules({slow, Rule("quickly", false, {.text = "Done."})}).ok());
  const size_t before = fake_->RequestCount();
  Turn first;
  std::thread running([&] { first = Chat("answer slowly please"); });
  ASSERT_TRUE(fake_->WaitForRequests(before + 1, 10000));
  const auto asked = std::chrono::steady_clock::now();
  Turn second = Chat("answer quickly please");
  EXPECT_EQ(second.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(second.status.error_message(), HasSubstr("turns running"));
  const auto delay = RetryDelayOf(second.status);
  ASSERT_TRUE(delay.has_value());
  EXPECT_GE(*delay, std::chrono::milliseconds(500));
  EXPECT_LE(*delay, std::chrono::milliseconds(1500));
  EXPECT_LT(std::chrono::steady_clock::now() - asked, std::chrono::milliseconds(1500))
      << "refused at once, not queued behind the running turn";
  // Another user of the same tenant is not held back.
  Turn theirs = Chat("answer quickly please", "", "", (*keys_)[(user_ + 1) % (kUsers - 1)].second);
  ExpectWellFormed(theirs);
  running.join();
  ExpectWellFormed(first);
  EXPECT_EQ(first.text(), "Done, slowly.");
  // The turn over, its place is free again.
  Turn again = Chat("answer quickly please");
  ExpectWellFormed(again);
  EXPECT_EQ(again.text(), "Done.");
}

TEST_F(ModelPlannerEndToEndTest, ATenantOverItsLlmBudgetIsRefusedOrAnsweredWithoutTheModel) {
  const NoLimitsAfter after{[] { RestartWithConfig(""); }};
  llm::testing::FakeReply answer{.text = "Here is an answer that costs something."};
  answer.usage = llm::testing::FakeUsage{1000, 100, 0};  // $0.0012
  ASSERT_TRUE(fake_->SetRules({Rule("", false, answer)}).ok());
  // Some spend today, stored.
  Turn paid = Chat("tell me something about my agents");
  ExpectWellFormed(paid);
  ASSERT_GT(paid.done().usage().cost_usd(), 0);
  ASSERT_EQ(UsageOf(paid.session().turn_id(), 1).size(), 1u);

  // A daily budget of acme's already spent: acme's turns are refused until
  // the next UTC day; globex's run as before.
  RestartWithConfig("limits:\n  tenants:\n    acme:\n      daily_usd: 0.001\n");
  const size_t model_calls = RequestsOf(*fake_, "planner_stream");
  Turn refused = Chat("tell me something else");
  EXPECT_EQ(refused.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(refused.status.error_message(), HasSubstr("LLM budget of tenant acme"));
  const auto delay = RetryDelayOf(refused.status);
  ASSERT_TRUE(delay.has_value());
  EXPECT_LE(*delay, std::chrono::hours(24));
  EXPECT_TRUE(refused.events.empty());
  EXPECT_EQ(RequestsOf(*fake_, "planner_stream"), model_calls);
  Turn globex = Chat("tell me something", "", "", keys_->back().second);
  ExpectWellFormed(globex);
  EXPECT_EQ(globex.text(), answer.text);

  // Configured to fall back: the turn is answered in local mode, says so,
  // and calls no model.
  RestartWithConfig(
      "limits:\n  over_budget: local\n  tenants:\n    acme:\n      daily_usd: 0.001\n");
  const size_t calls_before = fake_->RequestCount();
  Turn local = Chat("list my agents");
  ExpectWellFormed(local);
  const auto errors = local.Of(pb::ChatEvent::kError);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].error().code(), pb::CHAT_ERROR_CODE_BUDGET_EXCEEDED);
  EXPECT_FALSE(errors[0].error().fatal());
  EXPECT_EQ(local.tools_called(), std::vector<std::string>{"list_agents"});
  EXPECT_EQ(local.done().usage().llm_calls(), 0);
  EXPECT_EQ(fake_->RequestCount(), calls_before);
}

TEST_F(ModelPlannerEndToEndTest, APastedCredentialIsMaskedBeforeTheModelOrStorageSeesIt) {
  ASSERT_TRUE(fake_->SetRules({Rule("", false, {.text = "Noted."})}).ok());
  // Assembled at run time so that secret scanners do not flag this file.
  const std::string secret = std::string("sk-") + "proj-" + std::string(40, 'Q');
  const size_t before = fake_->RequestCount();
  Turn turn = Chat("please use our token " + secret + " for the digest agent");
  ExpectWellFormed(turn);
  const auto errors = turn.Of(pb::ChatEvent::kError);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].error().code(), pb::CHAT_ERROR_CODE_SECRET_MASKED);
  EXPECT_FALSE(errors[0].error().fatal());
  // The model was asked, with the message masked.
  const std::vector<llm::testing::RecordedRequest> requests = fake_->Requests();
  ASSERT_GT(requests.size(), before);
  for (size_t i = before; i < requests.size(); ++i) {
    EXPECT_THAT(requests[i].body, Not(HasSubstr(secret)));
    EXPECT_THAT(requests[i].body, HasSubstr("please use our token [REDACTED]"));
  }
  // Stored masked and flagged; nothing the orchestrator kept holds it.
  auto context = Context(key());
  pb::ListMessagesRequest list;
  list.set_conversation_id(turn.session().conversation_id());
  pb::ListMessagesResponse messages;
  ASSERT_TRUE(stub_->ListMessages(context.get(), list, &messages).ok());
  ASSERT_GE(messages.messages_size(), 1);
  EXPECT_EQ(messages.messages(0).content(), "please use our token [REDACTED] for the digest agent");
  EXPECT_TRUE(messages.messages(0).secrets_masked());
  EXPECT_THAT(LastRouting(turn.session().conversation_id()).dump(), Not(HasSubstr(secret)));
  EXPECT_THAT(LastFlow(turn.session().conversation_id()).dump(), Not(HasSubstr(secret)));
  for (auto* process : {orchestrator_, conversation_, intent_}) {
    EXPECT_THAT(process->JoinedLog(), Not(HasSubstr(secret)));
  }
}

TEST_F(ModelPlannerEndToEndTest, ThePlannerMakesAPlanWhoseStepsRunAndSumsItUp) {
  llm::testing::FakeReply call;
  call.tool_calls = {{"", "agent_create_plan",
                      R"({"objective":"Set up onboarding for new hires",)"
                      R"("execution_mode":"auto_execute"})"}};
  llm::testing::FakeReply answer;
  answer.text = "All set: onboarding-buddy now welcomes new hires.";
  ASSERT_TRUE(
      fake_
          ->SetRules(
              {Rule("onboarding", false, call), Rule("onboarding", true, answer),
               PlanGeneration(
                   "",
                   json::array({PlannedStep("s1", "List the agents", "list_agents", json::object()),
                                PlannedStep("s2", "Find the onboarding projects", "search_projects",
                                            {{"query", "onboarding"}}),
                                PlannedStep("s3", "Create the onboarding agent", "create_agent",
                                            {{"name", "onboarding-buddy"},
                                             {"description", "Welcomes new hires"}},
                                            {"s1"})}))})
          .ok());
  const size_t before = fake_->RequestCount();
  Turn shown = Chat("we keep forgetting steps when onboarding new hires, can you sort it out?");
  ExpectWellFormed(shown);
  const std::string conversation = shown.session().conversation_id();
  // The plan creates an agent: auto_execute or not, it waits for the user's
  // approval of its preview, and nothing runs before.
  ASSERT_EQ(shown.Of(pb::ChatEvent::kPlanCreated).size(), 1u);
  ASSERT_EQ(shown.Of(pb::ChatEvent::kPlanReadyForReview).size(), 1u);
  ASSERT_TRUE(shown.preview().has_value());
  const pb::PreviewEvent preview = *shown.preview();
  EXPECT_FALSE(preview.plan_id().empty());
  EXPECT_EQ(preview.action_id(), preview.plan_id());
  ASSERT_EQ(preview.steps_size(), 1);
  EXPECT_EQ(preview.steps(0).tool_name(), "create_agent");
  EXPECT_EQ(json::parse(preview.steps(0).arguments_json())["name"], "onboarding-buddy");
  EXPECT_TRUE(shown.Of(pb::ChatEvent::kStepComplete).empty());
  EXPECT_FALSE(shown.done().is_final());
  EXPECT_TRUE(Invoke("get_agent", {{"agent", "onboarding-buddy"}}).contains("error"));
  ASSERT_EQ(fake_->RequestCount(), before + 3) << "planner, generation, planner";
  // The plan's tool result, before the platform's loop_assessment note.
  const json asked_then = json::parse(fake_->Requests()[before + 2].body)["messages"];
  ASSERT_GE(asked_then.size(), 3u);
  EXPECT_EQ(asked_then[asked_then.size() - 2]["tool_calls"][0]["function"]["name"],
            "loop_assessment");
  const json result_then =
      json::parse(asked_then[asked_then.size() - 3]["content"].get<std::string>());
  EXPECT_EQ(result_then["status"], "pending_review");

  // A client's button approves it: exactly the plan previewed runs.
  pb::StreamChatRequest approve;
  approve.set_conversation_id(conversation);
  approve.mutable_decision()->set_kind(pb::DECISION_KIND_APPROVE);
  approve.mutable_decision()->set_action_id(preview.action_id());
  Turn turn = Send(approve);
  ExpectWellFormed(turn);
  const auto completes = turn.Of(pb::ChatEvent::kStepComplete);
  ASSERT_EQ(completes.size(), 3u);
  for (const auto& e : completes) {
    EXPECT_EQ(e.step_complete().status(), pb::STEP_STATUS_COMPLETED) << e.step_complete().summary();
  }
  EXPECT_EQ(turn.Of(pb::ChatEvent::kExecutorSpawned).size(), 3u);
  EXPECT_THAT(States(turn), ::testing::Contains(pb::AGENT_STATE_EXECUTING_PLAN));
  EXPECT_TRUE(turn.done().is_final());
  EXPECT_EQ(Invoke("get_agent", {{"agent", "onboarding-buddy"}})["agent"]["name"],
            "onboarding-buddy");
  const json first = json::parse(fake_->Requests()[before].body);
  bool offered = false;
  for (const json& tool : first["tools"])
    offered |= tool["function"]["name"] == "agent_create_plan";
  EXPECT_TRUE(offered);
  EXPECT_THAT(LastRouting(conversation)["tools_used"].dump(), HasSubstr("agent_create_plan"));

  // The same approval again runs nothing: the plan is no longer waiting.
  Turn twice = Send(approve);
  ExpectWellFormed(twice);
  EXPECT_TRUE(twice.Of(pb::ChatEvent::kStepStart).empty());
  bool refused = false;
  for (const auto& e : twice.Of(pb::ChatEvent::kError)) {
    refused |= e.error().code() == pb::CHAT_ERROR_CODE_APPROVAL_REFUSED;
  }
  EXPECT_TRUE(refused);
}

TEST_F(ModelPlannerEndToEndTest, ADraftPlanIsRevisedThenApprovedAndRunsWithoutTheModel) {
  llm::testing::FakeReply call;
  call.tool_calls = {{"", "agent_create_plan",
                      R"({"objective":"Automate the weekly report","auto_execute":false})"}};
  llm::testing::FakeReply shown;
  shown.text = "Here is how I would automate the weekly report.";
  const json one =
      json::array({PlannedStep("s1", "List the agents", "list_agents", json::object())});
  const json two = json::array(
      {PlannedStep("s1", "Find the reporting projects", "search_projects", {{"query", "report"}}),
       PlannedStep("s2", "List the agents", "list_agents", json::object(), {"s1"})});
  ASSERT_TRUE(
      fake_
          ->SetRules({Rule("weekly report", false, call), Rule("weekly report", true, shown),
                      PlanGeneration("reporting projects", two), PlanGeneration("", one)})
          .ok());
  Turn draft = Chat("can you take the weekly report off my plate?");
  ExpectWellFormed(draft);
  const std::string conversation = draft.session().conversation_id();
  ASSERT_EQ(draft.Of(pb::ChatEvent::kPlanReadyForReview).size(), 1u);
  const pb::Plan plan =
      draft.Of(pb::ChatEvent::kPlanReadyForReview)[0].plan_ready_for_review().plan();
  EXPECT_EQ(plan.execution_mode(), pb::EXECUTION_MODE_DRAFT_ONLY) << "auto_execute: false";
  EXPECT_EQ(plan.steps_size(), 1);
  EXPECT_TRUE(draft.Of(pb::ChatEvent::kStepStart).empty());
  EXPECT_THAT(draft.text(), HasSubstr(shown.text));
  EXPECT_THAT(draft.text(), HasSubstr("looks good, run it"));
  EXPECT_FALSE(draft.done().is_final());

  // A change: the plan is made again with it, and shown again.
  const size_t planner_calls = RequestsOf(*fake_, "planner_stream");
  Turn revise = Chat("add a step that finds the reporting projects first", conversation);
  ExpectWellFormed(revise);
  ASSERT_EQ(revise.Of(pb::ChatEvent::kPlanReadyForReview).size(), 1u);
  const pb::Plan revised =
      revise.Of(pb::ChatEvent::kPlanReadyForReview)[0].plan_ready_for_review().plan();
  EXPECT_EQ(revised.plan_id(), plan.plan_id());
  EXPECT_EQ(revised.steps_size(), 2);
  EXPECT_TRUE(revise.Of(pb::ChatEvent::kStepStart).empty());
  EXPECT_THAT(revise.text(), HasSubstr("Find the reporting projects"));
  EXPECT_FALSE(revise.done().is_final());
  EXPECT_EQ(LastFlow(conversation)["plan"]["status"], "pending_review");
  // The plan made again without the planner is still the turn's model call:
  // in its usage and in orchestration.llm_usage.
  EXPECT_EQ(RequestsOf(*fake_, "planner_stream"), planner_calls);
  EXPECT_EQ(revise.done().usage().llm_calls(), 1);
  const pqxx::result revise_usage = UsageOf(revise.session().turn_id(), 1);
  ASSERT_EQ(revise_usage.size(), 1u);
  EXPECT_EQ(revise_usage[0][2].as<std::string>(), "plan_generation");

  // Approved: it runs, with no model call.
  const size_t before = fake_->RequestCount();
  Turn run = Chat("looks good, run it", conversation);
  ExpectWellFormed(run);
  EXPECT_EQ(run.Of(pb::ChatEvent::kStepComplete).size(), 2u);
  EXPECT_THAT(run.text(), HasSubstr("Done: the plan for \"Automate the weekly report\""));
  EXPECT_TRUE(run.done().is_final());
  EXPECT_EQ(fake_->RequestCount(), before);
  EXPECT_EQ(RequestsOf(*fake_, "planner_stream"), planner_calls)
      << "reviewing the plan takes no planner call";
}

TEST_F(ModelPlannerEndToEndTest, APlanSuspendedByANewMessageRunsWhenTheFlowIsResumed) {
  llm::testing::FakeReply call;
  call.tool_calls = {{"", "agent_create_plan", R"({"objective":"Survey my workspace"})"}};
  llm::testing::FakeRule slow_generation = PlanGeneration(
      "", json::array({PlannedStep("s1", "List the agents", "list_agents", json::object()),
                       PlannedStep("s2", "Find the projects", "search_projects", json::object())}));
  slow_generation.first_byte_delay_ms = 1500;
  llm::testing::FakeReply quick;
  quick.text = "You have no agents yet.";
  ASSERT_TRUE(fake_
                  ->SetRules({Rule("survey", false, call), slow_generation,
                              Rule("quick question", false, quick)})
                  .ok());
  Turn hello = Chat("hello");
  ASSERT_TRUE(hello.status.ok());
  const std::string conversation = hello.session().conversation_id();
  const size_t before = RequestsOf(*fake_, "plan_generation");
  std::optional<Turn> running;
  std::thread turn([&] { running = Chat("survey my workspace for me", conversation); });
  for (int i = 0; i < 1000 && RequestsOf(*fake_, "plan_generation") == before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GT(RequestsOf(*fake_, "plan_generation"), before) << "the plan was never asked for";
  Turn interrupting = Chat("quick question: which agents do I have?", conversation);
  turn.join();
  ASSERT_TRUE(running.has_value());
  ExpectWellFormed(*running);
  EXPECT_THAT(States(*running), ::testing::Contains(pb::AGENT_STATE_SUSPENDED));
  EXPECT_EQ(running->Of(pb::ChatEvent::kPlanCreated).size(), 1u);
  EXPECT_TRUE(running->Of(pb::ChatEvent::kStepStart).empty()) << "no step starts once suspended";
  ExpectWellFormed(interrupting);
  EXPECT_EQ(interrupting.session().suspended_flow_id(), running->session().flow_id());

  Turn resumed = Chat("go on with that", conversation);
  ExpectWellFormed(resumed);
  EXPECT_EQ(resumed.session().flow_id(), running->session().flow_id());
  EXPECT_TRUE(resumed.Of(pb::ChatEvent::kPlanCreated).empty()) << "the same plan, not a new one";
  EXPECT_EQ(resumed.Of(pb::ChatEvent::kStepComplete).size(), 2u);
  EXPECT_THAT(resumed.text(), HasSubstr("Done: the plan for \"Survey my workspace\""));
  EXPECT_TRUE(resumed.done().is_final());
}

// The turn bus's channel as anyone who may LISTEN reads it, each payload
// opened at once (within its minute) with the bus's key derived from the
// orchestrator's master key, as an operator holding that key would.
class TurnChannelWatch final : public pqxx::notification_receiver {
 public:
  TurnChannelWatch(pqxx::connection_base& conn, seal::MasterKeySet keys)
      : pqxx::notification_receiver(conn, "omniforge_turns"), keys_(std::move(keys)) {}
  void operator()(const std::string& payload, int) override {
    payloads.push_back(payload);
    opened.push_back(OpenTurnBusPayload(keys_, payload));
  }
  // Reads what arrived within `wait`.
  void Drain(std::chrono::milliseconds wait) {
    for (auto until = std::chrono::steady_clock::now() + wait;
         std::chrono::steady_clock::now() < until;) {
      conn().await_notification(0, 50000);
    }
  }

  std::vector<std::string> payloads;
  std::vector<std::optional<std::string>> opened;  // nullopt: it did not open

 private:
  const seal::MasterKeySet keys_;
};

TEST_F(ModelPlannerEndToEndTest, ATurnOnAnotherReplicaIsSuspendedOrCancelledThroughTheDatabase) {
  // A second replica: same database, same services, its own spool.
  testing::ServerProcess second(OMNIFORGE_ORCHESTRATOR_BIN);
  ASSERT_EQ(second.Start(OrchestratorEnv(testing::DatabaseEnv(*db_, "orchestrator"), "spool-2"),
                         {"--config", (*dir_ / "orchestrator.yaml").string()}),
            std::nullopt);
  auto other = pb::ChatService::NewStub(
      grpc::CreateChannel(second.address(), grpc::InsecureChannelCredentials()));
  llm::testing::FakeRule slow = Rule("long story", false, {});
  slow.reply.text = "Once upon a time there was a team whose reports were always late.";
  slow.chunk_delay_ms = 300;
  llm::testing::FakeRule quick = Rule("quick question", false, {});
  quick.reply.text = "You have no agents yet.";
  llm::testing::FakeRule resume = Rule("go on with that", false, {});
  resume.reply.text = "And so the reports were never late again.";
  ASSERT_TRUE(fake_->SetRules({slow, quick, resume}).ok());
  Turn hello = Chat("hello");
  ASSERT_TRUE(hello.status.ok());
  const std::string conversation = hello.session().conversation_id();
  // A word of the user's found nowhere else, in the goal (and so the context
  // box) of the flow that is set aside.
  const std::string canary = "Quillwort" + core::NewUuid().substr(24);
  pqxx::connection listener(db_->dsn());
  TurnChannelWatch channel(listener, {*seal::KeyRing::ParseMasterKey(kMasterKey), "primary", {}});

  // Whether the second replica counts `n` turns running on the first. The
  // start and the end of a turn are signals, so they arrive a moment after
  // the turn began or ended; until the start arrives the second replica
  // neither waits for that turn nor cancels it.
  const auto knows_of = [&](int n) {
    const std::string line = "omniforge_orchestrator_remote_turns " + std::to_string(n) + "\n";
    for (int i = 0; i < 250; ++i) {
      if (MetricsOf(second).find(line) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  };
  // So that it is this turn's start that is heard, not the last one's.
  ASSERT_TRUE(knows_of(0)) << "the end of the last turn never reached the second replica";
  const auto heard_of_it = [&] { return knows_of(1); };

  // A newer message on the second replica suspends the turn on the first.
  const auto on_other = [&](const std::string& message) {
    pb::StreamChatRequest request;
    request.set_message(message);
    request.set_conversation_id(conversation);
    return Send(request, "", other.get());
  };
  size_t before = fake_->RequestCount();
  std::optional<Turn> running;
  std::thread turn([&] { running = Chat("tell me a long story about " + canary, conversation); });
  ASSERT_TRUE(fake_->WaitForRequests(before + 1, 10000)) << "the turn never reached the model";
  ASSERT_TRUE(heard_of_it()) << "the turn's start never reached the second replica";
  Turn interrupting = on_other("quick question: which agents do I have?");
  turn.join();
  ASSERT_TRUE(running.has_value());
  ExpectWellFormed(*running);
  EXPECT_THAT(States(*running), ::testing::Contains(pb::AGENT_STATE_SUSPENDED));
  EXPECT_LT(running->done().usage().duration_ms(), 5000) << "it stops at the next piece";
  ExpectWellFormed(interrupting);
  EXPECT_EQ(interrupting.session().suspended_flow_id(), running->session().flow_id())
      << "the second replica learns what it set aside";
  EXPECT_EQ(interrupting.text(), quick.reply.text);
  channel.Drain(std::chrono::milliseconds(200));

  // Resumed on the second replica: what the flow was about, which the bus
  // does not carry, was read from the flow store.
  const size_t asked_before = fake_->Requests().size();
  Turn resumed = on_other("go on with that");
  ExpectWellFormed(resumed);
  EXPECT_EQ(resumed.session().flow_id(), running->session().flow_id());
  EXPECT_EQ(resumed.text(), resume.reply.text);
  EXPECT_TRUE(resumed.done().is_final());
  const std::vector<llm::testing::RecordedRequest> asked = fake_->Requests();
  auto planner_call = std::find_if(asked.rbegin(), asked.rend(), [](const auto& request) {
    return request.operation == "planner_stream";
  });
  ASSERT_TRUE(planner_call != asked.rend() &&
              planner_call.base() - asked.begin() > static_cast<std::ptrdiff_t>(asked_before))
      << "the resumed turn asked the model";
  EXPECT_THAT(planner_call->body, HasSubstr("RESUMING"));
  EXPECT_THAT(planner_call->body, HasSubstr(canary)) << "the flow's goal, from the store";
  channel.Drain(std::chrono::milliseconds(200));

  // CancelTurn on the second replica cancels a turn running on the first.
  ASSERT_TRUE(knows_of(0)) << "the end of the suspended turn never reached the second replica";
  before = fake_->RequestCount();
  std::optional<Turn> cancelled;
  std::thread second_turn([&] { cancelled = Chat("tell me a long story again", conversation); });
  ASSERT_TRUE(fake_->WaitForRequests(before + 1, 10000));
  ASSERT_TRUE(heard_of_it()) << "the turn's start never reached the second replica";
  pb::CancelTurnRequest cancel;
  cancel.set_conversation_id(conversation);
  pb::CancelTurnResponse response;
  auto context = Context(key());
  ASSERT_TRUE(other->CancelTurn(context.get(), cancel, &response).ok());
  EXPECT_TRUE(response.cancelled());
  second_turn.join();
  ASSERT_TRUE(cancelled.has_value());
  ExpectWellFormed(*cancelled);
  auto errors = cancelled->Of(pb::ChatEvent::kError);
  ASSERT_FALSE(errors.empty());
  EXPECT_EQ(errors.back().error().code(), pb::CHAT_ERROR_CODE_CANCELLED);
  EXPECT_LT(cancelled->done().usage().duration_ms(), 5000);

  // Nothing runs now: once the turn's end has reached it (a signal, so a
  // moment later), the second replica says so.
  bool still_running = true;
  for (int i = 0; i < 100 && still_running; ++i) {
    auto quiet = Context(key());
    ASSERT_TRUE(other->CancelTurn(quiet.get(), cancel, &response).ok());
    still_running = response.cancelled();
    if (still_running) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(still_running) << "the turn's end never reached the second replica";

  // Every signal crossed the channel sealed, and opened it is ids only.
  channel.Drain(std::chrono::milliseconds(300));
  ASSERT_GE(channel.payloads.size(), 6u) << "starts, ends, a suspend and a cancel";
  bool named_set_aside = false;
  for (size_t i = 0; i < channel.payloads.size(); ++i) {
    EXPECT_EQ(channel.payloads[i].find(canary), std::string::npos) << channel.payloads[i];
    ASSERT_TRUE(channel.opened[i].has_value())
        << "not sealed by a replica: " << channel.payloads[i];
    const std::string& text = *channel.opened[i];
    EXPECT_EQ(text.find(canary), std::string::npos) << text;
    EXPECT_EQ(text.find("story"), std::string::npos) << text;
    const json signal = json::parse(text);
    for (const auto& field : signal.items()) {
      EXPECT_THAT(field.key(),
                  ::testing::AnyOf("kind", "conversation", "turn_id", "origin", "set_aside"))
          << text;
    }
    named_set_aside |= signal.value("set_aside", "") == running->session().flow_id();
  }
  EXPECT_TRUE(named_set_aside) << "the end of the suspended turn names its flow, by its id";
}

TEST_F(ModelPlannerEndToEndTest, TheAnswerStreamsAndReadToolsRunInTheSameSession) {
  Invoke("create_agent", {{"name", "invoice-chaser"}, {"description", "Chases invoices"}});
  llm::testing::FakeReply call;
  call.tool_calls = {{"", "list_agents", "{}"}};
  call.usage = llm::testing::FakeUsage{100, 10, 0};
  llm::testing::FakeReply answer;
  answer.text = "You have one agent, invoice-chaser, which chases invoices.";
  answer.usage = llm::testing::FakeUsage{150, 20, 0};
  // The answer's pieces come a few milliseconds apart, as a model's do, so
  // each is written as it comes (pieces that arrive while one is being
  // written are sent together).
  llm::testing::FakeRule answer_rule = Rule("which agents", true, answer);
  answer_rule.chunk_delay_ms = 3;
  ASSERT_TRUE(fake_->SetRules({Rule("which agents", false, call), answer_rule}).ok());
  const size_t before = fake_->RequestCount();
  Turn turn = Chat("which agents do I have running?");
  ExpectWellFormed(turn);
  EXPECT_EQ(turn.tools_called(), std::vector<std::string>{"list_agents"});
  EXPECT_EQ(turn.text(), answer.text);
  EXPECT_GT(turn.Of(pb::ChatEvent::kText).size(), 5u) << "the answer streams in pieces";
  EXPECT_EQ(turn.done().usage().llm_calls(), 2);
  EXPECT_EQ(turn.done().usage().prompt_tokens(), 250);
  EXPECT_EQ(turn.done().usage().completion_tokens(), 30);
  EXPECT_NEAR(turn.done().usage().cost_usd(), (250 * 1.0 + 30 * 2.0) / 1e6, 1e-9);
  EXPECT_TRUE(turn.done().is_final());
  ASSERT_EQ(fake_->RequestCount(), before + 2);
  // Both model calls are recorded for this turn, with who and what they cost.
  const pqxx::result usage = UsageOf(turn.session().turn_id(), 2);
  ASSERT_EQ(usage.size(), 2u);
  int64_t prompt = 0;
  for (const pqxx::row& row : usage) {
    EXPECT_EQ(row[0].as<std::string>(), who().tenant_id);
    EXPECT_EQ(row[1].as<std::string>(), who().user_id);
    EXPECT_EQ(row[2].as<std::string>(), "planner_stream");
    EXPECT_EQ(row[3].as<std::string>(), "balanced");
    EXPECT_EQ(row[4].as<std::string>(), "planner-model");
    EXPECT_EQ(row[8].as<std::string>(), "ok");
    EXPECT_EQ(row[10].as<std::string>(), "CONTEXT_TYPE_GLOBAL");
    EXPECT_EQ(row[11].as<std::string>(), turn.session().conversation_id());
    prompt += row[5].as<int64_t>();
  }
  EXPECT_EQ(prompt, 250);
  // The session carried the tool's result back to the model, and the tools.
  // The tool's result, then the platform's assessment of it (loop_assessment).
  const json second = json::parse(fake_->Requests()[before + 1].body);
  const json& read = second["messages"];
  ASSERT_GE(read.size(), 3u);
  EXPECT_EQ(read[read.size() - 3]["role"], "tool");
  EXPECT_THAT(read[read.size() - 3]["content"].get<std::string>(), HasSubstr("invoice-chaser"));
  EXPECT_THAT(read.back()["content"].get<std::string>(), HasSubstr("\"next\":\"CONTINUE\""));
  EXPECT_FALSE(second["tools"].empty());
}

// The intent service's model calls for a turn are the turn's too: they count
// in its `done` and are recorded under it, beside the planner's.
TEST_F(ModelPlannerEndToEndTest, TheIntentServicesModelCallsAreCountedAndRecordedWithTheTurn) {
  struct Restore {
    ~Restore() { RestartIntent(/*with_model=*/false); }
  } restore;
  RestartIntent(/*with_model=*/true);
  llm::testing::FakeRule understood;
  understood.match.operation = "intent_analysis";
  understood.reply.json = json{{"action_type", "QUERY_INFO"},
                               {"confidence", 0.9},
                               {"entities", json::array()},
                               {"reasoning", "a question about the digest"},
                               {"is_ambiguous", false},
                               {"alternative_action", "NONE"},
                               {"clarifying_question", ""},
                               {"clarification", {{"needed", false}, {"missing", json::array()}}}}
                              .dump();
  understood.reply.usage = llm::testing::FakeUsage{300, 30, 0};
  llm::testing::FakeReply answer;
  answer.text = "The digest went out on Monday.";
  answer.usage = llm::testing::FakeUsage{100, 10, 0};
  ASSERT_TRUE(fake_->SetRules({understood, Rule("digest", false, answer)}).ok());
  size_t before = fake_->RequestCount();
  Turn turn = Chat("how did the digest go this week?");
  ExpectWellFormed(turn);
  EXPECT_EQ(fake_->RequestCount(), before + 2) << "the intent service's call and the planner's";
  ASSERT_EQ(turn.Of(pb::ChatEvent::kIntent).size(), 1u);
  EXPECT_EQ(turn.Of(pb::ChatEvent::kIntent)[0].intent().analysis().source(), pb::INTENT_SOURCE_LLM);
  EXPECT_EQ(turn.text(), answer.text);
  EXPECT_EQ(turn.done().usage().llm_calls(), 2);
  EXPECT_EQ(turn.done().usage().prompt_tokens(), 400);
  EXPECT_EQ(turn.done().usage().completion_tokens(), 40);
  EXPECT_NEAR(turn.done().usage().cost_usd(), (400 * 1.0 + 40 * 2.0) / 1e6, 1e-9);
  const pqxx::result usage = UsageOf(turn.session().turn_id(), 2);
  ASSERT_EQ(usage.size(), 2u);
  std::map<std::string, pqxx::row> by_operation;
  for (const pqxx::row& row : usage) {
    EXPECT_EQ(row[0].as<std::string>(), who().tenant_id);
    EXPECT_EQ(row[1].as<std::string>(), who().user_id);
    EXPECT_EQ(row[8].as<std::string>(), "ok");
    EXPECT_EQ(row[11].as<std::string>(), turn.session().conversation_id());
    by_operation.emplace(row[2].as<std::string>(), row);
  }
  ASSERT_TRUE(by_operation.contains("intent_analysis"));
  const pqxx::row& intent = by_operation.at("intent_analysis");
  EXPECT_EQ(intent[3].as<std::string>(), "speed");
  EXPECT_EQ(intent[4].as<std::string>(), "intent-model");
  EXPECT_EQ(intent[5].as<int64_t>(), 300);
  EXPECT_EQ(intent[6].as<int64_t>(), 30);
  EXPECT_NEAR(intent[7].as<double>(), (300 * 1.0 + 30 * 2.0) / 1e6, 1e-9);
  ASSERT_TRUE(by_operation.contains("planner_stream"));
  EXPECT_EQ(by_operation.at("planner_stream")[5].as<int64_t>(), 100);

  // The next turn of the conversation is read while its message is stored
  // (the early analysis): its model call counts once, like the first's.
  before = fake_->RequestCount();
  Turn next = Chat("and how did the digest go last week?", turn.session().conversation_id());
  ExpectWellFormed(next);
  const size_t calls = fake_->RequestCount() - before;
  EXPECT_GE(calls, 2u);
  EXPECT_EQ(next.done().usage().llm_calls(), static_cast<int>(calls));
  EXPECT_EQ(UsageOf(next.session().turn_id(), calls).size(), calls);
}

// The window an orchestrator keeps after a turn serves the next turn only
// while nothing else is written to the conversation: a message another
// client stores in between reaches the next turn's model call.
TEST_F(ModelPlannerEndToEndTest, AMessageStoredBetweenTurnsByAnotherClientReachesTheNextTurn) {
  llm::testing::FakeReply noted;
  noted.text = "Noted.";
  ASSERT_TRUE(fake_->SetRules({Rule("", false, noted)}).ok());
  auto history_of = [&](size_t request) {
    std::vector<std::string> contents;
    const json body = json::parse(fake_->Requests()[request].body);
    for (const json& m : body["messages"]) {
      if (m["role"] == "user" || m["role"] == "assistant") {
        contents.push_back(m["content"].is_string() ? m["content"].get<std::string>() : "");
      }
    }
    return contents;
  };
  Turn first = Chat("the invoices are numbered by month");
  ExpectWellFormed(first);
  const std::string conversation_id = first.session().conversation_id();
  size_t before = fake_->RequestCount();
  Turn second = Chat("and they are due after 30 days", conversation_id);
  ExpectWellFormed(second);
  ASSERT_EQ(fake_->RequestCount(), before + 1);
  EXPECT_THAT(history_of(before),
              ::testing::IsSupersetOf({"the invoices are numbered by month", "Noted.",
                                       "and they are due after 30 days"}));

  // Another client of the conversation service stores a message.
  ASSERT_TRUE(StoreAsAnotherClient(conversation_id, conversation::v1::ROLE_USER,
                                   "also: the customer prefers email reminders")
                  .ok());

  before = fake_->RequestCount();
  Turn third = Chat("what do you know so far?", conversation_id);
  ExpectWellFormed(third);
  ASSERT_EQ(fake_->RequestCount(), before + 1);
  EXPECT_THAT(history_of(before),
              ::testing::IsSupersetOf(
                  {"the invoices are numbered by month", "and they are due after 30 days",
                   "also: the customer prefers email reminders", "what do you know so far?"}));
  // And the turn after it, from the window kept again, still has it all.
  before = fake_->RequestCount();
  Turn fourth = Chat("thanks", conversation_id);
  ExpectWellFormed(fourth);
  ASSERT_EQ(fake_->RequestCount(), before + 1);
  EXPECT_THAT(history_of(before),
              ::testing::IsSupersetOf({"also: the customer prefers email reminders",
                                       "what do you know so far?", "thanks"}));
}

TEST_F(ModelPlannerEndToEndTest, AFailingModelFallsBackToTheLocalPlanner) {
  llm::testing::FakeRule broken = Rule("", false, {});
  broken.match.last_user_contains = "";
  broken.fault.kind = llm::testing::FakeFault::Kind::kStatus;
  broken.fault.status = 401;
  ASSERT_TRUE(fake_->SetRules({broken}).ok());
  Turn turn = Chat("list my agents");
  ExpectWellFormed(turn);
  auto errors = turn.Of(pb::ChatEvent::kError);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].error().code(), pb::CHAT_ERROR_CODE_MODEL_FAILED);
  EXPECT_FALSE(errors[0].error().fatal());
  EXPECT_EQ(turn.tools_called(), std::vector<std::string>{"list_agents"});
  EXPECT_TRUE(turn.done().is_final());
  const pqxx::result usage = UsageOf(turn.session().turn_id(), 1);
  ASSERT_EQ(usage.size(), 1u);
  EXPECT_EQ(usage[0][8].as<std::string>(), "error");
  EXPECT_EQ(usage[0][9].as<std::string>(), "auth");
  // The failure is in the error log, for this tenant, user and conversation.
  const pqxx::result logged = ErrorsOf(turn.session().turn_id(), 1);
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_EQ(logged[0][0].as<std::string>(), who().tenant_id);
  EXPECT_EQ(logged[0][1].as<std::string>(), who().user_id);
  EXPECT_EQ(logged[0][2].as<std::string>(), turn.session().conversation_id());
  EXPECT_EQ(logged[0][3].as<std::string>(), "model_failed");
  EXPECT_THAT(ErrorMessage(logged[0]), HasSubstr("could not answer"));
  EXPECT_EQ(logged[0][5].as<std::string>(), "llm");
  EXPECT_EQ(logged[0][6].as<std::string>(), "planner_stream");
}

TEST_F(ModelPlannerEndToEndTest, TheTurnStopsWhenItsTimeRunsOutEvenWhileTheModelAnswers) {
  // A turn of 1 s, and a model that takes 3 s to say its piece.
  struct Restore {
    ~Restore() { RestartWithConfig(""); }
  } restore;
  RestartWithConfig("turn:\n  timeout_ms: 1000\n");
  llm::testing::FakeReply slow;
  slow.text = "Let me go through every one of your agents very carefully, one at a time.";
  llm::testing::FakeRule rule = Rule("take your time", false, slow);
  rule.chunk_chars = 3;
  rule.chunk_delay_ms = 120;  // 25 pieces: 3 s
  ASSERT_TRUE(fake_->SetRules({rule}).ok());
  const auto start = std::chrono::steady_clock::now();
  Turn turn = Chat("take your time and tell me about my agents");
  const auto took = std::chrono::steady_clock::now() - start;
  ExpectWellFormed(turn);
  EXPECT_LT(took, std::chrono::milliseconds(2500)) << "the turn ends at its deadline";
  EXPECT_FALSE(turn.text().empty()) << "what the model said in time is shown";
  EXPECT_LT(turn.text().size(), slow.text.size());
  auto errors = turn.Of(pb::ChatEvent::kError);
  ASSERT_FALSE(errors.empty());
  EXPECT_EQ(errors.back().error().code(), pb::CHAT_ERROR_CODE_TIME_LIMIT);
  EXPECT_TRUE(errors.back().error().fatal());
  size_t time_limits = 0;
  for (const auto& e : errors) time_limits += e.error().code() == pb::CHAT_ERROR_CODE_TIME_LIMIT;
  EXPECT_EQ(time_limits, 1u) << "said once";
  const pqxx::result logged = ErrorsOf(turn.session().turn_id(), 1);
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_EQ(logged[0][3].as<std::string>(), "time_limit");
  EXPECT_EQ(logged[0][5].as<std::string>(), "turn");
  EXPECT_EQ(logged[0][6].as<std::string>(), "planner_stream");
  EXPECT_EQ(logged[0][7].as<std::string>(), "");
  // What was said is stored as the reply, at once (not left to the spool).
  EXPECT_FALSE(turn.done().assistant_message_id().empty());
  EXPECT_EQ(LastRouting(turn.session().conversation_id()).value("turn_id", ""),
            turn.session().turn_id());
}

// A client that retries a turn it lost sight of while the turn still runs
// is told to wait (ABORTED), and the turn is not run a second time; once it
// has ended, the retry replays it.
TEST_F(ModelPlannerEndToEndTest, ARetryOfATurnStillRunningIsAbortedAndLaterReplayed) {
  llm::testing::FakeReply slow;
  slow.text = "Looking at each of your agents in turn, slowly.";
  llm::testing::FakeRule rule = Rule("look slowly", false, slow);
  rule.chunk_chars = 4;
  rule.chunk_delay_ms = 60;  // about 0.8 s
  ASSERT_TRUE(fake_->SetRules({rule}).ok());
  Turn hello = Chat("hello");
  ASSERT_TRUE(hello.status.ok());
  const std::string conversation = hello.session().conversation_id();
  const size_t before = RequestsOf(*fake_, "planner_stream");
  std::optional<Turn> first;
  std::thread running([&] { first = Chat("look slowly at my agents", conversation, "retry-1"); });
  for (int i = 0; i < 500 && RequestsOf(*fake_, "planner_stream") == before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GT(RequestsOf(*fake_, "planner_stream"), before) << "the turn never reached the model";
  Turn retry = Chat("look slowly at my agents", conversation, "retry-1");
  running.join();
  EXPECT_EQ(retry.status.error_code(), grpc::StatusCode::ABORTED) << retry.status.error_message();
  EXPECT_THAT(retry.status.error_message(), HasSubstr("still running"));
  EXPECT_TRUE(retry.events.empty());
  ASSERT_TRUE(first.has_value());
  ExpectWellFormed(*first);
  EXPECT_EQ(first->text(), slow.text) << "the first run was not disturbed";
  EXPECT_EQ(RequestsOf(*fake_, "planner_stream"), before + 1) << "the model was asked once";

  Turn later = Chat("look slowly at my agents", conversation, "retry-1");
  ASSERT_TRUE(later.status.ok()) << later.status.error_message();
  EXPECT_TRUE(later.session().replayed());
  EXPECT_EQ(later.text(), first->text());
  EXPECT_EQ(RequestsOf(*fake_, "planner_stream"), before + 1);
}

// The planner's profile follows the client's context type (planner.profiles:
// a task screen plans on `quality` here, everything else on `balanced`).
TEST_F(ModelPlannerEndToEndTest, ThePlannerProfileFollowsTheContextType) {
  llm::testing::FakeReply answer;
  answer.text = "Start with the checklist.";
  ASSERT_TRUE(fake_->SetRules({Rule("", false, answer)}).ok());
  auto model_of_next_planner_call = [&](pb::ContextType type) {
    const size_t before = fake_->RequestCount();
    const std::string entity = type == pb::CONTEXT_TYPE_GLOBAL ? "" : "entity-1";
    Turn turn = ChatIn(type, "what should I do next here?", "", entity);
    ExpectWellFormed(turn);
    EXPECT_EQ(turn.text(), answer.text);
    std::string model;
    for (size_t i = before; i < fake_->RequestCount(); ++i) {
      const llm::testing::RecordedRequest request = fake_->Requests()[i];
      if (request.operation == "planner_stream") model = json::parse(request.body)["model"];
    }
    return model;
  };
  EXPECT_EQ(model_of_next_planner_call(pb::CONTEXT_TYPE_TASK), "reviewer-model");
  EXPECT_EQ(model_of_next_planner_call(pb::CONTEXT_TYPE_GLOBAL), "planner-model");
  EXPECT_EQ(model_of_next_planner_call(pb::CONTEXT_TYPE_PROJECT), "planner-model");
}

// The journeys with the planner on the model (the fake provider plays the
// model; what is checked is what the orchestrator gives it and does with
// its answers).

// (3) A draft the model proposed survives a restart of the orchestrator:
// the "yes" after it runs the draft, without asking the model again.
TEST_F(ModelPlannerEndToEndTest, WithTheModelTheConversationResumesAfterTheOrchestratorRestarts) {
  llm::testing::FakeReply draft;
  draft.text = "I can set up an agent that chases them.";
  draft.tool_calls = {{"", "create_agent",
                       R"({"name":"sales-report-chaser","description":"Chases late weekly )"
                       R"(sales reports","schedule":"every friday at 4pm"})"}};
  ASSERT_TRUE(fake_->SetRules({Rule("sales reports", false, draft)}).ok());
  Turn first = Chat("our weekly sales reports are always late");
  ExpectWellFormed(first);
  ASSERT_TRUE(first.preview().has_value());
  EXPECT_EQ(first.preview()->tool_name(), "create_agent");
  EXPECT_TRUE(first.tools_called().empty());

  RestartWithConfig("");
  const size_t before = RequestsOf(*fake_, "planner_stream");
  Turn yes = Chat("yes", first.session().conversation_id());
  ExpectWellFormed(yes);
  EXPECT_EQ(yes.tools_called(), std::vector<std::string>{"create_agent"});
  EXPECT_EQ(RequestsOf(*fake_, "planner_stream"), before) << "a yes needs no model call";
  const json agent = Invoke("get_agent", {{"agent", "sales-report-chaser"}})["agent"];
  EXPECT_EQ(agent["schedule"], "every Friday at 16:00 (UTC)");
  EXPECT_EQ(agent["description"], "Chases late weekly sales reports");
}

// (4) "list my agents" then "run the first one": the model is given the
// listing it wrote and the intent service's reading of "the first one", and
// its run_agent call waits for the user's yes, then runs that agent.
TEST_F(ModelPlannerEndToEndTest, WithTheModelListThenRunTheFirstOneRunsTheRightAgent) {
  CreateTwoAgents();
  llm::testing::FakeReply list_call;
  list_call.tool_calls = {{"", "list_agents", "{}"}};
  llm::testing::FakeReply listing;
  listing.text = "Your agents:\n1. invoice-chaser\n2. weekly-sales-digest";
  llm::testing::FakeReply run_call;
  run_call.text = "Running invoice-chaser.";
  run_call.tool_calls = {{"", "run_agent", R"({"agent":"invoice-chaser"})"}};
  ASSERT_TRUE(fake_
                  ->SetRules({Rule("list my agents", false, list_call),
                              Rule("list my agents", true, listing),
                              Rule("run the first one", false, run_call)})
                  .ok());
  Turn list = Chat("list my agents");
  ExpectWellFormed(list);
  EXPECT_EQ(list.tools_called(), std::vector<std::string>{"list_agents"});
  EXPECT_EQ(list.text(), listing.text);
  const std::string conversation = list.session().conversation_id();

  const size_t before = fake_->RequestCount();
  Turn run = Chat("run the first one", conversation);
  ExpectWellFormed(run);
  EXPECT_EQ(run.Of(pb::ChatEvent::kIntent)[0].intent().analysis().entities().at("agent_name"),
            "invoice-chaser");
  ASSERT_GT(fake_->RequestCount(), before);
  const json asked = json::parse(fake_->Requests()[before].body);
  EXPECT_THAT(asked["messages"].dump(), HasSubstr("1. invoice-chaser")) << "the listing";
  ASSERT_TRUE(run.preview().has_value());
  EXPECT_EQ(run.preview()->tool_name(), "run_agent");
  EXPECT_EQ(PreviewTarget(*run.preview()), "invoice-chaser");
  EXPECT_EQ(run.preview()->summary(), "run 'invoice-chaser' now.");
  EXPECT_TRUE(run.tools_called().empty()) << "nothing runs before the yes";

  YesRunsTheAgent(conversation, "invoice-chaser");
}

// (5) An unclear request: the model is told the user's agents, so its
// question offers those; the answer continues the same flow and leads to
// the agent picked.
TEST_F(ModelPlannerEndToEndTest, WithTheModelAnUnclearRequestGetsOptionsTiedToTheUsersAgents) {
  CreateTwoAgents();
  llm::testing::FakeReply question;
  question.text = "Which agent should I run: invoice-chaser or weekly-sales-digest?";
  llm::testing::FakeReply pick;
  pick.tool_calls = {{"", "run_agent", R"({"agent":"weekly-sales-digest"})"}};
  ASSERT_TRUE(fake_
                  ->SetRules({Rule("run one of my agents", false, question),
                              Rule("the second one", false, pick)})
                  .ok());
  const size_t before = fake_->RequestCount();
  Turn ask = Chat("run one of my agents");
  ExpectWellFormed(ask);
  ASSERT_GT(fake_->RequestCount(), before);
  // The model is given the user's agents as data (a tool message), not in
  // its instructions.
  const json sent = json::parse(fake_->Requests()[before].body);
  std::string data;
  for (const json& m : sent["messages"]) {
    if (m["role"] == "tool" && m["tool_call_id"] == "task-data") data = m["content"];
  }
  EXPECT_THAT(data, HasSubstr("invoice-chaser"));
  EXPECT_THAT(data, HasSubstr("weekly-sales-digest"));
  EXPECT_THAT(SystemPrompt(fake_->Requests()[before]), ::testing::Not(HasSubstr("invoice-chaser")));
  EXPECT_EQ(ask.text(), question.text);
  EXPECT_FALSE(ask.done().is_final()) << "the flow waits for the answer";
  EXPECT_EQ(LastFlow(ask.session().conversation_id())["clarifications"], 1);

  Turn answer = Chat("the second one", ask.session().conversation_id());
  ExpectWellFormed(answer);
  EXPECT_EQ(answer.session().flow_id(), ask.session().flow_id());
  ASSERT_TRUE(answer.preview().has_value());
  EXPECT_EQ(PreviewTarget(*answer.preview()), "weekly-sales-digest");
}

// CancelTurn reaches only the caller's own turns: another tenant naming the
// conversation cancels nothing, and the turn ends as it would have.
TEST_F(ModelPlannerEndToEndTest, AnotherTenantCannotCancelATurn) {
  llm::testing::FakeReply slow;
  slow.text = "A careful answer, written slowly.";
  llm::testing::FakeRule rule = Rule("carefully", false, slow);
  rule.chunk_chars = 4;
  rule.chunk_delay_ms = 50;
  ASSERT_TRUE(fake_->SetRules({rule}).ok());
  Turn hello = Chat("hello");
  ASSERT_TRUE(hello.status.ok());
  const std::string conversation = hello.session().conversation_id();
  const size_t before = fake_->RequestCount();
  std::optional<Turn> running;
  std::thread turn([&] { running = Chat("answer carefully", conversation); });
  ASSERT_TRUE(fake_->WaitForRequests(before + 1, 10000));
  pb::CancelTurnRequest cancel;
  cancel.set_conversation_id(conversation);
  pb::CancelTurnResponse response;
  auto context = Context(keys_->back().second);
  const grpc::Status status = stub_->CancelTurn(context.get(), cancel, &response);
  turn.join();
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_FALSE(response.cancelled());
  ASSERT_TRUE(running.has_value());
  ExpectWellFormed(*running);
  EXPECT_TRUE(running->Of(pb::ChatEvent::kError).empty());
  EXPECT_EQ(running->text(), slow.text);
}

TEST_F(ModelPlannerEndToEndTest, TheContextBoxIsStoredPerFlowAndFedToEveryPlannerCall) {
  llm::testing::FakeReply draft;
  draft.text = "I'll set that up.";
  draft.tool_calls = {
      {"", "create_agent",
       R"({"name":"standup-digest","description":"Sums up standups","schedule":"daily"})"}};
  llm::testing::FakeReply weekly = draft;
  weekly.tool_calls[0].arguments_json =
      R"({"name":"standup-digest","description":"Sums up standups","schedule":"weekly"})";
  ASSERT_TRUE(fake_->SetRules({Rule("standup", false, draft), Rule("weekly", false, weekly)}).ok());
  Turn ask = Chat("our standup notes pile up, can you make something that sums them up daily?");
  ExpectWellFormed(ask);
  ASSERT_TRUE(ask.preview().has_value());
  const std::string flow = ask.session().flow_id();
  pqxx::result row = FlowOf(flow);
  ASSERT_EQ(row.size(), 1u);
  EXPECT_EQ(row[0][0].as<std::string>(), "waiting");
  EXPECT_THAT(row[0][1].as<std::string>(), Not(HasSubstr("standup"))) << "sealed at rest";
  json box = BoxOf(row[0], flow);
  EXPECT_THAT(box["goal"].get<std::string>(), HasSubstr("our standup notes pile up"));
  EXPECT_THAT(box["blockers"].dump(), HasSubstr("waiting for the user's approval"));
  EXPECT_THAT(box["next"].dump(), HasSubstr("run create_agent once approved"));
  EXPECT_EQ(row[0][3].as<std::string>(), ask.session().conversation_id());
  EXPECT_EQ(row[0][4].as<std::string>(), who().user_id);
  EXPECT_FALSE(LastRouting(ask.session().conversation_id()).contains("context_box"))
      << "with a database the box lives in orchestration.flows only";

  const size_t before = fake_->RequestCount();
  Turn revise = Chat("make it weekly instead", ask.session().conversation_id());
  ExpectWellFormed(revise);
  EXPECT_EQ(revise.session().flow_id(), flow);
  ASSERT_EQ(fake_->RequestCount(), before + 1);
  const std::string prompt = SystemPrompt(fake_->Requests()[before]);
  EXPECT_THAT(prompt, HasSubstr("GOAL: our standup notes pile up"));
  EXPECT_THAT(prompt, HasSubstr("BLOCKERS: waiting for the user's approval"));
  EXPECT_THAT(prompt, HasSubstr("NEXT: run create_agent once approved"));

  Turn yes = Chat("yes", ask.session().conversation_id());
  ExpectWellFormed(yes);
  EXPECT_EQ(yes.tools_called(), std::vector<std::string>{"create_agent"});
  row = FlowOf(flow);
  ASSERT_EQ(row.size(), 1u) << "one row per flow, updated by each turn";
  EXPECT_EQ(row[0][0].as<std::string>(), "done");
  EXPECT_EQ(row[0][2].as<std::string>(), yes.session().turn_id());
  box = BoxOf(row[0], flow);
  EXPECT_THAT(box["progress"].dump(), HasSubstr("approved create_agent"));
  EXPECT_THAT(box["progress"].dump(), HasSubstr("ran create_agent"));
  EXPECT_THAT(box["data"].dump(), HasSubstr("standup-digest"));
  EXPECT_TRUE(box["blockers"].empty());
}

TEST_F(ModelPlannerEndToEndTest, CancelTurnStopsARunningTurn) {
  llm::testing::FakeRule slow = Rule("long story", false, {});
  slow.reply.text = "This answer takes a long time to write, one piece at a time.";
  slow.chunk_delay_ms = 300;
  ASSERT_TRUE(fake_->SetRules({slow}).ok());
  Turn first = Chat("hello");  // makes the conversation (the model echoes at once)
  ASSERT_TRUE(first.status.ok());
  const std::string conversation = first.session().conversation_id();

  const size_t before = fake_->RequestCount();
  std::optional<Turn> running;
  std::thread turn([&] { running = Chat("tell me a long story", conversation, "turn-to-cancel"); });
  ASSERT_TRUE(fake_->WaitForRequests(before + 1, 10000)) << "the turn never reached the model";
  auto context = Context(key());
  pb::CancelTurnRequest cancel;
  cancel.set_conversation_id(conversation);
  cancel.set_turn_id("turn-to-cancel");
  pb::CancelTurnResponse cancelled;
  ASSERT_TRUE(stub_->CancelTurn(context.get(), cancel, &cancelled).ok());
  EXPECT_TRUE(cancelled.cancelled());
  turn.join();
  ASSERT_TRUE(running.has_value());
  ExpectWellFormed(*running);
  EXPECT_LT(running->done().usage().duration_ms(), 3000) << "the stream stops at the next piece";
  auto errors = running->Of(pb::ChatEvent::kError);
  ASSERT_EQ(errors.size(), 1u) << "cancelled, and nothing else reported as failing";
  EXPECT_EQ(errors.back().error().code(), pb::CHAT_ERROR_CODE_CANCELLED);
  // The user's choice, not a failure: the error log stays empty (its rows
  // are written within milliseconds).
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  {
    pqxx::connection conn(db_->dsn());
    pqxx::nontransaction tx(conn);
    EXPECT_EQ(tx.exec_params("SELECT count(*) FROM orchestration.error_log WHERE turn_id = $1",
                             std::string("turn-to-cancel"))[0][0]
                  .as<int>(),
              0);
  }

  // Nothing runs any more: a second cancel finds no turn.
  context = Context(key());
  ASSERT_TRUE(stub_->CancelTurn(context.get(), cancel, &cancelled).ok());
  EXPECT_FALSE(cancelled.cancelled());
}

// A third-party MCP server whose hints lie: its tidy_mailbox says it only
// reads, yet it deletes the mailbox. The operator did not trust its hints,
// so the model's call is previewed as a write and waits; nothing is deleted.
TEST_F(ModelPlannerEndToEndTest, AnMcpToolThatClaimsToOnlyReadIsPreviewedAsAWrite) {
  if (!mcp::testing::NodeAvailable()) GTEST_SKIP() << "node is not on PATH";
  const auto own = OrchestratorOnExecutorWith(
      std::string("    mail:\n      transport: stdio\n      command: node\n      args: [") +
      OMNIFORGE_SOURCE_DIR + "/services/executor/tests/fake_saas_mcp.mjs, email]\n");
  ASSERT_NE(own->process, nullptr);
  llm::testing::FakeReply call;
  call.tool_calls = {{"", "mail__tidy_mailbox", "{}"}};
  ASSERT_TRUE(fake_->SetRules({Rule("mailbox", false, call)}).ok());
  Turn turn = Chat("how tidy is my mailbox?");
  ExpectWellFormed(turn);
  EXPECT_TRUE(turn.tools_called().empty()) << "nothing ran on the server's word";
  ASSERT_TRUE(turn.preview().has_value());
  EXPECT_EQ(turn.preview()->tool_name(), "mail__tidy_mailbox");
  EXPECT_NE(turn.preview()->risk(), execpb::TOOL_RISK_READ);
  EXPECT_FALSE(turn.done().is_final());
}

// A CancelTurn while a slow tool runs (a connected MCP server's 30-second
// operation) cuts the tool's call: the turn ends at once, cancelled, with
// nothing reported as failing.
TEST_F(ModelPlannerEndToEndTest, CancelTurnDuringASlowToolCallEndsTheTurnAtOnce) {
  if (!mcp::testing::NodeAvailable()) GTEST_SKIP() << "node is not on PATH";
  const std::filesystem::path everything = mcp::testing::ServerScript("server-everything");
  ASSERT_TRUE(std::filesystem::exists(everything))
      << mcp::testing::MissingPackageMessage("server-everything");
  // An executor of its own, connected to the MCP server (its read-only
  // tools run at once), and an orchestrator on it.
  const auto own = OrchestratorOnExecutorWith(
      "    everything:\n      transport: stdio\n      command: node\n      args: [" +
      everything.string() + ", stdio]\n      trust: read_hints\n");
  ASSERT_NE(own->process, nullptr);
  llm::testing::FakeReply call;
  call.tool_calls = {
      {"", "everything__trigger-long-running-operation", R"({"duration":30,"steps":30})"}};
  ASSERT_TRUE(fake_->SetRules({Rule("long job", false, call)}).ok());

  pb::StreamChatRequest request;
  request.set_message("start the long job");
  request.set_turn_id("slow-tool-turn");
  auto context = Context(key());
  auto reader = stub_->StreamChat(context.get(), request);
  Turn turn;
  pb::ChatEvent event;
  while (reader->Read(&event)) {
    turn.events.push_back(event);
    if (event.has_tool_call()) break;
  }
  ASSERT_FALSE(turn.Of(pb::ChatEvent::kToolCall).empty()) << "the model's tool call never came";
  EXPECT_EQ(turn.tools_called(),
            std::vector<std::string>{"everything__trigger-long-running-operation"});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the tool is running
  const auto cancelled_at = std::chrono::steady_clock::now();
  auto cancel_context = Context(key());
  pb::CancelTurnRequest cancel;
  cancel.set_conversation_id(turn.session().conversation_id());
  cancel.set_turn_id("slow-tool-turn");
  pb::CancelTurnResponse cancelled;
  ASSERT_TRUE(stub_->CancelTurn(cancel_context.get(), cancel, &cancelled).ok());
  EXPECT_TRUE(cancelled.cancelled());
  testing::ReadToEnd(*reader, turn);
  const auto took = std::chrono::steady_clock::now() - cancelled_at;
  // The executor's call to the MCP server is cut as well, not left to run
  // its 30 seconds: the executor counts the tool's call as CANCELLED.
  bool executor_cancelled = false;
  httplib::Client metrics("127.0.0.1", own->process->metrics_port());
  for (int i = 0; i < 150 && !executor_cancelled; ++i) {
    if (auto page = metrics.Get("/metrics")) {
      std::istringstream lines(page->body);
      for (std::string line; std::getline(lines, line);) {
        executor_cancelled |= line.find("trigger-long-running-operation") != std::string::npos &&
                              line.find("outcome=\"CANCELLED\"") != std::string::npos;
      }
    }
    if (!executor_cancelled) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const auto executor_took = std::chrono::steady_clock::now() - cancelled_at;

  ExpectWellFormed(turn);
  EXPECT_LT(took, std::chrono::seconds(3)) << "the tool's call is cut, not waited for";
  EXPECT_TRUE(executor_cancelled) << "the executor's MCP call ran on";
  EXPECT_LT(executor_took, std::chrono::seconds(4));
  auto errors = turn.Of(pb::ChatEvent::kError);
  ASSERT_EQ(errors.size(), 1u) << "cancelled, and the cut call not reported as failing";
  EXPECT_EQ(errors[0].error().code(), pb::CHAT_ERROR_CODE_CANCELLED);
  for (const pb::ChatEvent& result : turn.Of(pb::ChatEvent::kToolResult)) {
    EXPECT_THAT(result.tool_result().result_json(), ::testing::Not(HasSubstr("completed")));
  }
}

TEST_F(ModelPlannerEndToEndTest, ANewMessageSuspendsTheRunningFlowWhichResumesOnRequest) {
  llm::testing::FakeRule slow = Rule("long story", false, {});
  slow.reply.text = "Once upon a time there was a team whose reports were always late.";
  slow.chunk_delay_ms = 300;
  llm::testing::FakeRule quick = Rule("quick question", false, {});
  quick.reply.text = "You have no agents yet.";
  llm::testing::FakeRule resumed = Rule("go on with that", false, {});
  resumed.reply.text = "Where was I: the reports were always late, until an agent took over.";
  ASSERT_TRUE(fake_->SetRules({slow, quick, resumed}).ok());
  Turn first = Chat("hello");
  ASSERT_TRUE(first.status.ok());
  const std::string conversation = first.session().conversation_id();

  const size_t before = fake_->RequestCount();
  std::optional<Turn> running;
  std::thread turn([&] { running = Chat("tell me a long story", conversation); });
  ASSERT_TRUE(fake_->WaitForRequests(before + 1, 10000)) << "the turn never reached the model";
  Turn interrupting = Chat("quick question: which agents do I have?", conversation);
  turn.join();
  ASSERT_TRUE(running.has_value());

  // The running turn ends cleanly, saying it was suspended, not failed.
  ExpectWellFormed(*running);
  EXPECT_LT(running->done().usage().duration_ms(), 5000) << "it stops at the next piece";
  EXPECT_THAT(States(*running), ::testing::Contains(pb::AGENT_STATE_SUSPENDED));
  EXPECT_TRUE(running->Of(pb::ChatEvent::kError).empty());
  EXPECT_FALSE(running->done().is_final());
  EXPECT_THAT(running->text(), HasSubstr("say \"continue\""));
  const std::string suspended_flow = running->session().flow_id();
  pqxx::result row = FlowOf(suspended_flow);
  ASSERT_EQ(row.size(), 1u);
  EXPECT_EQ(row[0][0].as<std::string>(), "suspended");
  json box = BoxOf(row[0], suspended_flow);
  EXPECT_EQ(box["goal"], "tell me a long story");
  EXPECT_THAT(box["next"].dump(), HasSubstr("finish the answer to: tell me a long story"));
  EXPECT_THAT(box["blockers"].dump(), HasSubstr("suspended by a newer message"));

  // The new turn knows what it suspended, and answers its own message.
  ExpectWellFormed(interrupting);
  EXPECT_EQ(interrupting.session().suspended_flow_id(), suspended_flow);
  EXPECT_NE(interrupting.session().flow_id(), suspended_flow);
  EXPECT_EQ(interrupting.text(), quick.reply.text);
  EXPECT_TRUE(interrupting.done().is_final());
  EXPECT_TRUE(RowsOf("SELECT 1 FROM orchestration.flows WHERE flow_id = $1",
                     interrupting.session().flow_id(), 0)
                  .empty())
      << "a flow done within its first turn writes no row";

  // Asked to, a later turn resumes the suspended flow with its state.
  const size_t resume_from = fake_->RequestCount();
  Turn resume = Chat("go on with that", conversation);
  ExpectWellFormed(resume);
  EXPECT_EQ(resume.session().flow_id(), suspended_flow);
  EXPECT_EQ(resume.Of(pb::ChatEvent::kIntent)[0].intent().analysis().source(),
            pb::INTENT_SOURCE_FAST_PATH);
  EXPECT_EQ(resume.text(), resumed.reply.text);
  ASSERT_EQ(fake_->RequestCount(), resume_from + 1);
  const std::string prompt = SystemPrompt(fake_->Requests()[resume_from]);
  EXPECT_THAT(prompt, HasSubstr("GOAL: tell me a long story"));
  EXPECT_THAT(prompt, HasSubstr("RESUMING"));
  EXPECT_THAT(prompt, HasSubstr("finish the answer to: tell me a long story"));
  row = FlowOf(suspended_flow);
  ASSERT_EQ(row.size(), 1u);
  EXPECT_EQ(row[0][0].as<std::string>(), "done");
  EXPECT_FALSE(LastRouting(conversation).contains("suspended_flow"))
      << "resumed: nothing set aside";
}

// A stream of StreamChat read event by event, so that a test can stop
// reading (drop the stream) where it likes.
struct OpenStream {
  std::unique_ptr<grpc::ClientContext> context;
  std::unique_ptr<grpc::ClientReader<pb::ChatEvent>> reader;
};

OpenStream Open(pb::ChatService::Stub& stub, const std::string& key,
                const pb::StreamChatRequest& request) {
  OpenStream stream;
  stream.context = std::make_unique<grpc::ClientContext>();
  stream.context->AddMetadata("authorization", "Bearer " + key);
  stream.context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  stream.reader = stub.StreamChat(stream.context.get(), request);
  return stream;
}

pb::StreamChatRequest ReattachRequest(const std::string& conversation_id,
                                      const std::string& turn_id, int after_seq) {
  pb::StreamChatRequest request;
  request.set_conversation_id(conversation_id);
  request.set_turn_id(turn_id);
  request.set_resume_after_seq(after_seq);
  return request;
}

// The events other than heartbeats.
std::vector<pb::ChatEvent> WithoutHeartbeats(const std::vector<pb::ChatEvent>& events) {
  std::vector<pb::ChatEvent> out;
  for (const pb::ChatEvent& e : events) {
    if (!e.has_heartbeat()) out.push_back(e);
  }
  return out;
}

// The events are numbered first_seq, first_seq + 1, ... and the last is done.
void ExpectContinuesAfter(const std::vector<pb::ChatEvent>& events, int after_seq) {
  ASSERT_FALSE(events.empty());
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].seq(), after_seq + static_cast<int>(i) + 1) << events[i].ShortDebugString();
    EXPECT_EQ(events[i].has_done(), i + 1 == events.size());
  }
}

std::string TextOf(const std::vector<pb::ChatEvent>& events) {
  std::string text;
  for (const pb::ChatEvent& e : events) text += e.text().delta();
  return text;
}

TEST_F(ModelPlannerEndToEndTest, AClientThatDropsItsStreamReattachesAndGetsEveryEventOnce) {
  const std::string reply = "The long answer comes in many small pieces, slowly, to the end.";
  llm::testing::FakeRule slow = Rule("tell me slowly", false, {.text = reply});
  slow.chunk_delay_ms = 100;
  ASSERT_TRUE(fake_->SetRules({slow}).ok());
  const std::string turn_id = "resume-" + core::NewUuid();

  pb::StreamChatRequest request;
  request.set_message("tell me slowly");
  request.set_turn_id(turn_id);
  request.set_detach_on_disconnect(true);
  OpenStream first = Open(*stub_, key(), request);
  std::vector<pb::ChatEvent> seen;
  pb::ChatEvent event;
  // Dropped after the second piece of text, mid-answer.
  while (first.reader->Read(&event)) {
    seen.push_back(event);
    if (TextOf(seen).size() >= 8) break;
  }
  ASSERT_GE(seen.size(), 2u);
  ASSERT_TRUE(seen.front().has_session());
  ASSERT_FALSE(seen.back().has_done()) << "dropped before the turn ended";
  first.context->TryCancel();
  first.reader->Finish();
  const std::string conversation = seen.front().session().conversation_id();
  const int last_seen = seen.back().seq();

  OpenStream second = Open(*stub_, key(), ReattachRequest(conversation, turn_id, last_seen));
  std::vector<pb::ChatEvent> rest;
  while (second.reader->Read(&event)) rest.push_back(event);
  ASSERT_TRUE(second.reader->Finish().ok());
  rest = WithoutHeartbeats(rest);
  ExpectContinuesAfter(rest, last_seen);
  EXPECT_EQ(TextOf(seen) + TextOf(rest), reply) << "every piece once, in order";
  EXPECT_TRUE(rest.back().done().is_final());

  // Finished, within the window: the same events again.
  Turn again = Send(ReattachRequest(conversation, turn_id, last_seen));
  ASSERT_TRUE(again.status.ok()) << again.status.error_message();
  ASSERT_EQ(again.events.size(), rest.size());
  for (size_t i = 0; i < rest.size(); ++i) {
    EXPECT_EQ(again.events[i].SerializeAsString(), rest[i].SerializeAsString());
  }
  // Nothing after the last event but the end of the stream.
  Turn none = Send(ReattachRequest(conversation, turn_id, rest.back().seq()));
  EXPECT_TRUE(none.status.ok());
  EXPECT_TRUE(none.events.empty());

  // Another tenant's key does not find the turn; a seq never sent, a
  // negative one or an unknown turn are refused.
  const std::string other = keys_->back().second;
  Turn theirs = Send(ReattachRequest(conversation, turn_id, last_seen), other);
  EXPECT_EQ(theirs.status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(core::ReasonOf(core::FromGrpcStatus(theirs.status)), "TURN_NOT_FOUND");
  EXPECT_TRUE(theirs.events.empty());
  Turn beyond = Send(ReattachRequest(conversation, turn_id, rest.back().seq() + 1));
  EXPECT_EQ(beyond.status.error_code(), grpc::StatusCode::OUT_OF_RANGE);
  const absl::Status beyond_status = core::FromGrpcStatus(beyond.status);
  EXPECT_EQ(core::ReasonOf(beyond_status), "RESUME_SEQ_OUT_OF_RANGE");
  EXPECT_EQ(core::ReasonMetadataOf(beyond_status)["last_seq"], std::to_string(rest.back().seq()));
  EXPECT_TRUE(beyond.events.empty());
  Turn negative = Send(ReattachRequest(conversation, turn_id, -1));
  EXPECT_EQ(negative.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  const absl::Status negative_status = core::FromGrpcStatus(negative.status);
  ASSERT_EQ(core::FieldViolationsOf(negative_status).size(), 1u);
  EXPECT_EQ(core::FieldViolationsOf(negative_status)[0].field, "resume_after_seq");
  Turn unknown = Send(ReattachRequest(conversation, "never-" + core::NewUuid(), 0));
  EXPECT_EQ(unknown.status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(core::ReasonOf(core::FromGrpcStatus(unknown.status)), "TURN_NOT_FOUND");
  EXPECT_TRUE(unknown.events.empty());
}

TEST_F(ModelPlannerEndToEndTest, AStreamDroppedWithoutDetachingCancelsItsTurn) {
  llm::testing::FakeRule slow =
      Rule("cancel me slowly", false, {.text = "This answer is long and slow to come."});
  slow.chunk_delay_ms = 150;
  ASSERT_TRUE(fake_->SetRules({slow}).ok());
  const std::string turn_id = "drop-" + core::NewUuid();
  pb::StreamChatRequest request;
  request.set_message("cancel me slowly");
  request.set_turn_id(turn_id);
  OpenStream first = Open(*stub_, key(), request);
  pb::ChatEvent event;
  std::string conversation;
  while (first.reader->Read(&event) && !event.has_text()) {
    if (event.has_session()) conversation = event.session().conversation_id();
  }
  ASSERT_FALSE(conversation.empty());
  first.context->TryCancel();
  first.reader->Finish();
  // The turn stopped: a reattach reads on to its end, which says so.
  Turn rest = Send(ReattachRequest(conversation, turn_id, event.seq()));
  ASSERT_TRUE(rest.status.ok()) << rest.status.error_message();
  const std::vector<pb::ChatEvent> events = WithoutHeartbeats(rest.events);
  ExpectContinuesAfter(events, event.seq());
  const bool cancelled = std::any_of(events.begin(), events.end(), [](const pb::ChatEvent& e) {
    return e.has_error() && e.error().code() == pb::CHAT_ERROR_CODE_CANCELLED;
  });
  EXPECT_TRUE(cancelled) << "the client that went away cancelled its turn";
}

TEST_F(ModelPlannerEndToEndTest, HeartbeatsKeepASilentTurnsStreamAliveAndDoNotBreakResume) {
  const NoLimitsAfter after{[] { RestartWithConfig(""); }};
  RestartWithConfig("stream:\n  heartbeat_ms: 200\n  resume_window_ms: 0\n");
  llm::testing::FakeRule silent = Rule("think silently", false, {.text = "Thought it over."});
  silent.first_byte_delay_ms = 1500;
  ASSERT_TRUE(fake_->SetRules({silent}).ok());
  const std::string turn_id = "beat-" + core::NewUuid();

  pb::StreamChatRequest request;
  request.set_message("think silently");
  request.set_turn_id(turn_id);
  request.set_detach_on_disconnect(true);
  OpenStream first = Open(*stub_, key(), request);
  std::vector<pb::ChatEvent> seen;
  pb::ChatEvent event;
  int heartbeats = 0;
  // Read until the second heartbeat of the silence, then dropped.
  while (heartbeats < 2 && first.reader->Read(&event)) {
    if (event.has_heartbeat()) {
      ++heartbeats;
      ASSERT_FALSE(seen.empty());
      EXPECT_EQ(event.seq(), seen.back().seq()) << "a heartbeat carries the last event's seq";
      EXPECT_GE(event.heartbeat().silent_ms(), 200);
    } else {
      seen.push_back(event);
    }
  }
  ASSERT_EQ(heartbeats, 2) << "heartbeats while the model is silent";
  first.context->TryCancel();
  first.reader->Finish();
  const std::string conversation = seen.front().session().conversation_id();

  // Reattached with the seq the heartbeats carried: the rest, once.
  Turn rest = Send(ReattachRequest(conversation, turn_id, event.seq()));
  ASSERT_TRUE(rest.status.ok()) << rest.status.error_message();
  const std::vector<pb::ChatEvent> events = WithoutHeartbeats(rest.events);
  ExpectContinuesAfter(events, event.seq());
  EXPECT_EQ(TextOf(events), "Thought it over.");

  // The window is 0: the finished turn's outcome comes from storage, whole.
  Turn stored = Send(ReattachRequest(conversation, turn_id, events.back().seq()));
  ASSERT_TRUE(stored.status.ok()) << stored.status.error_message();
  ASSERT_EQ(stored.events.size(), 3u);
  EXPECT_TRUE(stored.events[0].session().replayed());
  EXPECT_EQ(stored.events[1].text().delta(), "Thought it over.");
  EXPECT_TRUE(stored.events[2].has_done());
}

// `omniforge-orchestrator migrate`: the orchestration schema, once, then
// exit (a deployment's migration step); without a database it says so.
TEST(OrchestratorMigrateTest, MigrateAppliesEachMigrationOnceAndExits) {
  const auto run = [](const std::vector<std::string>& env) {
    const testing::CommandResult ran =
        testing::RunCommand({OMNIFORGE_ORCHESTRATOR_BIN, "migrate"}, "", env);
    return std::pair<int, std::string>(ran.exit_code, ran.out + ran.err);
  };
  testing::TestDatabase database;
  // The service's configuration; the key file is not needed to migrate.
  const std::vector<std::string> env = {"OMNIFORGE_DATABASE_DSN=" + database.dsn()};
  auto [status, output] = run(env);
  EXPECT_EQ(status, 0) << output;
  EXPECT_THAT(output, HasSubstr("0001_init.sql"));
  EXPECT_THAT(output, HasSubstr("0007_flow_state.sql"));
  std::tie(status, output) = run(env);
  EXPECT_EQ(status, 0) << output;
  EXPECT_THAT(output, HasSubstr("\"applied\":\"0\""));
  std::tie(status, output) = run({});
  EXPECT_EQ(status, 1) << output;
  EXPECT_THAT(output, HasSubstr("database.dsn is empty"));
}

}  // namespace
}  // namespace omniforge::orchestrator
