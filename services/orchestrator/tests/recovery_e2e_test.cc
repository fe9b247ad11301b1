// Work that fails for good, over the real stack (PostgreSQL and the four
// binaries, driven through the public ChatService) with the model planner
// on the fake provider:
//   - a tool call the executor refuses for good (an agent that is not
//     there) ends in a question with options; "try again" runs the call
//     again without a model call and it works once the fault is gone (the
//     agent was made meanwhile); "skip it and continue" goes on with the
//     model, which is told what failed;
//   - a plan step that fails for good is re-planned with the failure in
//     what the plan's model receives;
//   - in local mode, a plan's step that failed for good is asked about and
//     "try again" finishes the plan once the fault is gone.
#include <gmock/gmock.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

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
using ::testing::HasSubstr;
using ::testing::Not;

const core::Identity kUser{"acme", "ada"};

using Turn = testing::ChatTurn;

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

llm::testing::FakeReply Calls(const std::string& tool, const json& arguments) {
  llm::testing::FakeReply reply;
  reply.tool_calls = {{"", tool, arguments.dump()}};
  return reply;
}

// A plan's steps as the plan's model answers (plan_generation), when the
// last user message holds `user_contains`.
llm::testing::FakeRule Steps(const std::string& user_contains, const json& steps) {
  llm::testing::FakeRule rule;
  rule.match.operation = "plan_generation";
  rule.match.last_user_contains = user_contains;
  rule.reply.json = json{{"steps", steps}}.dump();
  return rule;
}

// A plan step the executor's deterministic agent carries out: one call.
json PlannedStep(const std::string& id, const std::string& description, const std::string& tool,
                 const json& arguments) {
  return {{"id", id},
          {"description", description},
          {"tools", {tool}},
          {"needs_executor", true},
          {"depends_on", json::array()},
          {"expected_output", ""},
          {"tool_calls", json::array({{{"tool", tool}, {"arguments", arguments}}})}};
}

class RecoveryEndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto fake = llm::testing::FakeLlmServer::Start({}, {.api_key = "fake-key"});
    ASSERT_TRUE(fake.ok()) << fake.status();
    fake_ = *std::move(fake);
    dir_ = std::filesystem::temp_directory_path() / ("omniforge-recovery-" + core::NewUuid());
    std::filesystem::create_directories(dir_);
    keys_ = testing::WriteApiKeyFile(dir_ / "api_keys", {kUser}, "recovery e2e");
    ASSERT_EQ(keys_.size(), 1u);
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

  // Restarts the orchestrator on the shipped configuration with the model
  // planner on the fake provider (it starts in local mode).
  void UseModelPlanner() {
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
    const std::filesystem::path path = dir_ / "orchestrator.yaml";
    std::ofstream(path) << config.str();
    stack_.orchestrator().Stop();
    std::vector<std::string> env = stack_.OrchestratorReplicaEnv();
    env.push_back("OMNIFORGE_SPOOL_DIR=" + (dir_ / "spool").string());
    env.emplace_back("FAKE_LLM_KEY=fake-key");
    ASSERT_EQ(stack_.orchestrator().Start(env, {"--config", path.string()}), std::nullopt);
    Connect();
  }

  Turn Chat(const std::string& message, const std::string& conversation_id = "",
            pb::ContextType context_type = pb::CONTEXT_TYPE_UNSPECIFIED,
            const std::string& entity_id = "") {
    pb::StreamChatRequest request;
    request.set_message(message);
    request.set_conversation_id(conversation_id);
    request.set_context_type(context_type);
    request.set_entity_id(entity_id);
    return testing::StreamTurn(*stub_, request, keys_[0]);
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

  testing::TestDatabase db_;
  std::unique_ptr<llm::testing::FakeLlmServer> fake_;
  std::filesystem::path dir_;
  std::vector<std::string> keys_;
  testing::ServiceStack stack_{{OMNIFORGE_CONVERSATION_BIN, OMNIFORGE_INTENT_BIN,
                                OMNIFORGE_EXECUTOR_BIN, OMNIFORGE_ORCHESTRATOR_BIN}};
  std::unique_ptr<pb::ChatService::Stub> stub_;
};

