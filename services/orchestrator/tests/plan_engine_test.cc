// The plan engine against its real surroundings: plans and steps in
// PostgreSQL (row-level security on), steps carried out by the real executor
// binary over gRPC (Converse), in local mode and with its own model; the
// models (generation, review, clarification, the executor's turns) are the
// fake provider speaking the real OpenAI wire format.
#include "services/orchestrator/plans/plan_engine.h"

#include <gmock/gmock.h>
#include <grpcpp/create_channel.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <thread>

#include "absl/cleanup/cleanup.h"
#include "libs/core/clock.h"
#include "libs/core/config.h"
#include "libs/core/grpc_identity.h"
#include "libs/core/ids.h"
#include "libs/core/metrics.h"
#include "libs/llm/llm_config.h"
#include "libs/llm/llm_factory.h"
#include "libs/llm/testing/fake_provider.h"
#include "libs/pg/migrate.h"
#include "libs/seal/test_keys.h"
#include "omniforge/executor/v1/executor_service.grpc.pb.h"
#include "services/orchestrator/downstream/grpc_downstream.h"
#include "services/orchestrator/storage/pg_plan_store.h"
#include "services/orchestrator/storage/tenant_keys.h"
#include "services/orchestrator/usage/usage_attribution.h"
#include "tests/support/identity_keys.h"
#include "tests/support/master_keys.h"
#include "tests/support/migrated_database.h"
#include "tests/support/server_process.h"

namespace omniforge::pg {
const std::vector<Migration>& OrchestratorMigrations();
}

namespace omniforge::orchestrator {
namespace {

namespace pb = ::omniforge::orchestrator::v1;
namespace intentpb = ::omniforge::intent::v1;
using llm::testing::FakeReply;
using llm::testing::FakeRule;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

// Every event with the time it arrived.
class RecordingSink final : public PlanEventSink {
 public:
  void Emit(pb::ChatEvent event) override {
    std::lock_guard lock(mu_);
    events_.emplace_back(core::NowMicros(), std::move(event));
  }
  std::vector<pb::ChatEvent> Of(pb::ChatEvent::EventCase kind) const {
    std::lock_guard lock(mu_);
    std::vector<pb::ChatEvent> out;
    for (const auto& [at, e] : events_) {
      if (e.event_case() == kind) out.push_back(e);
    }
    return out;
  }
  std::vector<std::string> Kinds() const {
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    for (const auto& [at, e] : events_) {
      out.push_back(pb::ChatEvent::descriptor()->FindFieldByNumber(e.event_case())->name());
    }
    return out;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::pair<int64_t, pb::ChatEvent>> events_;
};

FakeRule Rule(const std::string& operation, const std::string& user_contains, FakeReply reply,
              int times = -1) {
  FakeRule rule;
  rule.match.operation = operation;
  rule.match.last_user_contains = user_contains;
  rule.reply = std::move(reply);
  rule.times = times;
  return rule;
}

FakeReply Json(const json& j) {
  FakeReply reply;
  reply.json = j.dump();
  return reply;
}

json StepJson(const std::string& id, const std::string& description,
              const std::vector<std::string>& tools, const std::vector<std::string>& depends_on,
              const json& calls = json::array()) {
  return {{"id", id},
          {"description", description},
          {"tools", tools},
          {"needs_executor", true},
          {"depends_on", depends_on},
          {"expected_output", ""},
          {"tool_calls", calls}};
}

// An executor turn that calls `tool` (with a fixed call id, so a re-run
// makes the same call) or, with an empty tool, finishes the step.
FakeRule ExecutorTurn(const std::string& step_text, bool after_tool, const std::string& tool,
                      const json& arguments, int64_t delay_ms = 0) {
  FakeReply reply;
  if (tool.empty()) {
    reply.tool_calls.push_back(
        {"call_done", "complete_task",
         json{{"summary", "Done: " + step_text}, {"result", {{"step", step_text}}}}.dump()});
  } else {
    reply.tool_calls.push_back({"call_" + tool, tool, arguments.dump()});
  }
  // The executor's step message opens with "Step: <task>"; the results of
  // earlier steps it carries never do.
  FakeRule rule = Rule("executor_turn", "Step: " + step_text, reply);
  rule.match.last_is_tool_result = after_tool;
  rule.first_byte_delay_ms = delay_ms;
  return rule;
}

class PlanEngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    setenv("FAKE_LLM_KEY", "fake-key", 1);
    auto fake = llm::testing::FakeLlmServer::Start({}, {.api_key = "fake-key"});
    ASSERT_TRUE(fake.ok()) << fake.status();
    fake_ = fake->release();
    db_ = new testing::MigratedDatabase("orchestrator", pg::OrchestratorMigrations());

    dir_ = new std::filesystem::path(std::filesystem::temp_directory_path() /
                                     ("omniforge-plan-" + core::NewUuid()));
    std::filesystem::create_directories(*dir_);
    const std::string llm_yaml =
        "llm:\n  providers:\n    fake:\n      api: openai\n      base_url: " +
        fake_->openai_base_url() +
        "\n      api_key_env: FAKE_LLM_KEY\n  profiles:\n    balanced: [fake/model]\n"
        "    quality: [fake/reviewer]\n  retry: {max_attempts: 1}\n";
    std::ofstream(*dir_ / "executor.yaml") << llm_yaml;

    std::vector<std::string> env = testing::TestIdentityEnv(testing::TestKeyUse::kBoth);
    env.push_back(testing::ExecutorMasterKeyEnv());
    env = testing::DatabaseEnv(db_->database(), "executor", env);
    local_executor_ = new testing::ServerProcess(OMNIFORGE_EXECUTOR_BIN);
    ASSERT_EQ(local_executor_->Start(env), std::nullopt);
    model_executor_ = new testing::ServerProcess(OMNIFORGE_EXECUTOR_BIN);
    ASSERT_EQ(model_executor_->Start(env, {"--config", (*dir_ / "executor.yaml").string()}),
              std::nullopt);

    auto reader = core::ConfigReader::FromString(llm_yaml);
    ASSERT_TRUE(reader.ok());
    auto config = llm::ReadLlmConfig(*reader);
    ASSERT_TRUE(config.ok()) << config.status();
    auto client = llm::MakeLlmClient(*config, nullptr);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = client->release();
    planner_model_ = client_->ForProfile("balanced").release();
    reviewer_model_ = client_->ForProfile("quality").release();

    pool_ = &db_->pool();
    keys_ = new seal::KeyRing(*pool_, kOrchestratorKeys, seal::TestMasterKey(), "test");
    store_ = new PgPlanStore(*pool_, *keys_);
    local_steps_ = MakeGrpcStepExecutors(local_executor_->address()).release();
    model_steps_ = MakeGrpcStepExecutors(model_executor_->address()).release();
    executor_stub_ =
        executor::v1::ExecutorService::NewStub(
            grpc::CreateChannel(local_executor_->address(), grpc::InsecureChannelCredentials()))
            .release();
    // The executor's catalog, with each tool's risk, as a turn gives it.
    grpc::ClientContext context;
    core::AttachIdentity(context, {"tenant-catalog", "user-catalog"}, core::kExecutorAudience);
    executor::v1::ListToolsResponse listed;
    ASSERT_TRUE(
        executor_stub_->ListTools(&context, executor::v1::ListToolsRequest(), &listed).ok());
    Catalog().assign(listed.tools().begin(), listed.tools().end());
    ASSERT_FALSE(Catalog().empty());
  }

