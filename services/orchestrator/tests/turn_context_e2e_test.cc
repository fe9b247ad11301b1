// What a turn tells the client of its context, and how the planner works
// with it, over the real stack (PostgreSQL and the four binaries, driven
// through the public ChatService), in local mode and on the fake provider:
//   - `ontology_loaded` once per turn (the context, the entities, the
//     user's agents, the tools), `last_turn_context` when the turn
//     continues a conversation (what the previous turn left: its flow, its
//     action, its plan), and the context type on every `agent_state`;
//   - the shipped configuration plans project audits on the quality
//     profile, a task's questions on speed and the rest on balanced;
//   - with no tools on offer the planner's system prompt carries a
//     reminder that there are none, and no tool is offered;
//   - each usage row says the execution mode of the plan its calls served;
//   - an agent_review critique goes back to the turn's planner model for a
//     revised plan, at most plans.max_review_rounds times, then the user
//     decides.
#include <gmock/gmock.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "libs/core/grpc_identity.h"
#include "libs/core/ids.h"
#include "libs/llm/testing/fake_provider.h"
#include "omniforge/executor/v1/executor_service.grpc.pb.h"
#include "omniforge/orchestrator/v1/chat_service.grpc.pb.h"
#include "tests/support/chat_turn.h"
#include "tests/support/service_stack.h"
#include "tests/support/test_database.h"

namespace omniforge::orchestrator {
namespace {

namespace pb = ::omniforge::orchestrator::v1;
namespace execpb = ::omniforge::executor::v1;
using nlohmann::json;
using ::testing::Contains;
using ::testing::Each;
using ::testing::HasSubstr;
using ::testing::Not;

const core::Identity kUser{"acme", "ada"};

using Turn = testing::ChatTurn;

// The context type of each agent_state event of `turn`, in order.
std::vector<pb::ContextType> StateContexts(const Turn& turn) {
  std::vector<pb::ContextType> out;
  for (const pb::ChatEvent& e : turn.Of(pb::ChatEvent::kAgentState)) {
    out.push_back(e.agent_state().context_type());
  }
  return out;
}

// A plan step the executor's deterministic agent carries out: one call.
json PlannedStep(const std::string& id, const std::string& description, const std::string& tool) {
  return {{"id", id},
          {"description", description},
          {"tools", {tool}},
          {"needs_executor", true},
          {"depends_on", json::array()},
          {"expected_output", ""},
          {"tool_calls", json::array({{{"tool", tool}, {"arguments", json::object()}}})}};
}

// The fake provider's answer to the planner: `reply` to a message holding
// `user_contains`, before (false) or after (true) a tool result.
llm::testing::FakeRule Planner(const std::string& user_contains, bool after_tool,
                               llm::testing::FakeReply reply) {
  llm::testing::FakeRule rule;
  rule.match.operation = "planner_stream";
  rule.match.last_user_contains = user_contains;
  rule.match.last_is_tool_result = after_tool;
  rule.reply = std::move(reply);
  return rule;
}

// The planner calls agent_create_plan with these arguments.
llm::testing::FakeReply CallsCreatePlan(const json& arguments) {
  llm::testing::FakeReply reply;
  reply.tool_calls = {{"", "agent_create_plan", arguments.dump()}};
  return reply;
}

// Any structured answer of `operation` (plan_generation, plan_review).
llm::testing::FakeRule Structured(const std::string& operation, const json& answer) {
  llm::testing::FakeRule rule;
  rule.match.operation = operation;
  rule.reply.json = answer.dump();
  return rule;
}

class TurnContextEndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto fake = llm::testing::FakeLlmServer::Start({}, {.api_key = "fake-key"});
    ASSERT_TRUE(fake.ok()) << fake.status();
    fake_ = *std::move(fake);
    dir_ = std::filesystem::temp_directory_path() / ("omniforge-context-" + core::NewUuid());
    std::filesystem::create_directories(dir_);
    keys_ = testing::WriteApiKeyFile(dir_ / "api_keys", {kUser}, "turn context e2e");
    ASSERT_EQ(keys_.size(), 1u);
    // Plans and usage rows are kept in the orchestrator's database.
    testing::ServiceStack::ExtraEnv extra;
    extra.orchestrator = testing::DatabaseEnv(db_, "orchestrator");
    ASSERT_EQ(stack_.Start(db_, (dir_ / "api_keys").string(), extra), std::nullopt);
    Connect();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void Connect() {
    stub_ = pb::ChatService::NewStub(
        grpc::CreateChannel(stack_.orchestrator().address(), grpc::InsecureChannelCredentials()));
  }

