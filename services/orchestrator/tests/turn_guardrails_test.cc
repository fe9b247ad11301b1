// The turn's guardrails, cancel, suspend and resume, and retries, on fakes
// (testing/turn_harness.h): no gRPC, no PostgreSQL, no sleeping. Time is a
// fake clock the test moves; a cancel or a newer message comes from a
// fake's hook at the moment the test names (before a tool, during a tool,
// while the model writes).
#include "services/orchestrator/flow/routing.h"
#include "services/orchestrator/testing/turn_test_names.h"

namespace omniforge::orchestrator {
namespace {

FakeUnderstanding::Answer Reads() {
  return FakeUnderstanding::Always(intentpb::ACTION_TYPE_QUERY_INFO);
}

TurnHarness::Setup WithModel(ScriptedModel& model, TurnOptions options = {}) {
  return {std::move(options), &model, false};
}

// The kinds of the errors filed, in order.
std::vector<std::string> KindsFiled(const TurnHarness& h) {
  std::vector<std::string> kinds;
  for (const TurnError& e : h.errors.errors()) kinds.push_back(e.kind);
  return kinds;
}

TEST(TurnGuardrailTest, NineReadsAskedAtOnceStopAtTheEighthAndTheModelIsNotAskedAgain) {
  ScriptedModel model;
  std::vector<std::pair<std::string, json>> reads;
  reads.reserve(9);
  for (int i = 0; i < 9; ++i) reads.emplace_back("list_runs", json{{"page", i}});
  model.PushToolCalls(reads);
  TurnHarness h(Reads(), WithModel(model));
  RecordingSink sink;
  ASSERT_TRUE(h.Turn("show me every run", sink).ok());
  EXPECT_THAT(sink.ErrorCodes(), ElementsAre(pb::CHAT_ERROR_CODE_TOOL_CALL_LIMIT));
  EXPECT_EQ(h.tools.CallsOf("list_runs").size(), 8u);
  EXPECT_EQ(sink.Of(pb::ChatEvent::kToolResult).size(), 8u) << "the eight results are kept";
  EXPECT_EQ(model.requests().size(), 1u);
  const pb::ErrorEvent error = sink.Of(pb::ChatEvent::kError)[0].error();
  EXPECT_TRUE(error.fatal());
  EXPECT_THAT(error.message(), HasSubstr("8 tool calls"));
  EXPECT_EQ(sink.events.back().done().usage().tool_calls(), 8);
  ASSERT_THAT(KindsFiled(h), ElementsAre("tool_call_limit"));
  EXPECT_EQ(h.errors.errors()[0].component, "turn");
  EXPECT_EQ(h.errors.errors()[0].stage, "tool_call");
  EXPECT_EQ(h.errors.errors()[0].tool, "list_runs") << "the call that was not made";
  // The turn and its reply are stored: the conversation goes on.
  EXPECT_EQ(h.memory.Messages(ConversationOf(sink)).size(), 2u);
  model.PushText("You're welcome.");
  RecordingSink next;
  ASSERT_TRUE(h.Turn("thanks", next, ConversationOf(sink)).ok());
  EXPECT_TRUE(next.ErrorCodes().empty());
}

// At the cap the model is asked once more, with no tool call allowed, for
// its answer; a call it writes anyway does not run.
TEST(TurnGuardrailTest, TheIterationLimitEndsTheTurnKeepsItsToolsAndIsFiled) {
  ScriptedModel model;
  for (int i = 0; i < 4; ++i) model.PushToolCall("list_runs", json{{"page", i}});
  TurnOptions options;
  options.max_iterations = 3;
  TurnHarness h(Reads(), WithModel(model, options));
  RecordingSink sink;
  ASSERT_TRUE(h.Turn("what ran today?", sink).ok());
  EXPECT_THAT(sink.ErrorCodes(), ElementsAre(pb::CHAT_ERROR_CODE_ITERATION_LIMIT));
  ASSERT_EQ(model.requests().size(), 4u);
  EXPECT_EQ(model.requests()[3].tool_choice.mode, llm::ToolChoiceMode::kNone);
  EXPECT_EQ(h.tools.CallsOf("list_runs").size(), 3u);
  EXPECT_THAT(sink.Text(), HasSubstr("I stopped here: reached the limit of 3 iterations"));
  EXPECT_THAT(KindsFiled(h), ElementsAre("iteration_limit"));
  EXPECT_EQ(h.memory.Messages(ConversationOf(sink)).size(), 2u);
}

TEST(TurnGuardrailTest, AModelStillWritingWhenTheTimeRunsOutIsCutOnceAndItsWordsAreKept) {
  ScriptedModel model;
  model.PushText("Here is what I found so far");
  TurnOptions options;
  options.turn_timeout = std::chrono::milliseconds(1000);
  TurnHarness h(Reads(), WithModel(model, options));
  // The model takes two seconds of the turn's clock to write.
  model.OnCall([&h] { h.clock.Advance(std::chrono::seconds(2)); });
  RecordingSink sink;
  ASSERT_TRUE(h.Turn("what ran today?", sink).ok());
  EXPECT_THAT(sink.ErrorCodes(), ElementsAre(pb::CHAT_ERROR_CODE_TIME_LIMIT));
  EXPECT_TRUE(sink.Of(pb::ChatEvent::kToolCall).empty());
  const std::vector<convpb::Message> stored = h.memory.Messages(ConversationOf(sink));
  ASSERT_EQ(stored.size(), 2u);
  EXPECT_THAT(stored[1].content(), HasSubstr("Here is what I found so far"));
  EXPECT_THAT(KindsFiled(h), Contains("time_limit"));
}

TEST(TurnGuardrailTest, TheClientsDeadlineBoundsTheTurnBeforeItsOwnTimeout) {
  TurnHarness h(Reads());
  h.understanding.OnCall([&h] { h.clock.Advance(std::chrono::seconds(2)); });
  TurnControl control;
  RecordingSink sink;
  const core::TimePoint client_deadline = h.clock.Now() + std::chrono::seconds(1);
  ASSERT_TRUE(
      h.runner->Run(kAlice, TurnHarness::Request("list my agents"), control, sink, client_deadline)
          .ok());
  EXPECT_THAT(sink.ErrorCodes(), ElementsAre(pb::CHAT_ERROR_CODE_TIME_LIMIT));
  EXPECT_TRUE(sink.Of(pb::ChatEvent::kToolCall).empty());
}

TEST(TurnGuardrailTest, AtMostTwoClarifyingQuestionsInARowThenTheTurnProceeds) {
  TurnHarness h(FakeUnderstanding::Always(intentpb::ACTION_TYPE_UNKNOWN));
  RecordingSink first;
  ASSERT_TRUE(h.Turn("asdf qwerty zxcv", first).ok());
  const std::string conversation = ConversationOf(first);
  EXPECT_FALSE(first.events.back().done().is_final());
  EXPECT_TRUE(first.Of(pb::ChatEvent::kToolCall).empty());
  RecordingSink second;
  ASSERT_TRUE(h.Turn("asdf qwerty zxcv", second, conversation).ok());
  EXPECT_FALSE(second.events.back().done().is_final());
  EXPECT_TRUE(second.Of(pb::ChatEvent::kToolCall).empty());
  RecordingSink third;
  ASSERT_TRUE(h.Turn("asdf qwerty zxcv", third, conversation).ok());
  EXPECT_TRUE(third.events.back().done().is_final()) << third.Text();
  EXPECT_FALSE(third.Of(pb::ChatEvent::kToolCall).empty()) << "the third turn proceeds";
}

TEST(TurnGuardrailTest, WithOneClarificationAllowedTheSecondTurnProceeds) {
  TurnOptions options;
  options.max_clarifications = 1;
  TurnHarness h(FakeUnderstanding::Always(intentpb::ACTION_TYPE_UNKNOWN), {options});
  RecordingSink first;
  ASSERT_TRUE(h.Turn("asdf qwerty zxcv", first).ok());
  EXPECT_FALSE(first.events.back().done().is_final());
  RecordingSink second;
  ASSERT_TRUE(h.Turn("asdf qwerty zxcv", second, ConversationOf(first)).ok());
  EXPECT_TRUE(second.events.back().done().is_final()) << second.Text();
}

TEST(TurnGuardrailTest, TheModelsQuestionsStopAtTheCapAndAnswersContinueTheFlow) {
  ScriptedModel model;
  for (int i = 0; i < 3; ++i) model.PushText("Which report do you mean?");
  TurnHarness h(Reads(), WithModel(model));
  RecordingSink first;
  ASSERT_TRUE(h.Turn("show me the report", first).ok());
  EXPECT_FALSE(first.events.back().done().is_final());
  const std::string conversation = ConversationOf(first);
  const size_t analyses = h.understanding.requests().size();
  RecordingSink second;
  ASSERT_TRUE(h.Turn("the usual one", second, conversation).ok());
  EXPECT_FALSE(second.events.back().done().is_final());
  EXPECT_EQ(second.events.front().session().flow_id(), first.events.front().session().flow_id());
  // The intent service reads the answer, told the model's question waits
  // for it; the flow goes on with it.
  ASSERT_EQ(h.understanding.requests().size(), analyses + 1);
  EXPECT_EQ(h.understanding.requests().back().pending().question().kind(),
            intentpb::QUESTION_KIND_OPEN);
  RecordingSink third;
  ASSERT_TRUE(h.Turn("you know, that one", third, conversation).ok());
  ASSERT_EQ(model.requests().size(), 3u);
  EXPECT_THAT(model.requests()[2].messages.at(0).content,
              HasSubstr("Do not ask a clarifying question now (2 asked in a row, at most 2)"));
  EXPECT_TRUE(third.events.back().done().is_final()) << "a third question does not hold the flow";
  EXPECT_EQ(h.LastFlow(conversation).clarifications, 0);
}

TEST(TurnGuardrailTest, WhenTheModelFailsOnAnAnswerTheTurnProceedsInsteadOfAsking) {
  ScriptedModel model;
  model.PushText("Do you mean the active agents or all of them?");
  TurnHarness h(Reads(), WithModel(model));
  RecordingSink ask;
  ASSERT_TRUE(h.Turn("list my agents", ask).ok());
  EXPECT_FALSE(ask.events.back().done().is_final());
  // Nothing more is scripted: the model fails on the answer.
  RecordingSink answer;
  ASSERT_TRUE(h.Turn("hmm", answer, ConversationOf(ask)).ok());
  EXPECT_THAT(answer.ErrorCodes(), ElementsAre(pb::CHAT_ERROR_CODE_MODEL_FAILED));
  EXPECT_TRUE(answer.events.back().done().is_final()) << answer.Text();
  ASSERT_EQ(answer.Of(pb::ChatEvent::kToolCall).size(), 1u);
  EXPECT_EQ(answer.Of(pb::ChatEvent::kToolCall)[0].tool_call().tool_name(), "list_agents");
}

TEST(TurnCancelTest, ACancelWhileUnderstandingRunsNoToolAndKeepsTheReply) {
  TurnHarness h(Reads());
  TurnControl control;
  h.understanding.OnCall([&control] { control.Cancel(); });
  RecordingSink sink;
  ASSERT_TRUE(h.runner->Run(kAlice, TurnHarness::Request("list my agents"), control, sink).ok());
  EXPECT_THAT(sink.ErrorCodes(), ElementsAre(pb::CHAT_ERROR_CODE_CANCELLED));
  EXPECT_TRUE(sink.Of(pb::ChatEvent::kToolCall).empty());
  EXPECT_TRUE(h.errors.errors().empty()) << "a cancel is not a failure";
  EXPECT_TRUE(sink.events.back().has_done());
}

TEST(TurnCancelTest, ACancelDuringAToolLetsItFinishAndRunsNoOther) {
  ScriptedModel model;
  model.PushToolCalls({{"list_runs", json{{"page", 1}}}, {"list_runs", json{{"page", 2}}}});
  model.PushText("never asked");
  TurnHarness h(Reads(), WithModel(model));
  TurnControl control;
  h.tools.OnCall([&control](const execpb::InvokeToolRequest& call) {
    if (call.tool_name() == "list_runs") control.Cancel();
  });
  RecordingSink sink;
  ASSERT_TRUE(h.runner->Run(kAlice, TurnHarness::Request("show the runs"), control, sink).ok());
  EXPECT_EQ(h.tools.CallsOf("list_runs").size(), 1u);
  EXPECT_THAT(sink.ErrorCodes(), ElementsAre(pb::CHAT_ERROR_CODE_CANCELLED));
  EXPECT_EQ(model.requests().size(), 1u) << "the model is not asked again";
  EXPECT_TRUE(h.errors.errors().empty());
  EXPECT_TRUE(sink.events.back().has_done());
}

TEST(TurnCancelTest, ACancelWhileTheModelWritesRunsNothingAndDoesNotFallBack) {
  ScriptedModel model;
  model.PushToolCall("list_runs", json::object());
  TurnHarness h(Reads(), WithModel(model));
  TurnControl control;
  model.OnCall([&control] { control.Cancel(); });
  RecordingSink sink;
  ASSERT_TRUE(h.runner->Run(kAlice, TurnHarness::Request("what ran?"), control, sink).ok());
  EXPECT_THAT(sink.ErrorCodes(), ElementsAre(pb::CHAT_ERROR_CODE_CANCELLED));
  EXPECT_TRUE(sink.Of(pb::ChatEvent::kToolCall).empty());
  EXPECT_TRUE(h.tools.CallsOf("list_runs").empty());
  EXPECT_EQ(model.requests().size(), 1u);
  EXPECT_TRUE(h.errors.errors().empty());
}

// A newer message suspends the flow during its first tool; the message
// learns what was set aside, and "continue" takes the flow up again.
TEST(TurnSuspendTest, ANewerMessageDuringAToolSuspendsTheFlowWhichContinueResumes) {
  ScriptedModel model;
  model.PushText("Hello.");
  model.PushToolCalls({{"list_runs", json{{"page", 1}}}, {"list_runs", json{{"page", 2}}}});
  TurnHarness h(Reads(), WithModel(model));
  // The first turn only opens the conversation.
  RecordingSink hello;
  ASSERT_TRUE(h.Turn("hello", hello).ok());
  const std::string conversation = ConversationOf(hello);
  ASSERT_EQ(model.requests().size(), 1u);

  auto running = std::make_shared<TurnControl>();
  h.tools.OnCall([&running](const execpb::InvokeToolRequest& call) {
    if (call.tool_name() == "list_runs") running->RequestSuspend();
  });
  RecordingSink suspended;
  ASSERT_TRUE(h.runner
                  ->Run(kAlice, TurnHarness::Request("show all the runs", conversation), *running,
                        suspended)
                  .ok());
  h.tools.OnCall(nullptr);
  EXPECT_EQ(h.tools.CallsOf("list_runs").size(), 1u) << "the second tool waits";
  EXPECT_THAT(suspended.States(), Contains(pb::AGENT_STATE_SUSPENDED));
  EXPECT_FALSE(suspended.events.back().done().is_final());
  const std::string flow_id = suspended.events.front().session().flow_id();
  ASSERT_TRUE(h.Flow(flow_id).has_value());
  EXPECT_EQ(h.Flow(flow_id)->status, FlowStatus::kSuspended);

  // The newer message is told which flow it set aside.
  model.PushText("It is noon.");
  TurnControl newer;
  RecordingSink aside;
  ASSERT_TRUE(h.runner
                  ->Run(kAlice, TurnHarness::Request("what time is it?", conversation), newer,
                        aside, core::TimePoint::max(), running)
                  .ok());
  EXPECT_EQ(aside.events.front().session().suspended_flow_id(), flow_id);
  EXPECT_NE(aside.events.front().session().flow_id(), flow_id);

  model.PushToolCall("list_runs", json{{"page", 2}});
  model.PushText("Both pages are read.");
  RecordingSink resumed;
  ASSERT_TRUE(h.Turn("continue", resumed, conversation).ok());
  EXPECT_EQ(resumed.events.front().session().flow_id(), flow_id);
  EXPECT_EQ(h.tools.CallsOf("list_runs").size(), 2u);
  EXPECT_THAT(resumed.Text(), HasSubstr("Both pages are read."));
  EXPECT_TRUE(resumed.events.back().done().is_final());
}

TEST(TurnSuspendTest, ANewerMessageWhileTheModelWritesSuspendsWithoutRunningItsTool) {
  ScriptedModel model;
  model.PushToolCall("list_runs", json::object());
  TurnHarness h(Reads(), WithModel(model));
  TurnControl control;
  model.OnCall([&control] { control.RequestSuspend(); });
  RecordingSink sink;
  ASSERT_TRUE(h.runner->Run(kAlice, TurnHarness::Request("what ran?"), control, sink).ok());
  EXPECT_THAT(sink.States(), Contains(pb::AGENT_STATE_SUSPENDED));
  EXPECT_TRUE(h.tools.CallsOf("list_runs").empty());
  EXPECT_THAT(sink.ErrorCodes(), Not(Contains(pb::CHAT_ERROR_CODE_MODEL_FAILED)));
  ASSERT_TRUE(control.SuspendedState().has_value());
  EXPECT_EQ(control.SuspendedState()->flow_id, sink.events.front().session().flow_id());
}

TEST(TurnRetryTest, ARetryOfAFinishedModelTurnIsReplayedWithoutAskingTheModel) {
  ScriptedModel model;
  model.PushToolCall("list_runs", json::object());
  model.PushText("Two runs today.");
  TurnHarness h(Reads(), WithModel(model));
  RecordingSink first;
  ASSERT_TRUE(h.Turn("what ran today?", first, "", "turn-7").ok());
  const size_t asked = model.requests().size();
  RecordingSink again;
  ASSERT_TRUE(h.Turn("what ran today?", again, ConversationOf(first), "turn-7").ok());
  EXPECT_TRUE(again.events.front().session().replayed());
  EXPECT_EQ(again.Text(), first.Text());
  EXPECT_EQ(model.requests().size(), asked);
  EXPECT_EQ(h.tools.CallsOf("list_runs").size(), 1u);
  EXPECT_EQ(h.memory.Messages(ConversationOf(first)).size(), 2u);
}

// The first attempt stored the user's message, then lost its storage
// while the model wrote, before the reply: the retry runs the turn (it did
// not finish), with the user's message stored once.
TEST(TurnRetryTest, ARetryOfATurnThatNeverFinishedRunsItWithTheMessageStoredOnce) {
  ScriptedModel model;
  model.PushText("Hello.");
  model.PushText("Lost words.");
  model.PushText("You have no agents yet.");
  TurnHarness h(Reads(), WithModel(model));
  RecordingSink opened;
  ASSERT_TRUE(h.Turn("hello", opened).ok());
  const std::string conversation = ConversationOf(opened);
  model.OnCall([&h] { h.memory.SetUnreachable(true); });
  RecordingSink lost;
  ASSERT_TRUE(h.Turn("list my agents", lost, conversation, "turn-9").ok());
  h.memory.SetUnreachable(false);
  model.OnCall(nullptr);
  ASSERT_EQ(h.memory.Messages(conversation).size(), 3u) << "the reply was not stored";

  RecordingSink retried;
  ASSERT_TRUE(h.Turn("list my agents", retried, conversation, "turn-9").ok());
  EXPECT_FALSE(retried.events.front().session().replayed());
  EXPECT_THAT(retried.Text(), HasSubstr("You have no agents yet."));
  const std::vector<convpb::Message> stored = h.memory.Messages(conversation);
  ASSERT_EQ(stored.size(), 4u);
  EXPECT_EQ(stored[2].content(), "list my agents");
  EXPECT_EQ(stored[3].role(), convpb::ROLE_ASSISTANT);
  EXPECT_EQ(stored[3].content(), "You have no agents yet.");
  EXPECT_EQ(stored[3].id(), retried.events.back().done().assistant_message_id());
}

}  // namespace
}  // namespace omniforge::orchestrator