 public:
  static std::vector<executor::v1::ToolDescriptor>& Catalog() {
    static std::vector<executor::v1::ToolDescriptor> catalog;
    return catalog;
  }

 protected:
  static void TearDownTestSuite() {
    delete executor_stub_;
    delete model_steps_;
    delete local_steps_;
    delete store_;
    delete keys_;
    delete reviewer_model_;
    delete planner_model_;
    delete client_;
    delete model_executor_;
    delete local_executor_;
    std::filesystem::remove_all(*dir_);
    delete dir_;
    delete db_;
    delete fake_;
  }

  void SetUp() override {
    who_ = {"acme", "plan-user-" + core::NewUuid().substr(24)};
    ASSERT_TRUE(fake_->SetRules({}).ok());
  }

  // An engine on the model (or in local mode), its steps on the local
  // executor or on the one with a model.
  struct Engine {
    Engine(llm::ChatModel* planner, llm::ChatModel* reviewer, PlanStore& store,
           StepExecutors& steps, PlanEngineOptions options)
        : generator(planner),
          advisor(reviewer, planner),
          engine(store, steps, generator, advisor, std::move(options)) {}
    PlanGenerator generator;
    PlanAdvisor advisor;
    PlanEngine engine;
  };
  static std::unique_ptr<Engine> MakeEngine(bool use_model, bool model_executor,
                                            const PlanEngineOptions& options = {},
                                            PlanStore* store = nullptr) {
    return std::make_unique<Engine>(use_model ? planner_model_ : nullptr,
                                    use_model ? reviewer_model_ : nullptr,
                                    store != nullptr ? *store : *store_,
                                    model_executor ? *model_steps_ : *local_steps_, options);
  }