  // The shipped configuration of the local stack (deploy/local), with an
  // llm: section on the fake provider: each standard profile on a model of
  // its own name.
  std::string ShippedConfigOnFakeProvider() const {
    std::ifstream shipped(std::string(OMNIFORGE_SOURCE_DIR) + "/deploy/local/orchestrator.yaml");
    std::stringstream config;
    config << shipped.rdbuf();
    config << "\nllm:\n  providers:\n    fake:\n      api: openai\n      base_url: "
           << fake_->openai_base_url()
           << "\n      api_key_env: FAKE_LLM_KEY\n"
              "  profiles:\n"
              "    speed: [fake/speed-model]\n"
              "    balanced: [fake/balanced-model]\n"
              "    quality: [fake/quality-model]\n"
              "  retry: {max_attempts: 1}\n";
    return config.str();
  }

  // Restarts the orchestrator on the configuration file `config` (empty:
  // none, local mode), `first_env` taking precedence over the stack's.
  void RestartOrchestrator(const std::string& config,
                           const std::vector<std::string>& first_env = {}) {
    stack_.orchestrator().Stop();
    std::vector<std::string> env = first_env;
    const std::vector<std::string> stack_env = stack_.OrchestratorReplicaEnv();
    env.insert(env.end(), stack_env.begin(), stack_env.end());
    env.push_back("OMNIFORGE_SPOOL_DIR=" + (dir_ / ("spool-" + core::NewUuid())).string());
    env.emplace_back("FAKE_LLM_KEY=fake-key");
    std::vector<std::string> args;
    if (!config.empty()) {
      const std::filesystem::path path = dir_ / "orchestrator.yaml";
      std::ofstream(path) << config;
      args = {"--config", path.string()};
    }
    ASSERT_EQ(stack_.orchestrator().Start(env, args), std::nullopt);
    Connect();
  }

  Turn ChatIn(pb::ContextType context_type, const std::string& message,
              const std::string& conversation_id = "", const std::string& entity_id = "") {
    pb::StreamChatRequest request;
    request.set_message(message);
    request.set_conversation_id(conversation_id);
    request.set_context_type(context_type);
    request.set_entity_id(entity_id);
    return testing::StreamTurn(*stub_, request, keys_[0]);
  }
  Turn Chat(const std::string& message, const std::string& conversation_id = "") {
    return ChatIn(pb::CONTEXT_TYPE_UNSPECIFIED, message, conversation_id);
  }