TEST_F(RecoveryEndToEndTest, AToolCallThatFailedForGoodIsAskedAboutAndTryAgainRunsItOnceFixed) {
  UseModelPlanner();
  ASSERT_TRUE(fake_
                  ->SetRules({Planner("what did weekly-digest run", false,
                                      Calls("list_runs", {{"agent", "weekly-digest"}})),
                              Planner("", true, {.text = "I could not read those runs."})})
                  .ok());
  const Turn asked = Chat("what did weekly-digest run this week?");
  ASSERT_TRUE(asked.status.ok()) << asked.status.error_message();
  const std::string text = asked.text();
  EXPECT_THAT(text, HasSubstr("This did not work: the tool list_runs"));
  EXPECT_THAT(text, HasSubstr("weekly-digest"));
  EXPECT_THAT(text, HasSubstr("1. Try again\n2. Skip it and continue\n3. Use another agent\n4. "
                              "Cancel"));
  EXPECT_FALSE(asked.final());
  const std::vector<pb::ChatEvent> states = asked.Of(pb::ChatEvent::kAgentState);
  ASSERT_FALSE(states.empty());
  EXPECT_EQ(states.back().agent_state().state(), pb::AGENT_STATE_WAITING_ON_USER);
  const std::string conversation = asked.session().conversation_id();

  // The fault goes away: the agent is there now.
  Invoke("create_agent", {{"name", "weekly-digest"}, {"description", "Posts the weekly digest"}});
  const size_t before = fake_->RequestCount();
  const Turn again = Chat("try again", conversation);
  ASSERT_TRUE(again.status.ok()) << again.status.error_message();
  const std::vector<pb::ChatEvent> results = again.Of(pb::ChatEvent::kToolResult);
  ASSERT_EQ(results.size(), 1u) << again.text();
  EXPECT_EQ(results[0].tool_result().tool_name(), "list_runs");
  EXPECT_FALSE(results[0].tool_result().is_error()) << results[0].tool_result().result_json();
  EXPECT_THAT(again.text(), HasSubstr("Trying the tool list_runs again."));
  EXPECT_THAT(again.text(), Not(HasSubstr("This did not work")));
  EXPECT_TRUE(again.final());
  EXPECT_TRUE(RequestsOf("planner_stream", before).empty()) << "the answer needs no model call";
}

TEST_F(RecoveryEndToEndTest, SkipGoesOnWithTheModelWhichIsToldWhatFailed) {
  UseModelPlanner();
  ASSERT_TRUE(fake_
                  ->SetRules({Planner("skip it", false, {.text = "Going on without those runs."}),
                              Planner("what did weekly-digest run", false,
                                      Calls("list_runs", {{"agent", "weekly-digest"}})),
                              Planner("", true, {.text = "I could not read those runs."})})
                  .ok());
  const Turn asked = Chat("what did weekly-digest run this week?");
  ASSERT_TRUE(asked.status.ok()) << asked.status.error_message();
  ASSERT_THAT(asked.text(), HasSubstr("2. Skip it and continue"));
  const size_t before = fake_->RequestCount();
  const Turn skip = Chat("skip it and continue", asked.session().conversation_id());
  ASSERT_TRUE(skip.status.ok()) << skip.status.error_message();
  EXPECT_TRUE(skip.Of(pb::ChatEvent::kToolCall).empty());
  EXPECT_THAT(skip.text(), HasSubstr("Going on without those runs."));
  EXPECT_TRUE(skip.final());
  const auto planned = RequestsOf("planner_stream", before);
  ASSERT_EQ(planned.size(), 1u);
  const std::string system =
      json::parse(planned[0].body)["messages"][0]["content"].get<std::string>();
  EXPECT_THAT(system, HasSubstr("the user chose to go on without the tool list_runs"));
  EXPECT_THAT(system, HasSubstr("list_runs failed"));
}

