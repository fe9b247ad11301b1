// Turns reached across replicas without PostgreSQL: two replicas' running
// turns (RunningTurns) joined by an in-process bus (testing/
// in_process_turn_bus.h), one TurnRunner on fakes. A CancelTurn or a newer
// message on one replica reaches the turn the other runs, at the moment a
// fake's hook names; the bus is settled instead of slept on. The bus names
// the flow set aside by its id only: the newer turn reads the rest from the
// flow store the replicas share.
#include "services/orchestrator/api/chat_service.h"
#include "services/orchestrator/testing/in_process_turn_bus.h"
#include "services/orchestrator/testing/turn_test_names.h"

namespace omniforge::orchestrator {
namespace {

using testing::InProcessTurnBus;

class TurnReplicasTest : public ::testing::Test {
 protected:
  TurnReplicasTest()
      : h_(FakeUnderstanding::Always(intentpb::ACTION_TYPE_QUERY_INFO), {{}, &model_}) {}

  // Opens a conversation; the next turn there reads two pages of runs.
  std::string Open() {
    model_.PushText("Hello.");
    model_.PushToolCalls({{"list_runs", json{{"page", 1}}}, {"list_runs", json{{"page", 2}}}});
    RecordingSink hello;
    EXPECT_TRUE(h_.Turn("hello", hello).ok());
    return ConversationOf(hello);
  }

  // Runs `turn_id` on replica A, registered there as the chat service does.
  RecordingSink RunOnA(const std::string& conversation, const std::string& turn_id,
                       const std::shared_ptr<TurnControl>& control) {
    const std::string key = RunningTurns::Key(kAlice, conversation);
    replica_a_.Add(key, turn_id, control);
    bus_.Settle();
    RecordingSink sink;
    EXPECT_TRUE(h_.runner
                    ->Run(kAlice, TurnHarness::Request("show all the runs", conversation, turn_id),
                          *control, sink)
                    .ok());
    replica_a_.Remove(key, turn_id);
    bus_.Settle();
    return sink;
  }

  // Asks the time as turn-2 on replica B, after the turn `stand_in` stands
  // for (one that ran on replica A); the model answers "It is noon."
  RecordingSink AskTheTimeAfter(const std::string& conversation,
                                const std::shared_ptr<TurnControl>& stand_in) {
    model_.PushText("It is noon.");
    TurnControl newer;
    RecordingSink sink;
    EXPECT_TRUE(h_.runner
                    ->Run(kAlice, TurnHarness::Request("what time is it?", conversation, "turn-2"),
                          newer, sink, core::TimePoint::max(), stand_in)
                    .ok());
    return sink;
  }