  // Runs a tool as this test's user on the executor.
  json Invoke(const std::string& tool, const json& args) const {
    grpc::ClientContext context;
    core::AttachIdentity(context, who_, core::kExecutorAudience);
    executor::v1::InvokeToolRequest request;
    request.set_tool_name(tool);
    request.set_arguments_json(args.dump());
    executor::v1::InvokeToolResponse response;
    grpc::Status status = executor_stub_->InvokeTool(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    json result = json::parse(response.result_json(), nullptr, false);
    if (response.is_error()) result["is_error"] = true;
    return result;
  }

  static pqxx::result Query(const std::string& sql, const std::string& param) {
    pqxx::connection conn(db_->dsn());
    pqxx::nontransaction tx(conn);
    return tx.exec_params(sql, param);
  }

  // The fake's requests of one operation.
  static std::vector<llm::testing::RecordedRequest> RequestsOf(const std::string& operation,
                                                               size_t from = 0) {
    std::vector<llm::testing::RecordedRequest> out;
    auto all = fake_->Requests();
    for (size_t i = from; i < all.size(); ++i) {
      if (all[i].operation == operation) out.push_back(all[i]);
    }
    return out;
  }

  core::Identity who_;
  static llm::testing::FakeLlmServer* fake_;
  static testing::MigratedDatabase* db_;
  static std::filesystem::path* dir_;
  static testing::ServerProcess* local_executor_;
  static testing::ServerProcess* model_executor_;
  static llm::LlmClient* client_;
  static llm::ChatModel* planner_model_;
  static llm::ChatModel* reviewer_model_;
  static pg::PgPool* pool_;
  static seal::KeyRing* keys_;
  static PlanStore* store_;
  static StepExecutors* local_steps_;
  static StepExecutors* model_steps_;
  static executor::v1::ExecutorService::Stub* executor_stub_;
};

llm::testing::FakeLlmServer* PlanEngineTest::fake_ = nullptr;
testing::MigratedDatabase* PlanEngineTest::db_ = nullptr;
std::filesystem::path* PlanEngineTest::dir_ = nullptr;
testing::ServerProcess* PlanEngineTest::local_executor_ = nullptr;
testing::ServerProcess* PlanEngineTest::model_executor_ = nullptr;
llm::LlmClient* PlanEngineTest::client_ = nullptr;
llm::ChatModel* PlanEngineTest::planner_model_ = nullptr;
llm::ChatModel* PlanEngineTest::reviewer_model_ = nullptr;
pg::PgPool* PlanEngineTest::pool_ = nullptr;
PlanStore* PlanEngineTest::store_ = nullptr;
seal::KeyRing* PlanEngineTest::keys_ = nullptr;
StepExecutors* PlanEngineTest::local_steps_ = nullptr;
StepExecutors* PlanEngineTest::model_steps_ = nullptr;
executor::v1::ExecutorService::Stub* PlanEngineTest::executor_stub_ = nullptr;

PlanContext InContext(intentpb::ContextType type) {
  PlanContext context;
  context.context_type = type;
  context.tools = PlanEngineTest::Catalog();
  return context;
}

PlanRequest Objective(const std::string& objective, ExecutionMode mode) {
  PlanRequest request;
  request.objective = objective;
  request.mode = mode;
  return request;
}

const json kOutOfOrder = {
    {"steps",
     {StepJson("s1", "Create the project", {"create_project"}, {},
               json::array({{{"tool", "create_project"}, {"arguments", {{"name", "Launch"}}}}})),
      StepJson("s2", "Look for a template", {"list_project_templates"}, {}),
      StepJson("s3", "Write the brief", {"create_context_document"}, {"s1"})}}};

const json kInOrder = {{"steps",
                        {StepJson("s1", "Look for a template", {"list_project_templates"}, {}),
                         StepJson("s2", "Create the project", {"create_project"}, {"s1"}),
                         StepJson("s3", "Write the brief", {"create_context_document"}, {"s2"})}}};

TEST_F(PlanEngineTest, AProjectCreatePlanOutOfOrderIsCorrectedOnceWithTheViolation) {
  ASSERT_TRUE(fake_
                  ->SetRules({Rule("plan_generation", "", Json(kOutOfOrder), 1),
                              Rule("plan_generation", "", Json(kInOrder))})
                  .ok());
  const size_t before = fake_->RequestCount();
  auto engine = MakeEngine(true, false);
  RecordingSink sink;
  auto outcome = engine->engine.CreatePlan(
      who_, "", Objective("Set up the launch project", ExecutionMode::kDraftOnly),
      InContext(intentpb::CONTEXT_TYPE_PROJECT_CREATE), sink);
  ASSERT_TRUE(outcome.ok()) << outcome.status();

  const auto calls = RequestsOf("plan_generation", before);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_THAT(calls[0].body, HasSubstr("template discovery with list_project_templates"));
  EXPECT_THAT(calls[1].body, HasSubstr("That plan is not valid: step s1"));
  EXPECT_THAT(calls[1].body, HasSubstr("must come after template discovery"));

  const Plan& plan = outcome->plan;
  EXPECT_EQ(plan.status, PlanStatus::kPendingReview);
  ASSERT_EQ(plan.steps.size(), 3u);
  EXPECT_EQ(plan.steps[0].tools, std::vector<std::string>{"list_project_templates"});
  EXPECT_EQ(plan.steps[1].tools, std::vector<std::string>{"create_project"});
  EXPECT_EQ(plan.steps[2].tools, std::vector<std::string>{"create_context_document"});
  EXPECT_EQ(sink.Kinds(),
            (std::vector<std::string>{"plan_created", "plan_ready_for_review", "preview"}));

  auto stored = engine->engine.Get(who_, plan.id);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->status, PlanStatus::kPendingReview);
  EXPECT_EQ(stored->steps[1].depends_on, std::vector<std::string>{"s1"});
  EXPECT_EQ(json::parse(PlanToolResult(*stored))["status"], "pending_review");
}

TEST_F(PlanEngineTest, AProjectCreatePlanStillOutOfOrderAfterTheCorrectionFailsAndStoresNothing) {
  ASSERT_TRUE(fake_->SetRules({Rule("plan_generation", "", Json(kOutOfOrder))}).ok());
  const size_t before = fake_->RequestCount();
  auto engine = MakeEngine(true, false);
  RecordingSink sink;
  auto outcome = engine->engine.CreatePlan(
      who_, "", Objective("Set up the launch project", ExecutionMode::kAutoExecute),
      InContext(intentpb::CONTEXT_TYPE_PROJECT_CREATE), sink);
  ASSERT_FALSE(outcome.ok());
  EXPECT_EQ(outcome.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(outcome.status().message(), HasSubstr("even after one correction"));
  EXPECT_THAT(outcome.status().message(), HasSubstr("template discovery"));
  EXPECT_EQ(RequestsOf("plan_generation", before).size(), 2u);
  EXPECT_TRUE(sink.Kinds().empty());
  EXPECT_EQ(Query("SELECT count(*) FROM orchestration.plans WHERE user_id = $1", who_.user_id)[0][0]
                .as<int>(),
            0);
}

TEST_F(PlanEngineTest, LocalModeRunsTheProjectCreateTemplateOnTheExecutor) {
  auto engine = MakeEngine(false, false);
  RecordingSink sink;
  PlanRequest request = Objective("Launch the spring campaign", ExecutionMode::kAutoExecute);
  request.priority_entities = {"Spring campaign"};
  request.requested_outputs = {"a project with a brief"};
  auto made = engine->engine.CreatePlan(who_, core::NewUuid(), request,
                                        InContext(intentpb::CONTEXT_TYPE_PROJECT_CREATE), sink);
  ASSERT_TRUE(made.ok()) << made.status();
  // It writes: auto_execute waits for the user's approval of the preview.
  EXPECT_EQ(made->plan.status, PlanStatus::kPendingReview);
  ASSERT_EQ(sink.Of(pb::ChatEvent::kPreview).size(), 1u);
  const pb::PreviewEvent preview = sink.Of(pb::ChatEvent::kPreview)[0].preview();
  EXPECT_EQ(preview.plan_id(), made->plan.id);
  EXPECT_EQ(preview.digest(), made->digest);
  EXPECT_GT(preview.expires_at_unix_ms(), core::NowMicros() / 1000);
  std::vector<std::string> previewed;
  for (const auto& step : preview.steps()) previewed.push_back(step.tool_name());
  EXPECT_THAT(previewed,
              ::testing::UnorderedElementsAre("create_project", "create_context_document"));
  EXPECT_TRUE(sink.Of(pb::ChatEvent::kStepStart).empty()) << "nothing runs before the approval";
  EXPECT_TRUE(Invoke("get_project_details", {{"project", "Spring campaign"}}).contains("is_error"));
  // An approval of other steps than the ones previewed runs nothing.
  auto wrong = engine->engine.Approve(who_, made->plan.id, sink, nullptr, "0000");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(sink.Of(pb::ChatEvent::kStepStart).empty());

  auto outcome = engine->engine.Approve(who_, made->plan.id, sink, nullptr, made->digest);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  const Plan& plan = outcome->plan;
  EXPECT_EQ(plan.status, PlanStatus::kCompleted) << plan.summary;
  ASSERT_EQ(plan.steps.size(), 3u);
  for (const PlanStep& step : plan.steps) {
    EXPECT_EQ(step.status, StepStatus::kCompleted) << step.id << ": " << step.error;
  }

  const json project = Invoke("get_project_details", {{"project", "Spring campaign"}});
  ASSERT_FALSE(project.contains("is_error")) << project.dump();
  EXPECT_THAT(project.dump(), HasSubstr("Project brief"));
  EXPECT_THAT(project.dump(), HasSubstr("a project with a brief"));

  // Steps in order, each a dialogue from assignment to result.
  const auto kinds = sink.Kinds();
  EXPECT_EQ(kinds.front(), "plan_created");
  EXPECT_EQ(sink.Of(pb::ChatEvent::kStepStart).size(), 3u);
  EXPECT_EQ(sink.Of(pb::ChatEvent::kExecutorSpawned).size(), 3u);
  EXPECT_EQ(sink.Of(pb::ChatEvent::kExecutorResult).size(), 3u);
  const auto completes = sink.Of(pb::ChatEvent::kStepComplete);
  ASSERT_EQ(completes.size(), 3u);
  EXPECT_EQ(completes[0].step_complete().step_id(), "s1");
  EXPECT_EQ(completes[2].step_complete().step_id(), "s3");
  EXPECT_EQ(completes[2].step_complete().status(), pb::STEP_STATUS_COMPLETED);
  bool assignment_seen = false;
  for (const auto& e : sink.Of(pb::ChatEvent::kExecutorMessage)) {
    assignment_seen |= e.executor_message().kind() == "task_assignment" &&
                       e.executor_message().sender() == pb::DIALOGUE_PARTY_PLANNER;
  }
  EXPECT_TRUE(assignment_seen);

  const json result = json::parse(outcome->tool_result_json);
  EXPECT_EQ(result["status"], "completed");
  EXPECT_EQ(result["steps"].size(), 3u);
  EXPECT_EQ(result["summary"], "All 3 steps completed.");
}

TEST_F(PlanEngineTest, IndependentStepsRunInParallelAndTheirDependentAfterThem) {
  ASSERT_TRUE(fake_
                  ->SetRules({
                      Rule("plan_generation", "",
                           Json({{"steps",
                                  {StepJson("a", "Survey the agents", {"list_agents"}, {}),
                                   StepJson("b", "Survey the skills", {"list_skills"}, {}),
                                   StepJson("c", "Survey the projects", {"search_projects"}, {}),
                                   StepJson("d", "Sum up the survey", {}, {"a", "b", "c"})}}})),
                      ExecutorTurn("Sum up the survey", false, "", {}),
                      ExecutorTurn("Survey the", false, "", {}, 400),
                  })
                  .ok());
  auto engine = MakeEngine(true, true);
  RecordingSink sink;
  const int64_t start = core::NowMicros();
  auto outcome = engine->engine.CreatePlan(
      who_, "", Objective("Survey my workspace", ExecutionMode::kAutoExecute),
      InContext(intentpb::CONTEXT_TYPE_GLOBAL), sink);
  const int64_t wall = core::NowMicros() - start;
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  ASSERT_EQ(outcome->plan.status, PlanStatus::kCompleted) << outcome->plan.summary;

  // From the stored step records: a, b and c overlap; d starts after them.
  auto plan = engine->engine.Get(who_, outcome->plan.id);
  ASSERT_TRUE(plan.ok());
  int64_t latest_start = 0, earliest_finish = INT64_MAX, latest_finish = 0, sum = 0;
  for (const char* id : {"a", "b", "c"}) {
    const PlanStep* step = plan->FindStep(id);
    latest_start = std::max(latest_start, step->started_micros);
    earliest_finish = std::min(earliest_finish, step->finished_micros);
    latest_finish = std::max(latest_finish, step->finished_micros);
    sum += step->finished_micros - step->started_micros;
  }
  EXPECT_LT(latest_start, earliest_finish) << "the three independent steps did not overlap";
  EXPECT_GE(plan->FindStep("d")->started_micros, latest_finish);
  EXPECT_LT(wall, sum) << "the plan took as long as its steps one after another";
  // d got the results of a, b and c.
  bool inputs_seen = false;
  for (const auto& request : RequestsOf("executor_turn")) {
    inputs_seen |= request.body.find("Step: Sum up the survey") != std::string::npos &&
                   request.body.find("Done: Survey the") != std::string::npos;
  }
  EXPECT_TRUE(inputs_seen);
}

// Keeps each usage record with the turn it was attributed to (none for a
// call made for no turn).
class AttributedUsage final : public ScopeUsageWriter {
 public:
  void Record(const llm::UsageRecord& record) override {
    std::lock_guard lock(mu_);
    calls_.emplace_back(record, "");
  }
  void WriteScope(const UsageAttribution& who, std::vector<AttributedCall> calls) override {
    std::lock_guard lock(mu_);
    for (const AttributedCall& call : calls) calls_.emplace_back(call.record, who.turn_id);
  }
  std::vector<std::pair<llm::UsageRecord, std::string>> calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }

 private:
  std::mutex mu_;
  std::vector<std::pair<llm::UsageRecord, std::string>> calls_;
};

// The executor's agent reports the model calls it made for a step; the
// engine records them where the step's calls go (the turn that ran the plan).
TEST_F(PlanEngineTest, TheExecutorAgentsModelCallsAreRecordedForTheStep) {
  ASSERT_TRUE(
      fake_
          ->SetRules(
              {Rule("plan_generation", "",
                    Json({{"steps", {StepJson("a", "Count the agents", {"list_agents"}, {})}}})),
               ExecutorTurn("Count the agents", false, "list_agents", {}),
               ExecutorTurn("Count the agents", true, "", {})})
          .ok());
  AttributedUsage usage;
  PlanEngineOptions options;
  options.usage_writer = &usage;
  auto engine = MakeEngine(true, true, options);
  RecordingSink sink;
  const UsageAttribution turn{who_.tenant_id, who_.user_id, "", "turn-with-a-plan",
                              "CONTEXT_TYPE_GLOBAL"};
  absl::StatusOr<PlanOutcome> outcome = absl::UnknownError("not run");
  {
    // The turn's own calls (the plan's generation) are not stored here.
    ModelUsage turn_usage(turn, nullptr);
    PlanContext context = InContext(intentpb::CONTEXT_TYPE_GLOBAL);
    context.usage = &turn_usage;
    outcome = engine->engine.CreatePlan(
        who_, "", Objective("Count my agents", ExecutionMode::kAutoExecute), context, sink);
  }
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  ASSERT_EQ(outcome->plan.status, PlanStatus::kCompleted) << outcome->plan.summary;
  const auto calls = usage.calls();
  ASSERT_EQ(calls.size(), 2u) << "the agent's two turns";
  for (const auto& [record, turn_id] : calls) {
    EXPECT_EQ(record.operation_type, "executor_turn");
    EXPECT_EQ(record.profile, "balanced");
    EXPECT_EQ(record.model, "model");
    EXPECT_TRUE(record.ok);
    EXPECT_EQ(turn_id, "turn-with-a-plan");
  }
}

TEST_F(PlanEngineTest, AFailingStepFailsItsDependentsAndThePlanWithAClearSummary) {
  auto engine = MakeEngine(false, false);
  RecordingSink sink;
  PlanContext context = InContext(intentpb::CONTEXT_TYPE_GLOBAL);
  context.intent.emplace();
  context.intent->set_action_type(intentpb::ACTION_TYPE_EXECUTE_TASK);
  (*context.intent->mutable_entities())["agent_name"] = "ghost-agent";
  auto made = engine->engine.CreatePlan(
      who_, "", Objective("Run ghost-agent", ExecutionMode::kAutoExecute), context, sink);
  ASSERT_TRUE(made.ok()) << made.status();
  ASSERT_EQ(made->plan.status, PlanStatus::kPendingReview) << "run_agent writes";
  auto outcome = engine->engine.Approve(who_, made->plan.id, sink, nullptr, made->digest);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  const Plan& plan = outcome->plan;
  EXPECT_EQ(plan.status, PlanStatus::kFailed);
  EXPECT_EQ(plan.FindStep("s1")->status, StepStatus::kFailed);
  EXPECT_THAT(plan.FindStep("s1")->error, HasSubstr("ghost-agent"));
  EXPECT_EQ(plan.FindStep("s2")->status, StepStatus::kFailed);
  EXPECT_THAT(plan.FindStep("s2")->error, HasSubstr("depends on step s1, which failed"));
  EXPECT_EQ(plan.FindStep("s2")->attempts, 0);
  EXPECT_THAT(plan.summary, HasSubstr("Step s1 (Read the agent 'ghost-agent') failed"));
  EXPECT_THAT(plan.summary, HasSubstr("0 of 2 steps completed"));
  EXPECT_EQ(json::parse(outcome->tool_result_json)["status"], "failed");
  const auto completes = sink.Of(pb::ChatEvent::kStepComplete);
  ASSERT_EQ(completes.size(), 2u);
  EXPECT_EQ(completes[0].step_complete().status(), pb::STEP_STATUS_FAILED);
  EXPECT_EQ(completes[1].step_complete().step_id(), "s2");
  EXPECT_EQ(sink.Of(pb::ChatEvent::kExecutorResult)[0].executor_result().error_code(),
            executor::v1::ERROR_CODE_TOOL_FAILED);
  EXPECT_EQ(Query("SELECT status FROM orchestration.plans WHERE id = $1::uuid", plan.id)[0][0]
                .as<std::string>(),
            "failed");
}

// Two projects match "marketing": the local executor asks which one.
class PlanQuestionTest : public PlanEngineTest {
 protected:
  void SetUp() override {
    PlanEngineTest::SetUp();
    Invoke("create_project", {{"name", "Marketing site"}, {"description", "The new website"}});
    Invoke("create_project", {{"name", "Marketing ops"}, {"description", "Campaign tooling"}});
    ASSERT_TRUE(
        fake_
            ->SetRules({Rule(
                "plan_generation", "",
                Json({{"steps",
                       {StepJson("s1", "Read the marketing project", {"get_project_details"}, {},
                                 json::array({{{"tool", "get_project_details"},
                                               {"arguments", {{"project", "marketing"}}}}}))}}}))})
            .ok());
  }
};

TEST_F(PlanQuestionTest, AQuestionThePlannerCanAnswerIsAnswered) {
  ASSERT_TRUE(
      fake_
          ->AddRule(Rule("executor_clarification", "",
                         Json({{"answered", true}, {"answer", "Marketing site"}, {"reason", ""}})))
          .ok());
  auto engine = MakeEngine(true, false);
  RecordingSink sink;
  PlanRequest request =
      Objective("Look at the marketing website project", ExecutionMode::kAutoExecute);
  request.priority_entities = {"Marketing site"};
  auto outcome =
      engine->engine.CreatePlan(who_, "", request, InContext(intentpb::CONTEXT_TYPE_GLOBAL), sink);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->plan.status, PlanStatus::kCompleted) << outcome->plan.summary;
  const PlanStep& step = outcome->plan.steps[0];
  ASSERT_EQ(step.answers.size(), 1u);
  EXPECT_EQ(step.answers[0].answered_by, "planner");
  EXPECT_THAT(step.answers[0].question, HasSubstr("Several projects match 'marketing'"));
  EXPECT_THAT(step.result.dump(), HasSubstr("The new website"));
  const auto asked = RequestsOf("executor_clarification");
  ASSERT_FALSE(asked.empty());
  EXPECT_THAT(asked.back().body, HasSubstr("Marketing ops"));
  std::vector<std::string> dialogue;
  for (const auto& e : sink.Of(pb::ChatEvent::kExecutorMessage)) {
    dialogue.push_back(e.executor_message().kind());
  }
  EXPECT_THAT(dialogue, ::testing::IsSupersetOf({"task_assignment", "question", "clarification"}));
}

