// Unit tests of the chat turn on fakes (testing/turn_harness.h): no gRPC,
// no PostgreSQL, no sleeping. Time is a fake clock the test moves,
// so the time guardrail is tested in microseconds of real time.
#include "services/orchestrator/turn/turn_runner.h"

#include <thread>

#include "services/orchestrator/flow/routing.h"
#include "services/orchestrator/testing/turn_test_names.h"
#include "services/orchestrator/turn/history.h"

namespace omniforge::orchestrator {
namespace {

using testing::FakeClock;
using testing::FakeMemory;
using testing::FakeTools;

Routing RoutingOfReply(const convpb::Message& reply) {
  return RoutingFromJson(json::parse(reply.metadata_json()));
}

TEST(TurnRunnerTest, AFreshRequestRunsItsReadToolAndStoresBothMessages) {
  TurnHarness h(FakeUnderstanding::Always(intentpb::ACTION_TYPE_QUERY_INFO));
  h.tools.SetAgents(json::array({{{"name", "weekly-digest"}, {"description", "digest"}}}));
  RecordingSink sink;
  ASSERT_TRUE(h.Turn("list my agents", sink).ok());

  ASSERT_FALSE(sink.events.empty());
  EXPECT_TRUE(sink.events.front().has_session());
  EXPECT_TRUE(sink.events.front().session().conversation_created());
  EXPECT_TRUE(sink.events.back().has_done());
  EXPECT_TRUE(sink.events.back().done().is_final());
  EXPECT_EQ(sink.Of(pb::ChatEvent::kToolCall).size(), 1u);
  EXPECT_EQ(sink.Of(pb::ChatEvent::kToolCall)[0].tool_call().tool_name(), "list_agents");
  EXPECT_THAT(sink.Text(), HasSubstr("weekly-digest"));
  EXPECT_TRUE(sink.ErrorCodes().empty());

  const std::vector<convpb::Message> stored =
      h.memory.Messages(sink.events.front().session().conversation_id());
  ASSERT_EQ(stored.size(), 2u);
  EXPECT_EQ(stored[0].role(), convpb::ROLE_USER);
  EXPECT_EQ(stored[0].content(), "list my agents");
  EXPECT_EQ(stored[1].role(), convpb::ROLE_ASSISTANT);
  EXPECT_EQ(stored[1].id(), sink.events.back().done().assistant_message_id());
  EXPECT_EQ(RoutingOfReply(stored[1]).flow_id, sink.events.front().session().flow_id());
}

// Before it plans, a turn tells the client what it knows of the user's
// workspace (ontology_loaded, after the intent); continuing a conversation,
// it first tells what the last turn left (last_turn_context, right after
// the session). Every agent_state names the client's context.
TEST(TurnRunnerTest, ATurnTellsItsWorkspaceAndWhatTheLastTurnLeft) {
  TurnHarness h(FakeUnderstanding::Always(intentpb::ACTION_TYPE_QUERY_INFO, {{"topic", "agents"}}));
  h.tools.SetAgents(json::array({{{"name", "weekly-digest"}, {"description", "digest"}}}));
  RecordingSink first;
  ASSERT_TRUE(h.TurnIn(pb::CONTEXT_TYPE_PROJECT, "list my agents", first, "", "proj-1").ok());
  EXPECT_TRUE(first.Of(pb::ChatEvent::kLastTurnContext).empty());
  const std::vector<pb::ChatEvent> loaded = first.Of(pb::ChatEvent::kOntologyLoaded);
  ASSERT_EQ(loaded.size(), 1u);
  const pb::OntologyLoadedEvent& workspace = loaded[0].ontology_loaded();
  EXPECT_EQ(workspace.context_type(), pb::CONTEXT_TYPE_PROJECT);
  EXPECT_EQ(workspace.entity_id(), "proj-1");
  EXPECT_EQ(workspace.entities().at("topic"), "agents");
  ASSERT_EQ(workspace.agent_names_size(), 1);
  EXPECT_EQ(workspace.agent_names(0), "weekly-digest");
  EXPECT_TRUE(workspace.agents_listed());
  EXPECT_THAT(
      std::vector<std::string>(workspace.tool_names().begin(), workspace.tool_names().end()),
      ::testing::Contains("delete_agent"));
  for (const pb::ChatEvent& e : first.Of(pb::ChatEvent::kAgentState)) {
    EXPECT_EQ(e.agent_state().context_type(), pb::CONTEXT_TYPE_PROJECT);
  }

  RecordingSink second;
  ASSERT_TRUE(h.Turn("and the runs?", second, ConversationOf(first)).ok());
  ASSERT_GE(second.events.size(), 2u);
  ASSERT_TRUE(second.events[1].has_last_turn_context());
  const pb::LastTurnContextEvent& left = second.events[1].last_turn_context();
  EXPECT_EQ(left.turn_id(), first.events.front().session().turn_id());
  EXPECT_EQ(left.flow_id(), first.events.front().session().flow_id());
  EXPECT_EQ(left.flow_status(), pb::FLOW_STATUS_DONE);
  EXPECT_EQ(left.action_type(), pb::ACTION_TYPE_QUERY_INFO);
  EXPECT_EQ(left.entities().at("topic"), "agents");
  ASSERT_EQ(left.tools_used_size(), 1);
  EXPECT_EQ(left.tools_used(0), "list_agents");
  EXPECT_FALSE(left.question_pending());
  EXPECT_EQ(left.plan_id(), "");
  for (const pb::ChatEvent& e : second.Of(pb::ChatEvent::kAgentState)) {
    EXPECT_EQ(e.agent_state().context_type(), pb::CONTEXT_TYPE_GLOBAL);
  }
}

TEST(TurnRunnerTest, AnInvalidRequestIsRefusedWithNothingEmittedOrStored) {
  TurnHarness h(FakeUnderstanding::Always(intentpb::ACTION_TYPE_QUERY_INFO));
  RecordingSink sink;
  EXPECT_EQ(h.Turn("", sink).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(h.Turn(std::string("\xff\xfe", 2), sink).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(sink.events.empty());
  EXPECT_EQ(h.memory.appends(), 0);
  EXPECT_TRUE(h.tools.calls().empty());
}

TEST(TurnRunnerTest, AnotherUsersConversationIsNotFoundAndUntouched) {
  TurnHarness h(FakeUnderstanding::Always(intentpb::ACTION_TYPE_QUERY_INFO));
  RecordingSink first;
  ASSERT_TRUE(h.Turn("list my agents", first).ok());
  const std::string conversation = first.events.front().session().conversation_id();
  RecordingSink sink;
  EXPECT_EQ(h.Turn("list my agents", sink, conversation, "", kBob).code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(sink.events.empty());
  EXPECT_EQ(h.memory.Messages(conversation).size(), 2u);
}

TEST(TurnRunnerTest, StorageThatCannotTakeTheMessageFailsTheTurnBeforeAnyEvent) {
  TurnHarness h(FakeUnderstanding::Always(intentpb::ACTION_TYPE_QUERY_INFO));
  h.memory.SetUnreachable(true);
  RecordingSink sink;
  EXPECT_EQ(h.Turn("list my agents", sink).code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(sink.events.empty());
}

TEST(TurnRunnerTest, TheToolCallGuardrailStopsTheTurnWithItsErrorEvent) {
  TurnOptions options;
  options.max_tool_calls = 0;
  TurnHarness h(FakeUnderstanding::Always(intentpb::ACTION_TYPE_QUERY_INFO), {options});
  RecordingSink sink;
  ASSERT_TRUE(h.Turn("list my agents", sink).ok());
  EXPECT_THAT(sink.ErrorCodes(), ElementsAre(pb::CHAT_ERROR_CODE_TOOL_CALL_LIMIT));
  EXPECT_TRUE(sink.Of(pb::ChatEvent::kError)[0].error().fatal());
  EXPECT_TRUE(sink.Of(pb::ChatEvent::kToolCall).empty());
  // Only the agents listed for the analysis reached the executor.
  EXPECT_TRUE(h.tools.CallsOf("get_agent").empty());
  ASSERT_EQ(h.errors.errors().size(), 1u);
  EXPECT_EQ(h.errors.errors()[0].kind, "tool_call_limit");
  EXPECT_EQ(h.errors.errors()[0].component, "turn");
  EXPECT_TRUE(sink.events.back().has_done());
}

TEST(TurnRunnerTest, TheTimeGuardrailReadsTheTurnsClock) {
  TurnOptions options;
  options.turn_timeout = std::chrono::milliseconds(1000);
  TurnHarness h(FakeUnderstanding::Always(intentpb::ACTION_TYPE_QUERY_INFO), {options});
  // Understanding takes two seconds of the turn's (fake) time.
  h.understanding.OnCall([&h] { h.clock.Advance(std::chrono::seconds(2)); });
  RecordingSink sink;
  const auto real_start = std::chrono::steady_clock::now();
  ASSERT_TRUE(h.Turn("list my agents", sink).ok());
  EXPECT_LT(std::chrono::steady_clock::now() - real_start, std::chrono::seconds(1));
  EXPECT_THAT(sink.ErrorCodes(), ElementsAre(pb::CHAT_ERROR_CODE_TIME_LIMIT));
  EXPECT_TRUE(sink.Of(pb::ChatEvent::kToolCall).empty());
  // What was done is kept: the reply is stored, and done says how long the
  // turn took on its clock.
  EXPECT_EQ(h.memory.appends(), 2);
  EXPECT_GE(sink.events.back().done().usage().duration_ms(), 2000.0);
}

TEST(TurnRunnerTest, ATurnWithinItsTimeRunsItsTools) {
  TurnOptions options;
  options.turn_timeout = std::chrono::milliseconds(1000);
  TurnHarness h(FakeUnderstanding::Always(intentpb::ACTION_TYPE_QUERY_INFO), {options});
  h.understanding.OnCall([&h] { h.clock.Advance(std::chrono::milliseconds(900)); });
  RecordingSink sink;
  ASSERT_TRUE(h.Turn("list my agents", sink).ok());
  EXPECT_TRUE(sink.ErrorCodes().empty());
  EXPECT_EQ(sink.Of(pb::ChatEvent::kToolCall).size(), 1u);
}

TEST(TurnRunnerTest, ACancelledTurnRunsNoToolAndSaysCancelledOnce) {
  TurnHarness h(FakeUnderstanding::Always(intentpb::ACTION_TYPE_QUERY_INFO));
  pb::StreamChatRequest request;
  request.set_message("list my agents");
  TurnControl control;
  control.Cancel();
  RecordingSink sink;
  ASSERT_TRUE(h.runner->Run(kAlice, request, control, sink).ok());
  EXPECT_THAT(sink.ErrorCodes(), ElementsAre(pb::CHAT_ERROR_CODE_CANCELLED));
  EXPECT_TRUE(sink.Of(pb::ChatEvent::kToolCall).empty());
  // A cancel is the user's choice, not a failure of the orchestration.
  EXPECT_TRUE(h.errors.errors().empty());
}

TEST(TurnRunnerTest, ARetriedTurnReplaysItsReplyWithoutRunningAgain) {
  TurnHarness h(FakeUnderstanding::Always(intentpb::ACTION_TYPE_QUERY_INFO));
  RecordingSink first;
  ASSERT_TRUE(h.Turn("list my agents", first, "", "turn-1").ok());
  const std::string conversation = first.events.front().session().conversation_id();
  RecordingSink again;
  ASSERT_TRUE(h.Turn("list my agents", again, conversation, "turn-1").ok());
  ASSERT_EQ(again.events.size(), 3u);
  EXPECT_TRUE(again.events[0].session().replayed());
  EXPECT_EQ(again.Text(), first.Text());
  EXPECT_EQ(again.events[2].done().assistant_message_id(),
            first.events.back().done().assistant_message_id());
  // Nothing ran again (the agents may be listed on the side: a read).
  EXPECT_TRUE(again.Of(pb::ChatEvent::kToolCall).empty());
  EXPECT_EQ(h.memory.Messages(conversation).size(), 2u);
}

TEST(TurnRunnerTest, AWriteWaitsForApprovalAndRunsOnceWithTheActionsKey) {
  TurnHarness h(FakeUnderstanding::Always(intentpb::ACTION_TYPE_EXECUTE_TASK,
                                          {{"agent_name", "weekly-digest"}}));
  h.tools.SetAgents(json::array({{{"name", "weekly-digest"}, {"id", "a-1"}}}));
  RecordingSink ask;
  ASSERT_TRUE(h.Turn("run weekly-digest now", ask).ok());
  const std::string conversation = ask.events.front().session().conversation_id();
  ASSERT_EQ(ask.Of(pb::ChatEvent::kPreview).size(), 1u);
  const pb::PreviewEvent preview = ask.Of(pb::ChatEvent::kPreview)[0].preview();
  EXPECT_EQ(preview.tool_name(), "run_agent");
  EXPECT_TRUE(h.tools.CallsOf("run_agent").empty());
  EXPECT_FALSE(ask.events.back().done().is_final());
  EXPECT_THAT(ask.States(), ::testing::Contains(pb::AGENT_STATE_WAITING_ON_USER));
  // The flow waits: its state, with the action previewed, is in the flow
  // store; the reply's routing only says that it waits.
  const std::optional<FlowState> flow = h.Flow(ask.events.front().session().flow_id());
  ASSERT_TRUE(flow.has_value());
  EXPECT_EQ(flow->status, FlowStatus::kWaiting);
  EXPECT_EQ(flow->revision, 1);
  ASSERT_EQ(flow->pending.size(), 1u);
  EXPECT_EQ(flow->pending[0].action_id, preview.action_id());
  const Routing routing = RoutingOfReply(h.memory.Messages(conversation).back());
  EXPECT_EQ(routing.status, FlowStatus::kWaiting);
  EXPECT_TRUE(routing.pending_action);

  RecordingSink yes;
  ASSERT_TRUE(h.Turn("yes", yes, conversation).ok());
  const auto runs = h.tools.CallsOf("run_agent");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].idempotency_key(), "action:" + preview.action_id());
  EXPECT_EQ(yes.events.front().session().flow_id(), ask.events.front().session().flow_id());
  EXPECT_TRUE(yes.events.back().done().is_final());

  // A second "yes" has nothing left to approve.
  RecordingSink twice;
  ASSERT_TRUE(h.Turn("yes", twice, conversation).ok());
  EXPECT_EQ(h.tools.CallsOf("run_agent").size(), 1u);
}

TEST(TurnRunnerTest, WithoutAFlowStoreGivenTheFlowsStateIsKeptInMemoryAndTheYesRuns) {
  FakeClock clock;
  FakeMemory memory;
  FakeUnderstanding understanding(FakeUnderstanding::Always(intentpb::ACTION_TYPE_EXECUTE_TASK,
                                                            {{"agent_name", "weekly-digest"}}));
  FakeTools tools;
  tools.SetAgents(json::array({{{"name", "weekly-digest"}, {"id", "a-1"}}}));
  TurnOptions options;
  options.clock = &clock;
  const TurnRunner runner(memory, understanding, tools, options);  // no flow store, no error log
  auto turn = [&](const std::string& message, const std::string& conversation) {
    pb::StreamChatRequest request;
    request.set_message(message);
    request.set_conversation_id(conversation);
    TurnControl control;
    RecordingSink sink;
    EXPECT_TRUE(runner.Run(kAlice, request, control, sink).ok());
    return sink;
  };
  const RecordingSink ask = turn("run weekly-digest now", "");
  ASSERT_EQ(ask.Of(pb::ChatEvent::kPreview).size(), 1u);
  const RecordingSink yes = turn("yes", ask.events.front().session().conversation_id());
  EXPECT_EQ(tools.CallsOf("run_agent").size(), 1u);
  EXPECT_EQ(yes.events.front().session().flow_id(), ask.events.front().session().flow_id());
}

TEST(TurnRunnerTest, ASuspendedTurnSavesItsFlowAndAContinueResumesIt) {
  TurnHarness h(FakeUnderstanding::Always(intentpb::ACTION_TYPE_QUERY_INFO));
  RecordingSink first;
  ASSERT_TRUE(h.Turn("list my agents", first).ok());
  const std::string conversation = first.events.front().session().conversation_id();

  pb::StreamChatRequest request;
  request.set_message("list my agents again");
  request.set_conversation_id(conversation);
  TurnControl control;
  control.RequestSuspend();
  RecordingSink suspended;
  ASSERT_TRUE(h.runner->Run(kAlice, request, control, suspended).ok());
  EXPECT_THAT(suspended.States(), ::testing::Contains(pb::AGENT_STATE_SUSPENDED));
  EXPECT_TRUE(suspended.Of(pb::ChatEvent::kToolCall).empty());
  const std::optional<SuspendedFlow> set_aside = control.SuspendedState();
  ASSERT_TRUE(set_aside.has_value());
  const std::string flow_id = suspended.events.front().session().flow_id();
  EXPECT_EQ(set_aside->flow_id, flow_id);
  ASSERT_TRUE(h.Flow(flow_id).has_value());
  EXPECT_EQ(h.Flow(flow_id)->status, FlowStatus::kSuspended);

  const size_t analyses = h.understanding.requests().size();
  RecordingSink resumed;
  ASSERT_TRUE(h.Turn("continue", resumed, conversation).ok());
  EXPECT_EQ(resumed.events.front().session().flow_id(), flow_id);
  EXPECT_EQ(resumed.Of(pb::ChatEvent::kToolCall).size(), 1u);
  // The intent service read the resume, told the flow set aside; the
  // analysis is the flow's own.
  ASSERT_EQ(h.understanding.requests().size(), analyses + 1);
  EXPECT_FALSE(h.understanding.requests().back().pending().resumable_goal().empty());
  EXPECT_THAT(resumed.Of(pb::ChatEvent::kIntent)[0].intent().analysis().reasoning(),
              HasSubstr("resumes the flow"));
}

TEST(TurnRunnerTest, UnderstandingOutOfReachStillAnswersAndFilesTheError) {
  TurnHarness h([](const intentpb::AnalyzeIntentRequest&) {
    return absl::StatusOr<intentpb::IntentAnalysis>(absl::UnavailableError("down"));
  });
  RecordingSink sink;
  ASSERT_TRUE(h.Turn("list my agents", sink).ok());
  EXPECT_THAT(sink.ErrorCodes(), ElementsAre(pb::CHAT_ERROR_CODE_INTERNAL));
  EXPECT_FALSE(sink.Of(pb::ChatEvent::kError)[0].error().fatal());
  ASSERT_EQ(h.errors.errors().size(), 1u);
  EXPECT_EQ(h.errors.errors()[0].component, "intent");
  EXPECT_TRUE(sink.events.back().has_done());
}

TEST(TurnRunnerTest, TheIntentServiceIsGivenTheHistoryAndTheAgents) {
  TurnHarness h(FakeUnderstanding::Always(intentpb::ACTION_TYPE_QUERY_INFO));
  h.tools.SetAgents(json::array({{{"name", "weekly-digest"}, {"description", "digest"}}}));
  RecordingSink first;
  ASSERT_TRUE(h.Turn("list my agents", first).ok());
  RecordingSink second;
  ASSERT_TRUE(
      h.Turn("and the runs?", second, first.events.front().session().conversation_id()).ok());
  const std::vector<intentpb::AnalyzeIntentRequest> asked = h.understanding.requests();
  ASSERT_GE(asked.size(), 2u);
  const intentpb::AnalyzeIntentRequest& last = asked.back();
  EXPECT_EQ(last.message(), "and the runs?");
  ASSERT_EQ(last.history_size(), 2);
  EXPECT_EQ(last.history(0).content(), "list my agents");
  ASSERT_EQ(last.available_agents_size(), 1);
  EXPECT_EQ(last.available_agents(0).name(), "weekly-digest");
}

// The intent service reads the last 20 turns (kIntentHistoryTurns); a
// long conversation sends it those, the newest last, and nothing older.
TEST(TurnRunnerTest, TheIntentServiceIsGivenTheTurnsItReadsAndNoMore) {
  TurnHarness h(FakeUnderstanding::Always(intentpb::ACTION_TYPE_CONVERSATION));
  std::string conversation;
  for (int i = 0; i < 14; ++i) {
    RecordingSink sink;
    ASSERT_TRUE(h.Turn("message " + std::to_string(i), sink, conversation).ok());
    conversation = sink.events.front().session().conversation_id();
  }
  const std::vector<intentpb::AnalyzeIntentRequest> asked = h.understanding.requests();
  const intentpb::AnalyzeIntentRequest& last = asked.back();
  EXPECT_EQ(last.message(), "message 13");
  ASSERT_EQ(last.history_size(), kIntentHistoryTurns);
  // 13 exchanges before it: the oldest three are left out.
  EXPECT_EQ(last.history(0).content(), "message 3");
  EXPECT_EQ(last.history(0).role(), intentpb::TURN_ROLE_USER);
  EXPECT_EQ(last.history(kIntentHistoryTurns - 2).content(), "message 12");
  EXPECT_EQ(last.history(kIntentHistoryTurns - 1).role(), intentpb::TURN_ROLE_ASSISTANT);
}

TEST(TurnRunnerModelTest, TheIterationGuardrailEndsAModelThatKeepsCallingTools) {
  ScriptedModel model;
  for (int i = 0; i < 5; ++i) model.PushToolCall("list_runs", json::object());
  TurnOptions options;
  options.max_iterations = 2;
  TurnHarness h(FakeUnderstanding::Always(intentpb::ACTION_TYPE_QUERY_INFO), {options, &model});
  RecordingSink sink;
  ASSERT_TRUE(h.Turn("what ran today?", sink).ok());
  EXPECT_THAT(sink.ErrorCodes(), ElementsAre(pb::CHAT_ERROR_CODE_ITERATION_LIMIT));
  // Two iterations, then the answer asked for without tools.
  EXPECT_EQ(model.requests().size(), 3u);
  EXPECT_EQ(h.tools.CallsOf("list_runs").size(), 2u);
  // The usage of every model call is in done.
  EXPECT_EQ(sink.events.back().done().usage().llm_calls(), 3);
  EXPECT_EQ(sink.events.back().done().usage().prompt_tokens(), 300);
}

TEST(TurnRunnerModelTest, AWriteTheModelAsksForIsPreviewedNotRunAndRunsOnceApproved) {
  ScriptedModel model;
  model.PushToolCall("run_agent", {{"agent", "a-1"}});
  model.PushText("I can run it once you approve.");
  TurnHarness h(FakeUnderstanding::Always(intentpb::ACTION_TYPE_EXECUTE_TASK), {{}, &model});
  h.tools.SetAgents(json::array({{{"name", "weekly-digest"}, {"id", "a-1"}}}));
  RecordingSink ask;
  ASSERT_TRUE(h.Turn("run the digest", ask).ok());
  ASSERT_EQ(ask.Of(pb::ChatEvent::kPreview).size(), 1u);
  EXPECT_TRUE(h.tools.CallsOf("run_agent").empty());
  EXPECT_FALSE(ask.events.back().done().is_final());
  const std::string action = ask.Of(pb::ChatEvent::kPreview)[0].preview().action_id();

  RecordingSink yes;
  ASSERT_TRUE(h.Turn("yes", yes, ask.events.front().session().conversation_id()).ok());
  const auto runs = h.tools.CallsOf("run_agent");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].idempotency_key(), "action:" + action);
  EXPECT_EQ(json::parse(runs[0].arguments_json()), json({{"agent", "a-1"}}));
}

TEST(TurnRunnerModelTest, AModelThatFailsLeavesTheTurnToTheLocalPolicy) {
  ScriptedModel model;  // nothing scripted: the call fails
  TurnHarness h(FakeUnderstanding::Always(intentpb::ACTION_TYPE_QUERY_INFO), {{}, &model});
  RecordingSink sink;
  ASSERT_TRUE(h.Turn("list my agents", sink).ok());
  EXPECT_THAT(sink.ErrorCodes(), ElementsAre(pb::CHAT_ERROR_CODE_MODEL_FAILED));
  EXPECT_FALSE(sink.Of(pb::ChatEvent::kError)[0].error().fatal());
  ASSERT_EQ(sink.Of(pb::ChatEvent::kToolCall).size(), 1u);
  EXPECT_EQ(sink.Of(pb::ChatEvent::kToolCall)[0].tool_call().tool_name(), "list_agents");
  ASSERT_EQ(h.errors.errors().size(), 1u);
  EXPECT_EQ(h.errors.errors()[0].component, "llm");
}

// CancelTurn while a tool runs: the tool's call carries the turn's cancel
// signal and sees it fire (a gRPC client cancels the call there); the
// writes that keep what the turn did are made with calls nothing cancels.
TEST(TurnRunnerCallTest, CancellingATurnCancelsTheToolCallInFlightButNotItsWrites) {
  ScriptedModel model;
  model.PushToolCall("list_runs", json::object());
  model.PushText("Nothing ran today.");
  TurnHarness h(FakeUnderstanding::Always(intentpb::ACTION_TYPE_QUERY_INFO), {{}, &model});
  TurnControl control;
  h.tools.OnCall([&control](const execpb::InvokeToolRequest& request) {
    if (request.tool_name() == "list_runs") control.Cancel();
  });
  RecordingSink sink;
  ASSERT_TRUE(h.runner->Run(kAlice, TurnHarness::Request("what ran today?"), control, sink).ok());
  EXPECT_THAT(sink.ErrorCodes(), ElementsAre(pb::CHAT_ERROR_CODE_CANCELLED));

  const SeenCall tool = h.calls.Only("InvokeTool list_runs");
  EXPECT_TRUE(tool.cancellable);
  EXPECT_TRUE(tool.saw_cancel);
  EXPECT_EQ(model.requests().size(), 1u) << "the model is not asked again";

  EXPECT_FALSE(h.calls.Only("AppendMessage ROLE_USER").cancellable);
  const SeenCall reply = h.calls.Only("AppendMessage ROLE_ASSISTANT");
  EXPECT_FALSE(reply.cancellable);
  EXPECT_FALSE(reply.saw_cancel);
  EXPECT_EQ(h.memory.Messages(sink.events.front().session().conversation_id()).size(), 2u);
}

// Each call ends `call_timeout` after it starts or at the turn's deadline,
// whichever comes first, on the turn's clock; only the closing writes get
// a call's time of their own past it.
TEST(TurnRunnerCallTest, ADownstreamCallNeverEndsAfterTheTurnsDeadline) {
  TurnOptions options;
  options.turn_timeout = std::chrono::milliseconds(1000);
  options.call_timeout = std::chrono::milliseconds(600);
  TurnHarness h(FakeUnderstanding::Always(intentpb::ACTION_TYPE_QUERY_INFO), {options});
  // Understanding takes 500 ms of the turn's (fake) time.
  h.understanding.OnCall([&h] { h.clock.Advance(std::chrono::milliseconds(500)); });
  const core::TimePoint start = h.clock.Now();
  const core::TimePoint turn_deadline = start + std::chrono::milliseconds(1000);
  TurnControl control;
  RecordingSink sink;
  ASSERT_TRUE(h.runner->Run(kAlice, TurnHarness::Request("list my agents"), control, sink).ok());
  ASSERT_TRUE(sink.ErrorCodes().empty());

  int cut_by_the_turn = 0;
  for (const SeenCall& call : h.calls.calls()) {
    if (!call.cancellable) continue;
    EXPECT_LE(call.deadline, turn_deadline) << call.what;
    if (call.deadline == turn_deadline) ++cut_by_the_turn;
  }
  EXPECT_GT(cut_by_the_turn, 0) << "a call made after the analysis ends with the turn";
  EXPECT_EQ(h.calls.Only("AnalyzeIntent").deadline, start + std::chrono::milliseconds(600));
  const SeenCall reply = h.calls.Only("AppendMessage ROLE_ASSISTANT");
  EXPECT_FALSE(reply.cancellable);
  EXPECT_EQ(reply.deadline, start + std::chrono::milliseconds(1100));
}

// A planner model that reports each call's usage record to the usage the
// call was given, as the LLM client does, from a thread of its own: the
// turn's usage travels with the call, not with the thread.
class ReportingModel final : public llm::ChatModel {
 public:
  explicit ReportingModel(llm::ChatModel& model) : model_(model) {}
  absl::StatusOr<llm::ChatResponse> Complete(const llm::ChatRequest& request,
                                             const llm::CallContext& context) override {
    return Report(model_.Complete(request, context), context);
  }
  absl::StatusOr<llm::ChatResponse> Stream(const llm::ChatRequest& request,
                                           const llm::CallContext& context,
                                           const llm::StreamCallback& on_delta) override {
    return Report(model_.Stream(request, context, on_delta), context);
  }