  ScriptedModel model_;
  TurnHarness h_;
  InProcessTurnBus bus_;
  std::unique_ptr<TurnBus> end_a_ = bus_.Join();
  std::unique_ptr<TurnBus> end_b_ = bus_.Join();
  RunningTurns replica_a_{end_a_.get()};
  RunningTurns replica_b_{end_b_.get()};
};

TEST_F(TurnReplicasTest, ACancelOnAnotherReplicaStopsTheTurnDuringItsTool) {
  const std::string conversation = Open();
  const std::string key = RunningTurns::Key(kAlice, conversation);
  const core::Identity stranger{"tenant-b", "alice"};
  h_.tools.OnCall([&](const execpb::InvokeToolRequest& call) {
    if (call.tool_name() != "list_runs") return;
    // Another tenant's user of the same name reaches nothing.
    EXPECT_FALSE(replica_b_.Cancel(RunningTurns::Key(stranger, conversation), ""));
    // A retry of the running turn on the other replica may not run it again.
    EXPECT_FALSE(replica_b_.Claim(key, "turn-1", std::make_shared<TurnControl>()));
    EXPECT_TRUE(replica_b_.Cancel(key, ""));
    bus_.Settle();
  });
  auto control = std::make_shared<TurnControl>();
  RecordingSink sink = RunOnA(conversation, "turn-1", control);
  EXPECT_TRUE(control->cancelled());
  EXPECT_EQ(h_.tools.CallsOf("list_runs").size(), 1u) << "the second page is not read";
  EXPECT_THAT(sink.ErrorCodes(), ElementsAre(pb::CHAT_ERROR_CODE_CANCELLED));
  EXPECT_TRUE(sink.events.back().has_done());
  // Once it ended, there is nothing left to cancel, and its retry may run.
  EXPECT_FALSE(replica_b_.Cancel(key, ""));
  EXPECT_TRUE(replica_b_.Claim(key, "turn-1", std::make_shared<TurnControl>()));
}

TEST_F(TurnReplicasTest, ANewerMessageOnAnotherReplicaSuspendsTheFlowItThenResumes) {
  const std::string conversation = Open();
  const std::string key = RunningTurns::Key(kAlice, conversation);
  RunningTurns::Control stand_in;
  h_.tools.OnCall([&](const execpb::InvokeToolRequest& call) {
    if (call.tool_name() != "list_runs" || stand_in != nullptr) return;
    stand_in = replica_b_.Suspend(key, "turn-2");
    bus_.Settle();
  });
  auto control = std::make_shared<TurnControl>();
  RecordingSink suspended = RunOnA(conversation, "turn-1", control);
  h_.tools.OnCall(nullptr);
  ASSERT_NE(stand_in, nullptr) << "the turn on replica A is waited for";
  EXPECT_THAT(suspended.States(), Contains(pb::AGENT_STATE_SUSPENDED));
  EXPECT_EQ(h_.tools.CallsOf("list_runs").size(), 1u);
  const std::string flow_id = suspended.events.front().session().flow_id();

  // Replica B learns from the bus which flow replica A set aside, by its id
  // alone; the newer turn reads what it was about from the flow store.
  ASSERT_TRUE(stand_in->SuspendedState().has_value());
  EXPECT_EQ(stand_in->SuspendedState()->flow_id, flow_id);
  EXPECT_EQ(stand_in->SuspendedState()->goal, "") << "no word of it crosses the bus";
  EXPECT_TRUE(stand_in->ended_elsewhere());
  const RecordingSink aside = AskTheTimeAfter(conversation, stand_in);
  ASSERT_FALSE(aside.events.empty());
  EXPECT_EQ(aside.events.front().session().suspended_flow_id(), flow_id);
  EXPECT_EQ(h_.understanding.requests().back().pending().resumable_goal(), "show all the runs")
      << "the intent service hears what was set aside, read from the store";
  EXPECT_TRUE(h_.errors.errors().empty());

  model_.PushToolCall("list_runs", json{{"page", 2}});
  model_.PushText("Both pages are read.");
  RecordingSink resumed;
  ASSERT_TRUE(h_.Turn("continue", resumed, conversation).ok());
  EXPECT_EQ(resumed.events.front().session().flow_id(), flow_id);
  EXPECT_EQ(h_.tools.CallsOf("list_runs").size(), 2u);
  EXPECT_TRUE(resumed.events.back().done().is_final());
  const std::optional<FlowState> state = h_.Flow(flow_id);
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->goal, "show all the runs") << "resumed with its own goal";
  EXPECT_THAT(state->box.progress, Contains("resumed after an interruption"));
}

TEST_F(TurnReplicasTest, AFlowSetAsideElsewhereThatTheStoreLacksLeavesNothingSetAside) {
  const std::string conversation = Open();
  // The other replica's turn ended suspended, but its flow never reached
  // the store (its save failed).
  auto stand_in = std::make_shared<TurnControl>();
  stand_in->EndedElsewhere("0190a0a0-0000-7000-8000-000000000000");
  const RecordingSink sink = AskTheTimeAfter(conversation, stand_in);
  ASSERT_FALSE(sink.events.empty());
  EXPECT_EQ(sink.events.front().session().suspended_flow_id(), "");
  EXPECT_EQ(h_.understanding.requests().back().pending().resumable_goal(), "");
  EXPECT_THAT(sink.Text(), HasSubstr("It is noon.")) << "the turn goes on";
  ASSERT_EQ(h_.errors.errors().size(), 1u);
  EXPECT_EQ(h_.errors.errors()[0].stage, "read_flow");
}

}  // namespace
}  // namespace omniforge::orchestrator