TEST_F(PlanQuestionTest, AQuestionOnlyTheUserCanAnswerPausesThePlanUntilTheAnswer) {
  ASSERT_TRUE(fake_
                  ->AddRule(Rule("executor_clarification", "",
                                 Json({{"answered", false},
                                       {"answer", ""},
                                       {"reason", "both are the user's projects"}})))
                  .ok());
  auto engine = MakeEngine(true, false);
  RecordingSink sink;
  auto outcome = engine->engine.CreatePlan(
      who_, "", Objective("Look at the marketing project", ExecutionMode::kAutoExecute),
      InContext(intentpb::CONTEXT_TYPE_GLOBAL), sink);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->plan.status, PlanStatus::kWaitingOnUser);
  ASSERT_TRUE(outcome->plan.pending_question.has_value());
  EXPECT_EQ(outcome->plan.pending_question->step_id, "s1");
  EXPECT_THAT(outcome->plan.pending_question->options,
              ::testing::UnorderedElementsAre("Marketing site", "Marketing ops"));
  const json result = json::parse(outcome->tool_result_json);
  EXPECT_EQ(result["status"], "waiting_on_user");
  EXPECT_THAT(result["question"]["text"].get<std::string>(), HasSubstr("which one"));
  EXPECT_TRUE(sink.Of(pb::ChatEvent::kStepComplete).empty());

  const size_t asked_before = RequestsOf("executor_clarification").size();
  RecordingSink after;
  auto answered = engine->engine.AnswerQuestion(who_, outcome->plan.id, "Marketing ops", after);
  ASSERT_TRUE(answered.ok()) << answered.status();
  EXPECT_EQ(answered->plan.status, PlanStatus::kCompleted) << answered->plan.summary;
  const PlanStep& step = answered->plan.steps[0];
  EXPECT_THAT(step.result.dump(), HasSubstr("Campaign tooling"));
  ASSERT_EQ(step.answers.size(), 1u);
  EXPECT_EQ(step.answers[0].answered_by, "user");
  EXPECT_EQ(step.attempts, 2);
  EXPECT_EQ(RequestsOf("executor_clarification").size(), asked_before)
      << "the user's answer is given again without asking the model";

  auto again = engine->engine.AnswerQuestion(who_, outcome->plan.id, "Marketing ops", after);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);

  // Everything the plan and its step hold of the user's and the model's
  // words (the objective, the question and its options, the answer, the
  // result) is sealed at rest: whole rows as text name none of it.
  std::string rows;
  ASSERT_TRUE(pg::WithTenantTransaction(*pool_, who_.tenant_id, [&](pqxx::work& tx) {
                for (const char* sql :
                     {"SELECT p::text FROM orchestration.plans p WHERE id = $1",
                      "SELECT s::text FROM orchestration.plan_steps s WHERE plan_id = $1"}) {
                  for (const pqxx::row& row : tx.exec_params(sql, outcome->plan.id)) {
                    rows += row[0].as<std::string>();
                  }
                }
                return absl::OkStatus();
              }).ok());
  ASSERT_THAT(rows, HasSubstr("ofs1:"));
  for (const char* words : {"marketing", "Marketing", "Campaign", "which one"}) {
    EXPECT_THAT(rows, Not(HasSubstr(words)));
  }

  // The step's assessment is stored with it: its score and verdict readable
  // to SQL, the rest sealed, and all of it back when the plan is read.
  ASSERT_TRUE(step.assessment.has_value());
  const pqxx::result verdicts = Query(
      "SELECT assessment->>'verdict', (assessment->>'score')::int, "
      "jsonb_typeof(assessment->'detail') FROM orchestration.plan_steps WHERE plan_id = $1",
      outcome->plan.id);
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_EQ(verdicts[0][0].as<std::string>(), VerdictName(step.assessment->verdict));
  EXPECT_EQ(verdicts[0][1].as<int>(), step.assessment->score);
  EXPECT_EQ(verdicts[0][2].as<std::string>(), "string") << "the detail is sealed";
  auto read = engine->engine.Get(who_, outcome->plan.id);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_TRUE(read->steps[0].assessment.has_value());
  EXPECT_EQ(AssessmentToJson(*read->steps[0].assessment), AssessmentToJson(*step.assessment));
}