TEST_F(RecoveryEndToEndTest, APlanStepThatFailedForGoodIsRePlannedWithTheFailure) {
  UseModelPlanner();
  ASSERT_TRUE(
      fake_
          ->SetRules(
              {Planner("report on nobody-here", false,
                       Calls("agent_create_plan", {{"objective", "Report on nobody-here's runs"},
                                                   {"execution_mode", "auto_execute"}})),
               Planner("", true, {.text = "Here is what I found."}),
               Steps("Revise the plan", json::array({PlannedStep("s2", "List the agents instead",
                                                                 "list_agents", json::object())})),
               Steps("", json::array({PlannedStep("s1", "List the runs of nobody-here", "list_runs",
                                                  {{"agent", "nobody-here"}})}))})
          .ok());
  const size_t before = fake_->RequestCount();
  const Turn turn = Chat("report on nobody-here and its runs");
  ASSERT_TRUE(turn.status.ok()) << turn.status.error_message();
  EXPECT_EQ(turn.Of(pb::ChatEvent::kPlanCreated).size(), 2u) << turn.text();
  const auto generations = RequestsOf("plan_generation", before);
  ASSERT_EQ(generations.size(), 2u);
  // The plan's model is told the step, why it failed and what succeeded.
  EXPECT_THAT(generations[1].body, HasSubstr("Step s1 (List the runs of nobody-here) failed: "));
  EXPECT_THAT(generations[1].body, HasSubstr("nobody-here"));
  EXPECT_THAT(generations[1].body, HasSubstr("Context box: BLOCKERS: step s1 failed"));
  EXPECT_THAT(generations[1].body, HasSubstr("PROGRESS: nothing succeeded yet"));
  bool completed = false;
  for (const pb::ChatEvent& e : turn.Of(pb::ChatEvent::kStepComplete)) {
    if (e.step_complete().step_id() == "s2") {
      completed = e.step_complete().status() == pb::STEP_STATUS_COMPLETED;
    }
  }
  EXPECT_TRUE(completed) << turn.text();
  EXPECT_THAT(turn.text(), HasSubstr("Here is what I found."));
}

// The platform's note to the model at the end of a planner request (the
// loop_assessment tool result), parsed; null when the request ends
// otherwise.
json LoopNote(const llm::testing::RecordedRequest& request) {
  const json messages = json::parse(request.body)["messages"];
  if (messages.size() < 2 || messages.back()["role"] != "tool") return nullptr;
  const json& call = messages[messages.size() - 2];
  if (!call.contains("tool_calls") ||
      call["tool_calls"][0]["function"]["name"] != "loop_assessment") {
    return nullptr;
  }
  return json::parse(messages.back()["content"].get<std::string>());
}