 private:
  absl::StatusOr<llm::ChatResponse> Report(absl::StatusOr<llm::ChatResponse> answer,
                                           const llm::CallContext& context) {
    llm::UsageRecord record;
    record.operation_type = context.operation_type;
    record.ok = answer.ok();
    if (answer.ok()) record.tokens = answer->usage;
    if (context.usage != nullptr) std::thread([&] { context.usage->Record(record); }).join();
    return answer;
  }

  llm::ChatModel& model_;
};

TEST(TurnRunnerModelTest, TheModelCallsUsageReachesDoneAndTheTurnsOneRow) {
  ScriptedModel script;
  script.PushToolCall("list_runs", json::object());
  script.PushText("Nothing ran today.");
  ReportingModel model(script);
  TurnHarness h(FakeUnderstanding::Always(intentpb::ACTION_TYPE_QUERY_INFO), {{}, &model});
  RecordingSink sink;
  ASSERT_TRUE(h.Turn("what ran today?", sink, "", "turn-with-usage").ok());
  const pb::TurnUsage& usage = sink.events.back().done().usage();
  EXPECT_EQ(usage.llm_calls(), 2);
  EXPECT_EQ(usage.prompt_tokens(), 200);
  EXPECT_EQ(usage.completion_tokens(), 20);
  const std::vector<UsageRow> rows = h.usage.rows();
  ASSERT_EQ(rows.size(), 1u) << "stored once the turn is over";
  EXPECT_EQ(rows[0].who.turn_id, "turn-with-usage");
  EXPECT_EQ(rows[0].who.user_id, kAlice.user_id);
  EXPECT_EQ(rows[0].who.conversation_id, sink.events.front().session().conversation_id());
  ASSERT_EQ(rows[0].calls.size(), 2u);
  EXPECT_EQ(rows[0].calls[0].record.operation_type, "planner_stream");
  EXPECT_EQ(rows[0].calls[0].record.tokens.prompt_tokens, 100);
  EXPECT_EQ(h.usage.unattributed(), 0);
}

}  // namespace
}  // namespace omniforge::orchestrator