// The model, scripted as an attacker (a prompt-injected document told it to
// "plan the deletion of every agent"), asks for an auto_execute plan whose
// step deletes an agent: nothing is deleted until the user approves the
// previewed plan; a rejection changes nothing; an approval runs exactly it.
// A step of a model's plan is blocked (the agent it reads does not exist):
// the model re-plans what is left with the step's assessment, the step
// rows are replaced in PostgreSQL with the completed step kept as it was
// (its result, times and assessment), and the new step runs.
TEST_F(PlanEngineTest, ABlockedStepIsRePlannedAndTheStoredPlanKeepsTheCompletedStep) {
  const json initial = {
      {"steps",
       {StepJson("s1", "List the agents", {"list_agents"}, {},
                 json::array({{{"tool", "list_agents"}, {"arguments", json::object()}}})),
        StepJson(
            "s2", "Read the agent ghost-agent", {"get_agent"}, {"s1"},
            json::array({{{"tool", "get_agent"}, {"arguments", {{"agent", "ghost-agent"}}}}}))}}};
  const json revised = {
      {"steps",
       {StepJson("s1", "List the agents", {"list_agents"}, {}),
        StepJson("s3", "List the skills instead", {"list_skills"}, {"s1"},
                 json::array({{{"tool", "list_skills"}, {"arguments", json::object()}}}))}}};
  ASSERT_TRUE(fake_
                  ->SetRules({Rule("plan_generation", "was assessed blocked", Json(revised)),
                              Rule("plan_generation", "", Json(initial))})
                  .ok());
  auto engine = MakeEngine(true, false);
  RecordingSink sink;
  auto outcome = engine->engine.CreatePlan(
      who_, "", Objective("Look at my agents", ExecutionMode::kAutoExecute),
      InContext(intentpb::CONTEXT_TYPE_GLOBAL), sink);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->plan.status, PlanStatus::kCompleted) << outcome->plan.summary;
  EXPECT_THAT(outcome->plan.summary, HasSubstr("Re-planned 1 time"));
  EXPECT_THAT(RequestsOf("plan_generation").back().body, HasSubstr("ghost-agent"));

  auto stored = engine->engine.Get(who_, outcome->plan.id);
  ASSERT_TRUE(stored.ok()) << stored.status();
  ASSERT_EQ(stored->steps.size(), 2u);
  const PlanStep& kept = stored->steps[0];
  EXPECT_EQ(kept.id, "s1");
  EXPECT_EQ(kept.status, StepStatus::kCompleted);
  EXPECT_EQ(kept.attempts, 1) << "it did not run again";
  EXPECT_GT(kept.finished_micros, 0);
  ASSERT_TRUE(kept.assessment.has_value());
  EXPECT_EQ(kept.assessment->verdict, Verdict::kComplete);
  EXPECT_EQ(stored->steps[1].id, "s3");
  EXPECT_EQ(stored->steps[1].status, StepStatus::kCompleted);
  ASSERT_TRUE(stored->steps[1].assessment.has_value());
  const json result = json::parse(outcome->tool_result_json);
  EXPECT_EQ(result["assessment"]["verdict"], "complete");
}