// The model planner's loop is driven by the assessment: a lookup that
// keeps failing is assessed blocked after each iteration; the next request
// carries the assessment and the move (REVISE_PLAN twice, then EXIT), as
// data; after the exit the model is asked for its answer with tool_choice
// none; the client sees each round's check and the turn's assessment in
// `done`.
TEST_F(RecoveryEndToEndTest, TheModelPlannersLoopIsDrivenByTheAssessmentOfEachIteration) {
  UseModelPlanner();
  llm::testing::FakeRule again = Planner("", true, Calls("list_runs", {{"agent", "ghost"}}));
  again.times = 2;
  ASSERT_TRUE(fake_
                  ->SetRules({Planner("what did ghost run", false,
                                      Calls("list_runs", {{"agent", "ghost"}})),
                              again, Planner("", true, {.text = "I could not read ghost's runs."})})
                  .ok());
  const size_t before = fake_->RequestCount();
  const Turn turn = Chat("what did ghost run this week?");
  ASSERT_TRUE(turn.status.ok()) << turn.status.error_message();

  const auto planned = RequestsOf("planner_stream", before);
  ASSERT_EQ(planned.size(), 4u) << turn.text();
  EXPECT_TRUE(LoopNote(planned[0]).is_null());
  const json first = LoopNote(planned[1]);
  ASSERT_TRUE(first.is_object()) << planned[1].body;
  EXPECT_EQ(first["after_iteration"], 1);
  EXPECT_EQ(first["assessment"]["verdict"], "blocked");
  EXPECT_THAT(first["assessment"]["reasons"].dump(), HasSubstr("list_runs: "));
  EXPECT_EQ(first["next"], "REVISE_PLAN");
  EXPECT_EQ(LoopNote(planned[2])["next"], "REVISE_PLAN");
  const json exit = LoopNote(planned[3]);
  EXPECT_EQ(exit["next"], "EXIT");
  EXPECT_THAT(exit["why"].get<std::string>(), HasSubstr("still blocked after 2 re-plans"));
  EXPECT_EQ(json::parse(planned[3].body)["tool_choice"], "none");
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NE(json::parse(planned[i].body).value("tool_choice", ""), "none") << i;
  }
  // The reasons quote tool output: never in the system prompt.
  const std::string system =
      json::parse(planned[3].body)["messages"][0]["content"].get<std::string>();
  EXPECT_THAT(system, HasSubstr("loop_assessment"));
  const std::string reason = first["assessment"]["reasons"][0].get<std::string>();
  EXPECT_THAT(system, Not(HasSubstr(reason.substr(reason.find(": ") + 2))));

  std::vector<std::string> checked;
  for (const pb::ChatEvent& e : turn.Of(pb::ChatEvent::kAgentState)) {
    if (e.agent_state().details().starts_with("Checked"))
      checked.push_back(e.agent_state().details());
  }
  ASSERT_EQ(checked.size(), 3u);
  EXPECT_THAT(checked[0], HasSubstr("Checked the results of round 1: blocked"));
  EXPECT_THAT(checked[0], HasSubstr("next: revise plan"));
  EXPECT_THAT(checked[2], HasSubstr("next: exit"));
  EXPECT_EQ(turn.Of(pb::ChatEvent::kToolCall).size(), 3u);
  EXPECT_THAT(turn.text(), HasSubstr("I could not read ghost's runs."));
  const pb::Assessment& assessed = turn.events.back().done().assessment();
  EXPECT_EQ(assessed.verdict(), pb::ASSESSMENT_VERDICT_BLOCKED);
  EXPECT_THAT(assessed.reasons(), ::testing::Contains(HasSubstr("list_runs: ")));
}

// In local mode: the audit's steps fail (no such project), the user is
// asked about the first, and "try again" runs the plan's steps again once
// the project is there.
TEST_F(RecoveryEndToEndTest, LocalModeAsksAboutAFailedPlanStepAndTryAgainFinishesThePlan) {
  const Turn audit =
      Chat("how is this project doing?", "", pb::CONTEXT_TYPE_PROJECT_AUDIT, "Lighthouse");
  ASSERT_TRUE(audit.status.ok()) << audit.status.error_message();
  EXPECT_THAT(audit.text(), HasSubstr("This did not work: step s1 of the plan"));
  EXPECT_THAT(audit.text(), HasSubstr("Lighthouse"));
  EXPECT_THAT(audit.text(), HasSubstr("1. Try again\n2. Skip it and continue\n3. Cancel"));
  EXPECT_FALSE(audit.final());

  Invoke("create_project", {{"name", "Lighthouse"}, {"description", "The lighthouse rebuild"}});
  const Turn again = Chat("try again", audit.session().conversation_id());
  ASSERT_TRUE(again.status.ok()) << again.status.error_message();
  EXPECT_FALSE(again.Of(pb::ChatEvent::kStepStart).empty());
  for (const pb::ChatEvent& e : again.Of(pb::ChatEvent::kStepComplete)) {
    EXPECT_EQ(e.step_complete().status(), pb::STEP_STATUS_COMPLETED) << again.text();
  }
  EXPECT_THAT(again.text(), HasSubstr("Done"));
  EXPECT_TRUE(again.final()) << again.text();
  // The turn's assessment reaches the client in local mode too.
  const pb::Assessment& assessed = again.done().assessment();
  // Every step completed with the data asked for: COMPLETE, nothing short.
  EXPECT_EQ(assessed.verdict(), pb::ASSESSMENT_VERDICT_COMPLETE);
  EXPECT_EQ(assessed.score(), 100);
  EXPECT_TRUE(assessed.reasons().empty());
}

}  // namespace
}  // namespace omniforge::orchestrator