  // Runs a tool as the test's user, straight on the executor.
  void Invoke(const std::string& tool, const json& arguments) {
    auto stub = execpb::ExecutorService::NewStub(
        grpc::CreateChannel(stack_.executor().address(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    core::AttachIdentity(context, kUser, core::kExecutorAudience);
    execpb::InvokeToolRequest request;
    request.set_tool_name(tool);
    request.set_arguments_json(arguments.dump());
    execpb::InvokeToolResponse response;
    const grpc::Status status = stub->InvokeTool(&context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_FALSE(response.is_error()) << response.result_json();
  }

  // The fake provider's requests of `operation` since the `since`th.
  std::vector<llm::testing::RecordedRequest> RequestsOf(const std::string& operation,
                                                        size_t since) const {
    std::vector<llm::testing::RecordedRequest> out;
    const std::vector<llm::testing::RecordedRequest> all = fake_->Requests();
    for (size_t i = since; i < all.size(); ++i) {
      if (all[i].operation == operation) out.push_back(all[i]);
    }
    return out;
  }
  static std::string ModelOf(const llm::testing::RecordedRequest& request) {
    return json::parse(request.body).value("model", "");
  }
  static std::string SystemPromptOf(const llm::testing::RecordedRequest& request) {
    return json::parse(request.body)["messages"][0]["content"].get<std::string>();
  }

  // The usage rows of a turn (execution_mode, number of calls, operations
  // joined by spaces), once there are `count` of them (they are written in
  // the background: waits up to 10 s).
  pqxx::result UsageRowsOf(const std::string& turn_id, size_t count) const {
    pqxx::connection conn(db_.dsn());
    pqxx::result rows;
    for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
         std::chrono::steady_clock::now() < until;
         std::this_thread::sleep_for(std::chrono::milliseconds(20))) {
      pqxx::nontransaction tx(conn);
      rows = tx.exec_params(
          "SELECT t.execution_mode, jsonb_array_length(t.calls), "
          "  (SELECT string_agg(c ->> 'operation_type', ' ' ORDER BY c ->> 'operation_type' "
          "COLLATE \"C\") "
          "     FROM jsonb_array_elements(t.calls) AS c) "
          "FROM orchestration.llm_turn_usage AS t WHERE t.turn_id = $1 ORDER BY t.created_at",
          turn_id);
      if (rows.size() >= count) break;
    }
    return rows;
  }
  // The execution modes the per-call view answers for a turn.
  std::vector<std::string> ViewModesOf(const std::string& turn_id) const {
    pqxx::connection conn(db_.dsn());
    pqxx::nontransaction tx(conn);
    std::vector<std::string> modes;
    for (const pqxx::row& row :
         tx.exec_params("SELECT DISTINCT execution_mode FROM orchestration.llm_usage "
                        "WHERE turn_id = $1",
                        turn_id)) {
      modes.push_back(row[0].as<std::string>());
    }
    return modes;
  }

  testing::TestDatabase db_;
  std::unique_ptr<llm::testing::FakeLlmServer> fake_;
  std::filesystem::path dir_;
  std::vector<std::string> keys_;
  testing::ServiceStack stack_{{OMNIFORGE_CONVERSATION_BIN, OMNIFORGE_INTENT_BIN,
                                OMNIFORGE_EXECUTOR_BIN, OMNIFORGE_ORCHESTRATOR_BIN}};
  std::unique_ptr<pb::ChatService::Stub> stub_;
};

TEST_F(TurnContextEndToEndTest, LocalModeTellsTheWorkspaceAndWhatTheLastTurnLeft) {
  Invoke("create_agent", {{"name", "invoice-chaser"}, {"description", "Chases overdue invoices"}});
  const Turn draft =
      ChatIn(pb::CONTEXT_TYPE_PROJECT_CREATE, "Set up a project for the spring campaign launch");
  ASSERT_TRUE(draft.status.ok()) << draft.status.error_message();
  ASSERT_FALSE(draft.events.empty());
  EXPECT_TRUE(draft.Of(pb::ChatEvent::kLastTurnContext).empty()) << "a new conversation";
  const std::vector<pb::ChatEvent> loaded = draft.Of(pb::ChatEvent::kOntologyLoaded);
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_GT(draft.IndexOf(pb::ChatEvent::kOntologyLoaded), draft.IndexOf(pb::ChatEvent::kIntent));
  const pb::OntologyLoadedEvent& workspace = loaded[0].ontology_loaded();
  EXPECT_EQ(workspace.context_type(), pb::CONTEXT_TYPE_PROJECT_CREATE);
  EXPECT_TRUE(workspace.agents_listed());
  EXPECT_THAT(workspace.agent_names(), Contains("invoice-chaser"));
  EXPECT_THAT(workspace.tool_names(), Contains("create_project"));
  EXPECT_THAT(workspace.tool_names(), Contains("list_agents"));
  ASSERT_FALSE(StateContexts(draft).empty());
  EXPECT_THAT(StateContexts(draft), Each(pb::CONTEXT_TYPE_PROJECT_CREATE));
  const std::vector<pb::ChatEvent> created = draft.Of(pb::ChatEvent::kPlanCreated);
  ASSERT_EQ(created.size(), 1u);
  ASSERT_EQ(draft.Of(pb::ChatEvent::kPlanReadyForReview).size(), 1u);

  // The next message hears what waits for it, right after the session.
  const std::string conversation = draft.session().conversation_id();
  const Turn drop = Chat("cancel", conversation);
  ASSERT_TRUE(drop.status.ok()) << drop.status.error_message();
  ASSERT_GE(drop.events.size(), 2u);
  ASSERT_TRUE(drop.events[1].has_last_turn_context()) << drop.events[1].DebugString();
  const pb::LastTurnContextEvent& left = drop.events[1].last_turn_context();
  EXPECT_EQ(left.turn_id(), draft.session().turn_id());
  EXPECT_EQ(left.flow_id(), draft.session().flow_id());
  EXPECT_EQ(left.flow_status(), pb::FLOW_STATUS_WAITING);
  EXPECT_NE(left.action_type(), pb::ACTION_TYPE_UNSPECIFIED);
  EXPECT_EQ(left.goal(), "Set up a project for the spring campaign launch");
  EXPECT_EQ(left.plan_id(), created[0].plan_created().plan().plan_id());
  EXPECT_EQ(left.plan_status(), pb::PLAN_STATUS_PENDING_REVIEW);
  EXPECT_EQ(left.pending_actions(), 0);
  EXPECT_EQ(drop.Of(pb::ChatEvent::kLastTurnContext).size(), 1u);
  EXPECT_EQ(drop.Of(pb::ChatEvent::kOntologyLoaded).size(), 1u);
  EXPECT_THAT(StateContexts(drop), Each(pb::CONTEXT_TYPE_GLOBAL)) << "the request named none";

  // Once the plan is dropped, nothing of it waits; the screen is a project.
  const Turn next = ChatIn(pb::CONTEXT_TYPE_PROJECT, "list my agents", conversation, "proj-42");
  ASSERT_TRUE(next.status.ok()) << next.status.error_message();
  ASSERT_GE(next.events.size(), 2u);
  ASSERT_TRUE(next.events[1].has_last_turn_context());
  const pb::LastTurnContextEvent& after = next.events[1].last_turn_context();
  EXPECT_EQ(after.turn_id(), drop.session().turn_id());
  EXPECT_EQ(after.flow_status(), pb::FLOW_STATUS_DONE);
  EXPECT_EQ(after.plan_id(), "");
  EXPECT_EQ(after.plan_status(), pb::PLAN_STATUS_UNSPECIFIED);
  const pb::OntologyLoadedEvent screen =
      next.Of(pb::ChatEvent::kOntologyLoaded).at(0).ontology_loaded();
  EXPECT_EQ(screen.context_type(), pb::CONTEXT_TYPE_PROJECT);
  EXPECT_EQ(screen.entity_id(), "proj-42");
  EXPECT_THAT(StateContexts(next), Each(pb::CONTEXT_TYPE_PROJECT));
}

TEST_F(TurnContextEndToEndTest, TheShippedConfigPlansAuditsOnQualityTasksOnSpeedTheRestBalanced) {
  // The three shipped configurations map the context types alike.
  for (const char* file :
       {"/deploy/local/orchestrator.yaml", "/deploy/k8s/base/config/orchestrator.yaml",
        "/deploy/docker/ollama/orchestrator.yaml"}) {
    const YAML::Node planner = YAML::LoadFile(std::string(OMNIFORGE_SOURCE_DIR) + file)["planner"];
    EXPECT_EQ(planner["profile"].as<std::string>(""), "balanced") << file;
    const std::map<std::string, std::string> profiles =
        planner["profiles"].as<std::map<std::string, std::string>>(
            std::map<std::string, std::string>());
    EXPECT_EQ(profiles,
              (std::map<std::string, std::string>{{"project_audit", "quality"}, {"task", "speed"}}))
        << file;
  }
  RestartOrchestrator(ShippedConfigOnFakeProvider());
  ASSERT_TRUE(fake_->SetRules({Planner("", false, {.text = "Here is what I can do."})}).ok());
  const std::map<pb::ContextType, std::string> expected = {
      {pb::CONTEXT_TYPE_GLOBAL, "balanced-model"},
      {pb::CONTEXT_TYPE_PROJECT, "balanced-model"},
      {pb::CONTEXT_TYPE_PROJECT_CREATE, "balanced-model"},
      {pb::CONTEXT_TYPE_TASK, "speed-model"},
      {pb::CONTEXT_TYPE_PROJECT_AUDIT, "quality-model"}};
  for (const auto& [context_type, model] : expected) {
    const size_t before = fake_->RequestCount();
    const Turn turn = ChatIn(context_type, "hello, what can you do on this screen?", "", "item-1");
    ASSERT_TRUE(turn.status.ok()) << turn.status.error_message();
    const auto planned = RequestsOf("planner_stream", before);
    ASSERT_EQ(planned.size(), 1u) << pb::ContextType_Name(context_type);
    EXPECT_EQ(ModelOf(planned[0]), model) << pb::ContextType_Name(context_type);
    EXPECT_THAT(StateContexts(turn), Each(context_type));
  }
}

TEST_F(TurnContextEndToEndTest, WithNoToolsOnOfferThePlannerIsRemindedThatThereAreNone) {
  // Nothing listens on port 1: the executor cannot be reached.
  RestartOrchestrator(ShippedConfigOnFakeProvider(), {"OMNIFORGE_DOWNSTREAM_EXECUTOR=127.0.0.1:1"});
  ASSERT_TRUE(
      fake_->SetRules({Planner("", false, {.text = "I cannot look your agents up right now."})})
          .ok());
  size_t before = fake_->RequestCount();
  const Turn alone = Chat("list my agents");
  ASSERT_TRUE(alone.status.ok()) << alone.status.error_message();
  const pb::OntologyLoadedEvent workspace =
      alone.Of(pb::ChatEvent::kOntologyLoaded).at(0).ontology_loaded();
  EXPECT_TRUE(workspace.tool_names().empty());
  EXPECT_FALSE(workspace.agents_listed());
  auto planned = RequestsOf("planner_stream", before);
  ASSERT_EQ(planned.size(), 1u);
  EXPECT_THAT(SystemPromptOf(planned[0]), HasSubstr("<system-reminder>No tools are available"));
  EXPECT_THAT(SystemPromptOf(planned[0]), Not(HasSubstr("agent_create_plan")));
  const json body = json::parse(planned[0].body);
  EXPECT_TRUE(!body.contains("tools") || body["tools"].empty()) << body.dump();
  EXPECT_TRUE(alone.Of(pb::ChatEvent::kToolCall).empty());

  // With the executor back, its tools are offered and nothing is reminded.
  RestartOrchestrator(ShippedConfigOnFakeProvider());
  before = fake_->RequestCount();
  const Turn served = Chat("list my agents");
  ASSERT_TRUE(served.status.ok()) << served.status.error_message();
  planned = RequestsOf("planner_stream", before);
  ASSERT_EQ(planned.size(), 1u);
  EXPECT_THAT(SystemPromptOf(planned[0]), Not(HasSubstr("<system-reminder>")));
  EXPECT_THAT(SystemPromptOf(planned[0]), HasSubstr("- list_agents: read-only"));
  EXPECT_THAT(json::parse(planned[0].body)["tools"].dump(), HasSubstr("\"list_agents\""));
}

TEST_F(TurnContextEndToEndTest, UsageRowsSayTheExecutionModeOfThePlanTheirCallsServed) {
  RestartOrchestrator(ShippedConfigOnFakeProvider());
  const json steps = {PlannedStep("s1", "List the agents", "list_agents")};
  ASSERT_TRUE(fake_
                  ->SetRules({Planner("draft a plan", false,
                                      CallsCreatePlan({{"objective", "Check my agents"},
                                                       {"execution_mode", "draft_only"}})),
                              Planner("run a plan", false,
                                      CallsCreatePlan({{"objective", "Check my agents"},
                                                       {"execution_mode", "auto_execute"}})),
                              Planner("", true, {.text = "That is where the plan stands."}),
                              Planner("", false, {.text = "Hi."}),
                              Structured("plan_generation", {{"steps", steps}})})
                  .ok());
  const std::map<std::string, std::string> mode_by_message = {
      {"please draft a plan to check my agents", "draft_only"},
      {"please run a plan to check my agents", "auto_execute"},
      {"just say hi", ""}};
  for (const auto& [message, mode] : mode_by_message) {
    const Turn turn = Chat(message);
    ASSERT_TRUE(turn.status.ok()) << turn.status.error_message();
    EXPECT_EQ(turn.Of(pb::ChatEvent::kPlanCreated).size(), mode.empty() ? 0u : 1u) << message;
    const pqxx::result rows = UsageRowsOf(turn.session().turn_id(), 1);
    ASSERT_EQ(rows.size(), 1u) << message;
    EXPECT_EQ(rows[0][0].as<std::string>(), mode) << message;
    EXPECT_EQ(rows[0][2].as<std::string>(),
              mode.empty() ? "planner_stream" : "plan_generation planner_stream planner_stream")
        << message;
    EXPECT_EQ(ViewModesOf(turn.session().turn_id()), std::vector<std::string>{mode}) << message;
  }
}

TEST_F(TurnContextEndToEndTest, AReviewersCritiqueGoesBackToThePlannerModelForBoundedRounds) {
  RestartOrchestrator(ShippedConfigOnFakeProvider());
  ASSERT_TRUE(
      fake_
          ->SetRules(
              {Planner("tidy up my agents", false,
                       CallsCreatePlan({{"objective", "Tidy up my agents"},
                                        {"execution_mode", "agent_review"}})),
               Planner("", true, {.text = "The reviewer still wants changes: over to you."}),
               Structured("plan_generation",
                          {{"steps", {PlannedStep("s1", "List the agents", "list_agents")}}}),
               Structured("plan_review",
                          {{"verdict", "needs_changes"}, {"notes", "list the paused agents too"}})})
          .ok());
  const size_t before = fake_->RequestCount();
  // On a task's screen the turn plans on the speed profile (the shipped
  // planner.profiles): its plan is made and revised there too.
  const Turn turn = ChatIn(pb::CONTEXT_TYPE_TASK, "please tidy up my agents", "", "task-7");
  ASSERT_TRUE(turn.status.ok()) << turn.status.error_message();

  // The shipped plans.max_review_rounds is 2: the plan, two revisions, three
  // reviews; then the user decides.
  const std::vector<pb::ChatEvent> reviews = turn.Of(pb::ChatEvent::kPlanReview);
  ASSERT_EQ(reviews.size(), 3u);
  for (const pb::ChatEvent& review : reviews) {
    EXPECT_EQ(review.plan_review().verdict(), pb::REVIEW_VERDICT_NEEDS_CHANGES);
  }
  EXPECT_EQ(turn.Of(pb::ChatEvent::kPlanCreated).size(), 3u);
  EXPECT_EQ(turn.Of(pb::ChatEvent::kPlanReadyForReview).size(), 1u);
  EXPECT_TRUE(turn.Of(pb::ChatEvent::kStepStart).empty());
  EXPECT_FALSE(turn.events.back().done().is_final());

  const auto generations = RequestsOf("plan_generation", before);
  ASSERT_EQ(generations.size(), 3u);
  for (const auto& generation : generations) EXPECT_EQ(ModelOf(generation), "speed-model");
  EXPECT_THAT(generations[0].body, Not(HasSubstr("Revise the plan")));
  EXPECT_THAT(generations[1].body, HasSubstr("Revise the plan: list the paused agents too"));
  EXPECT_THAT(generations[2].body, HasSubstr("Revise the plan: list the paused agents too"));
  EXPECT_THAT(generations[2].body, HasSubstr("earlier notes"));
  const auto judged = RequestsOf("plan_review", before);
  ASSERT_EQ(judged.size(), 3u);
  for (const auto& review : judged) EXPECT_EQ(ModelOf(review), "quality-model");
  // The planner reads the last critique in the plan's tool result.
  const auto planned = RequestsOf("planner_stream", before);
  ASSERT_EQ(planned.size(), 2u);
  EXPECT_THAT(planned[1].body, HasSubstr("list the paused agents too"));

  const pqxx::result rows = UsageRowsOf(turn.session().turn_id(), 1);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][0].as<std::string>(), "agent_review");
  EXPECT_EQ(rows[0][1].as<int>(), 8);
}

}  // namespace
}  // namespace omniforge::orchestrator