TEST_F(PlanEngineTest, AnAutoExecutePlanThatDeletesWaitsForTheUsersApprovalOfItsPreview) {
  ASSERT_FALSE(Invoke("create_agent", {{"name", "victim-agent"}, {"description", "d"}})
                   .contains("is_error"));
  const json plan = {{"steps",
                      {StepJson("s1", "Delete the agent victim-agent", {"delete_agent"}, {},
                                json::array({{{"tool", "delete_agent"},
                                              {"arguments", {{"agent", "victim-agent"}}}}}))}}};
  ASSERT_TRUE(fake_->SetRules({Rule("plan_generation", "", Json(plan))}).ok());
  auto engine = MakeEngine(true, false);
  auto exists = [&] {
    return !Invoke("get_agent", {{"agent", "victim-agent"}}).contains("is_error");
  };

  RecordingSink sink;
  auto made = engine->engine.CreatePlan(
      who_, "", Objective("Delete every agent", ExecutionMode::kAutoExecute),
      InContext(intentpb::CONTEXT_TYPE_GLOBAL), sink);
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_EQ(made->plan.status, PlanStatus::kPendingReview);
  EXPECT_FALSE(made->plan.writes_approved);
  EXPECT_TRUE(sink.Of(pb::ChatEvent::kStepStart).empty());
  EXPECT_TRUE(exists());
  ASSERT_EQ(sink.Of(pb::ChatEvent::kPreview).size(), 1u);
  const pb::PreviewEvent preview = sink.Of(pb::ChatEvent::kPreview)[0].preview();
  EXPECT_EQ(preview.risk(), executor::v1::TOOL_RISK_HIGH);
  ASSERT_EQ(preview.steps_size(), 1);
  EXPECT_EQ(preview.steps(0).tool_name(), "delete_agent");
  EXPECT_EQ(json::parse(preview.steps(0).arguments_json())["agent"], "victim-agent");
  EXPECT_EQ(preview.steps(0).risk(), executor::v1::TOOL_RISK_HIGH);

  // Rejected: nothing changes.
  auto rejected = engine->engine.Reject(who_, made->plan.id, "no");
  ASSERT_TRUE(rejected.ok()) << rejected.status();
  EXPECT_EQ(rejected->plan.status, PlanStatus::kRejected);
  EXPECT_TRUE(exists());
  EXPECT_FALSE(engine->engine.Approve(who_, made->plan.id, sink, nullptr, made->digest).ok());
  EXPECT_TRUE(exists());

  // Made again and approved as previewed: it runs, once.
  RecordingSink again;
  auto second = engine->engine.CreatePlan(
      who_, "", Objective("Delete every agent", ExecutionMode::kAutoExecute),
      InContext(intentpb::CONTEXT_TYPE_GLOBAL), again);
  ASSERT_TRUE(second.ok()) << second.status();
  auto ran = engine->engine.Approve(who_, second->plan.id, again, nullptr, second->digest);
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_EQ(ran->plan.status, PlanStatus::kCompleted) << ran->plan.summary;
  EXPECT_FALSE(exists());
}

// A reviewer model's approval never replaces the user's for a step that
// writes; a plan naming a tool the policy denies is not made at all.
TEST_F(PlanEngineTest, AReviewersApprovalOfAHighStepDoesNotRunItAndADeniedToolIsNotPlanned) {
  ASSERT_FALSE(
      Invoke("create_agent", {{"name", "kept-agent"}, {"description", "d"}}).contains("is_error"));
  const json plan = {{"steps",
                      {StepJson("s1", "Delete kept-agent", {"delete_agent"}, {},
                                json::array({{{"tool", "delete_agent"},
                                              {"arguments", {{"agent", "kept-agent"}}}}}))}}};
  ASSERT_TRUE(fake_
                  ->SetRules({Rule("plan_generation", "", Json(plan)),
                              Rule("plan_review", "",
                                   Json({{"verdict", "approved"}, {"notes", "fine, run it"}}))})
                  .ok());
  auto engine = MakeEngine(true, false);
  RecordingSink sink;
  auto made = engine->engine.CreatePlan(who_, "", Objective("Tidy up", ExecutionMode::kAgentReview),
                                        InContext(intentpb::CONTEXT_TYPE_GLOBAL), sink);
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_EQ(made->plan.review_verdict, ReviewVerdict::kApproved);
  EXPECT_EQ(made->plan.status, PlanStatus::kPendingReview);
  EXPECT_TRUE(sink.Of(pb::ChatEvent::kStepStart).empty());
  EXPECT_EQ(sink.Of(pb::ChatEvent::kPreview).size(), 1u);
  EXPECT_FALSE(Invoke("get_agent", {{"agent", "kept-agent"}}).contains("is_error"));

  PlanEngineOptions denying;
  denying.approvals.tools["delete_agent"] = GateVerdict::kDeny;
  auto strict = MakeEngine(true, false, denying);
  RecordingSink refused_sink;
  auto refused =
      strict->engine.CreatePlan(who_, "", Objective("Tidy up", ExecutionMode::kAutoExecute),
                                InContext(intentpb::CONTEXT_TYPE_GLOBAL), refused_sink);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("does not allow the tool delete_agent"));
  EXPECT_TRUE(refused_sink.Kinds().empty());
  EXPECT_FALSE(Invoke("get_agent", {{"agent", "kept-agent"}}).contains("is_error"));
}

TEST_F(PlanEngineTest, AReviewerApprovesRejectsOrRevisesAndVerdictsAreCounted) {
  auto& metrics = core::MetricsRegistry::Global();
  auto count = [&](const char* verdict) {
    return metrics
        .GetCounter("omniforge_orchestrator_plan_reviews_total", "Plan reviews, by verdict",
                    {{"verdict", verdict}})
        .Value();
  };
  const double approved = count("approved"), rejected = count("rejected"),
               needs_changes = count("needs_changes");
  const json plan = {
      {"steps",
       {StepJson("s1", "List the agents", {"list_agents"}, {},
                 json::array({{{"tool", "list_agents"}, {"arguments", json::object()}}}))}}};
  auto engine = MakeEngine(true, false);

  // Rejected: nothing runs.
  ASSERT_TRUE(
      fake_
          ->SetRules({Rule("plan_generation", "", Json(plan)),
                      Rule("plan_review", "",
                           Json({{"verdict", "rejected"}, {"notes", "not what was asked"}}))})
          .ok());
  RecordingSink rejected_sink;
  auto dropped =
      engine->engine.CreatePlan(who_, "", Objective("Check my agents", ExecutionMode::kAgentReview),
                                InContext(intentpb::CONTEXT_TYPE_GLOBAL), rejected_sink);
  ASSERT_TRUE(dropped.ok()) << dropped.status();
  EXPECT_EQ(dropped->plan.status, PlanStatus::kRejected);
  EXPECT_TRUE(rejected_sink.Of(pb::ChatEvent::kStepStart).empty());
  ASSERT_EQ(rejected_sink.Of(pb::ChatEvent::kPlanReview).size(), 1u);
  EXPECT_EQ(rejected_sink.Of(pb::ChatEvent::kPlanReview)[0].plan_review().verdict(),
            pb::REVIEW_VERDICT_REJECTED);
  EXPECT_EQ(json::parse(dropped->tool_result_json)["review"]["notes"], "not what was asked");

  // Needs changes: revised with the notes, then approved and run.
  const size_t before = fake_->RequestCount();
  ASSERT_TRUE(
      fake_
          ->SetRules(
              {Rule("plan_generation", "", Json(plan)),
               Rule("plan_review", "",
                    Json({{"verdict", "needs_changes"}, {"notes", "list paused agents too"}}), 1),
               Rule("plan_review", "", Json({{"verdict", "approved"}, {"notes", "fine"}}))})
          .ok());
  RecordingSink sink;
  auto run =
      engine->engine.CreatePlan(who_, "", Objective("Check my agents", ExecutionMode::kAgentReview),
                                InContext(intentpb::CONTEXT_TYPE_GLOBAL), sink);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->plan.status, PlanStatus::kCompleted) << run->plan.summary;
  const auto generations = RequestsOf("plan_generation", before);
  ASSERT_EQ(generations.size(), 2u);
  EXPECT_THAT(generations[1].body, HasSubstr("Revise the plan: list paused agents too"));
  EXPECT_EQ(RequestsOf("plan_review", before).size(), 2u);
  EXPECT_EQ(sink.Kinds().front(), "plan_created");
  EXPECT_EQ(sink.Of(pb::ChatEvent::kPlanReview).size(), 2u);
  EXPECT_EQ(sink.Of(pb::ChatEvent::kStepComplete).size(), 1u);

  EXPECT_EQ(count("approved"), approved + 1);
  EXPECT_EQ(count("rejected"), rejected + 1);
  EXPECT_EQ(count("needs_changes"), needs_changes + 1);
}

TEST_F(PlanEngineTest, ADraftWaitsForTheUserWhoApprovesRevisesOrRejects) {
  ASSERT_TRUE(
      fake_
          ->SetRules({Rule("plan_generation", "add the skills",
                           Json({{"steps",
                                  {StepJson("s1", "List the agents", {"list_agents"}, {},
                                            json::array({{{"tool", "list_agents"},
                                                          {"arguments", json::object()}}})),
                                   StepJson("s2", "List the skills", {"list_skills"}, {},
                                            json::array({{{"tool", "list_skills"},
                                                          {"arguments", json::object()}}}))}}})),
                      Rule("plan_generation", "",
                           Json({{"steps",
                                  {StepJson("s1", "List the agents", {"list_agents"}, {},
                                            json::array({{{"tool", "list_agents"},
                                                          {"arguments", json::object()}}}))}}}))})
          .ok());
  auto engine = MakeEngine(true, false);
  RecordingSink sink;
  const PlanContext context = InContext(intentpb::CONTEXT_TYPE_GLOBAL);
  auto draft = engine->engine.CreatePlan(
      who_, "", Objective("Review my workspace", ExecutionMode::kDraftOnly), context, sink);
  ASSERT_TRUE(draft.ok()) << draft.status();
  const std::string id = draft->plan.id;
  EXPECT_EQ(draft->plan.status, PlanStatus::kPendingReview);
  EXPECT_TRUE(sink.Of(pb::ChatEvent::kStepStart).empty());

  // Another tenant's caller cannot see or approve it.
  const core::Identity stranger{"globex", who_.user_id};
  EXPECT_EQ(engine->engine.Get(stranger, id).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(engine->engine.Approve(stranger, id, sink).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(engine->engine.Revise(who_, id, "  ", context, sink).status().code(),
            absl::StatusCode::kInvalidArgument);

  auto revised = engine->engine.Revise(who_, id, "add the skills", context, sink);
  ASSERT_TRUE(revised.ok()) << revised.status();
  EXPECT_EQ(revised->plan.status, PlanStatus::kPendingReview);
  EXPECT_EQ(revised->plan.steps.size(), 2u);

  auto approved = engine->engine.Approve(who_, id, sink);
  ASSERT_TRUE(approved.ok()) << approved.status();
  EXPECT_EQ(approved->plan.status, PlanStatus::kCompleted);
  EXPECT_EQ(sink.Of(pb::ChatEvent::kStepComplete).size(), 2u);
  EXPECT_EQ(engine->engine.Reject(who_, id, "too late").status().code(),
            absl::StatusCode::kFailedPrecondition);

  auto other = engine->engine.CreatePlan(
      who_, "", Objective("Review my workspace", ExecutionMode::kDraftOnly), context, sink);
  ASSERT_TRUE(other.ok());
  auto rejected = engine->engine.Reject(who_, other->plan.id, "not now");
  ASSERT_TRUE(rejected.ok()) << rejected.status();
  EXPECT_EQ(rejected->plan.status, PlanStatus::kRejected);
  EXPECT_EQ(engine->engine.Approve(who_, other->plan.id, sink).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(PlanEngineTest, APlanIsRunByOneCallAtATime) {
  ASSERT_TRUE(
      fake_
          ->SetRules({
              Rule("plan_generation", "",
                   Json({{"steps", {StepJson("s1", "Survey slowly", {"list_agents"}, {})}}})),
              ExecutorTurn("Survey slowly", false, "", {}, 800),
          })
          .ok());
  auto engine = MakeEngine(true, true);
  RecordingSink sink;
  auto draft = engine->engine.CreatePlan(
      who_, "", Objective("Survey my workspace", ExecutionMode::kDraftOnly),
      InContext(intentpb::CONTEXT_TYPE_GLOBAL), sink);
  ASSERT_TRUE(draft.ok()) << draft.status();
  const std::string id = draft->plan.id;

  absl::StatusOr<PlanOutcome> approved = absl::UnknownError("not run");
  std::thread first([&] { approved = engine->engine.Approve(who_, id, sink); });
  for (int i = 0; i < 500 && sink.Of(pb::ChatEvent::kStepStart).empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_FALSE(sink.Of(pb::ChatEvent::kStepStart).empty()) << "the step never started";
  // While the approval runs the plan, nothing else may run or change it.
  RecordingSink other;
  EXPECT_EQ(engine->engine.Execute(who_, id, other).status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(engine->engine.Reject(who_, id, "stop").status().code(), absl::StatusCode::kAborted);
  first.join();
  ASSERT_TRUE(approved.ok()) << approved.status();
  EXPECT_EQ(approved->plan.status, PlanStatus::kCompleted);
  EXPECT_TRUE(other.Kinds().empty());
  EXPECT_EQ(sink.Of(pb::ChatEvent::kStepStart).size(), 1u) << "the step ran once";
  // Once the call is over, the plan is free again (and completed).
  EXPECT_EQ(engine->engine.Execute(who_, id, other).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// An orchestrator that dies during a step: its database access is cut (as
// a dead process's would be), the step it was running stays `running` in
// the database, and another engine resumes the plan.
TEST_F(PlanEngineTest, APlanResumedAfterACrashKeepsFinishedStepsAndRepeatsNoToolCall) {
  const std::string login = "plan_crash_" + core::NewUuid().substr(24);
  {
    pqxx::connection admin(db_->dsn());
    pqxx::nontransaction tx(admin);
    tx.exec("CREATE ROLE " + login + " LOGIN IN ROLE omniforge_orchestrator");
  }
  // Roles belong to the cluster, not to the test's database.
  absl::Cleanup drop_role = [&] {
    pqxx::connection admin(db_->dsn());
    pqxx::nontransaction tx(admin);
    tx.exec_params("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1",
                   login);
    tx.exec("DROP ROLE IF EXISTS " + login);
  };
  std::string crash_dsn = db_->dsn();
  crash_dsn.replace(crash_dsn.find("user=omniforge"), 14, "user=" + login);
  pg::PgOptions options;
  options.dsn = crash_dsn;
  options.acquire_timeout = std::chrono::milliseconds(2000);
  auto crash_pool = pg::PgPool::Create(options);
  ASSERT_TRUE(crash_pool.ok()) << crash_pool.status();
  PgPlanStore crash_store(**crash_pool, *keys_);

  const std::string name = "Resume " + core::NewUuid().substr(24);
  FakeRule hang = ExecutorTurn("Create the project", true, "", {});
  hang.times = 1;
  hang.fault.kind = llm::testing::FakeFault::Kind::kHang;
  hang.fault.hang_ms = 3000;
  ASSERT_TRUE(
      fake_
          ->SetRules({
              Rule("plan_generation", "",
                   Json({{"steps",
                          {StepJson("s1", "Look for a template", {"list_project_templates"}, {}),
                           StepJson("s2", "Create the project", {"create_project"}, {"s1"}),
                           StepJson("s3", "Write the brief", {}, {"s2"})}}})),
              ExecutorTurn("Look for a template", false, "", {}),
              ExecutorTurn("Create the project", false, "create_project", {{"name", name}}),
              hang,
              ExecutorTurn("Create the project", true, "", {}),
              ExecutorTurn("Write the brief", false, "", {}),
          })
          .ok());
  auto crashing = MakeEngine(true, true, {}, &crash_store);
  RecordingSink sink;
  auto draft =
      crashing->engine.CreatePlan(who_, "", Objective("Set up " + name, ExecutionMode::kDraftOnly),
                                  InContext(intentpb::CONTEXT_TYPE_GLOBAL), sink);
  ASSERT_TRUE(draft.ok()) << draft.status();
  const std::string id = draft->plan.id;
  absl::Status crashed_run;
  std::thread run([&] { crashed_run = crashing->engine.Approve(who_, id, sink).status(); });
  absl::Cleanup join = [&] {
    if (run.joinable()) run.join();
  };

  // Wait until s2's write ran and its dialogue hangs, then cut the database.
  const std::string s2_keys = "plan:" + id + ":s2:%";
  bool s2_wrote = false;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
       !s2_wrote && std::chrono::steady_clock::now() < until;
       std::this_thread::sleep_for(std::chrono::milliseconds(20))) {
    s2_wrote = Query(
                   "SELECT count(*) FROM platform.tool_invocations WHERE idempotency_key LIKE $1 "
                   "AND status = 'done'",
                   s2_keys)[0][0]
                   .as<int>() == 1;
  }
  ASSERT_TRUE(s2_wrote);
  {
    pqxx::connection admin(db_->dsn());
    pqxx::nontransaction tx(admin);
    tx.exec("ALTER ROLE " + login + " NOLOGIN");
    tx.exec_params("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1",
                   login);
  }
  run.join();
  EXPECT_FALSE(crashed_run.ok()) << "the crashed engine stored its end";
  auto left = store_->Get(who_, id);
  ASSERT_TRUE(left.ok());
  ASSERT_EQ(left->status, PlanStatus::kRunning);
  ASSERT_EQ(left->FindStep("s1")->status, StepStatus::kCompleted);
  ASSERT_EQ(left->FindStep("s2")->status, StepStatus::kRunning);

  const size_t before = fake_->RequestCount();
  auto resuming = MakeEngine(true, true);
  RecordingSink resumed_sink;
  auto resumed = resuming->engine.Execute(who_, id, resumed_sink);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(resumed->plan.status, PlanStatus::kCompleted) << resumed->plan.summary;
  EXPECT_EQ(resumed->plan.FindStep("s1")->attempts, 1);
  EXPECT_EQ(resumed->plan.FindStep("s2")->attempts, 2);
  EXPECT_EQ(resumed->plan.FindStep("s3")->attempts, 1);
  for (const auto& e : resumed_sink.Of(pb::ChatEvent::kStepStart)) {
    EXPECT_NE(e.step_start().step_id(), "s1") << "a finished step ran again";
  }
  for (const auto& request : RequestsOf("executor_turn", before)) {
    EXPECT_EQ(request.body.find("Step: Look for a template"), std::string::npos);
  }
  // s2's write ran once: one ledger entry, one project.
  EXPECT_EQ(Query("SELECT count(*) FROM platform.tool_invocations WHERE idempotency_key LIKE $1",
                  s2_keys)[0][0]
                .as<int>(),
            1);
  EXPECT_EQ(Query("SELECT count(*) FROM platform.projects WHERE name = $1", name)[0][0].as<int>(),
            1);
}

}  // namespace
}  // namespace omniforge::orchestrator
