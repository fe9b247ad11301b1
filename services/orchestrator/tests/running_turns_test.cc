#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "libs/core/clock.h"
#include "services/orchestrator/api/chat_service.h"

namespace omniforge::orchestrator {
namespace {

// The other replicas, played by the test: what this replica publishes is
// kept, and the test says what it hears.
class TestBus final : public TurnBus {
 public:
  void Publish(const TurnSignal& signal) override { published.push_back(signal); }
  void Subscribe(std::function<void(const TurnSignal&)> on_signal) override {
    on_signal_ = std::move(on_signal);
  }
  void Hear(const TurnSignal& signal) { on_signal_(signal); }

  std::vector<TurnSignal> published;

 private:
  std::function<void(const TurnSignal&)> on_signal_;
};

TurnSignal Ended(const std::string& turn_id, const std::string& flow_id) {
  return {TurnSignal::Kind::kEnded, "conversation", turn_id, flow_id};
}

// What the stand-in says was set aside, waiting at most a moment.
std::optional<std::string> SetAside(RunningTurns::Control& control) {
  const std::optional<SuspendedFlow> flow =
      control->AwaitSuspension(core::TimePointFromMicros(core::NowMicros() + 20'000));
  if (!flow) return std::nullopt;
  return flow->flow_id;
}

class RunningTurnsTest : public ::testing::Test {
 protected:
  // A newer message here, while another replica runs `remote_turn`.
  RunningTurns::Control AskWhileRunningElsewhere(const std::string& remote_turn) {
    bus_.Hear({TurnSignal::Kind::kStarted, "conversation", remote_turn});
    return running_.Suspend("conversation", "new-turn");
  }

  TestBus bus_;
  RunningTurns running_{&bus_};
};

TEST_F(RunningTurnsTest, ATurnOnAnotherReplicaIsAskedAndItsEndSaysWhatItSetAside) {
  RunningTurns::Control stand_in = AskWhileRunningElsewhere("remote-turn");
  ASSERT_NE(stand_in, nullptr) << "a turn known to run elsewhere is waited for";
  ASSERT_EQ(bus_.published.size(), 1u);
  EXPECT_EQ(bus_.published[0].kind, TurnSignal::Kind::kSuspend);
  EXPECT_EQ(bus_.published[0].turn_id, "new-turn");

  bus_.Hear(Ended("remote-turn", "its-flow"));
  EXPECT_EQ(SetAside(stand_in), "its-flow");
  EXPECT_TRUE(stand_in->ended_elsewhere()) << "the turn that goes on reads the flow from the store";
}

TEST_F(RunningTurnsTest, ATurnEndedHereNamesTheFlowItSetAsideByItsIdOnly) {
  auto control = std::make_shared<TurnControl>();
  running_.Add("conversation", "turn-1", control);
  SuspendedFlow flow;
  flow.flow_id = "flow-1";
  flow.goal = "close the merger";
  control->Ended(flow);
  running_.Remove("conversation", "turn-1");
  ASSERT_EQ(bus_.published.size(), 2u);
  EXPECT_EQ(bus_.published[1].kind, TurnSignal::Kind::kEnded);
  EXPECT_EQ(bus_.published[1].turn_id, "turn-1");
  EXPECT_EQ(bus_.published[1].set_aside_flow_id, "flow-1");
  EXPECT_FALSE(control->ended_elsewhere());

  running_.Add("conversation", "turn-2", std::make_shared<TurnControl>());
  running_.Remove("conversation", "turn-2");  // ended without suspending
  ASSERT_EQ(bus_.published.size(), 4u);
  EXPECT_EQ(bus_.published[3].set_aside_flow_id, "");
}

TEST_F(RunningTurnsTest, TheEndOfATurnThatWasNotAskedLeavesTheStandInWaiting) {
  RunningTurns::Control stand_in = AskWhileRunningElsewhere("remote-turn");
  ASSERT_NE(stand_in, nullptr);

  // A late end of another turn of the conversation (its start never heard
  // here) says nothing of what the asked turn set aside.
  bus_.Hear(Ended("an-older-turn", "older-flow"));
  EXPECT_EQ(SetAside(stand_in), std::nullopt) << "still waiting for the turn it asked";

  bus_.Hear(Ended("remote-turn", "its-flow"));
  EXPECT_EQ(SetAside(stand_in), "its-flow");
}

TEST_F(RunningTurnsTest, WithNoTurnKnownElsewhereTheTurnsAreAskedButNoneIsWaitedFor) {
  bus_.Hear({TurnSignal::Kind::kStarted, "conversation", "remote-turn"});
  bus_.Hear(Ended("remote-turn", ""));

  EXPECT_EQ(running_.Suspend("conversation", "new-turn"), nullptr);
  ASSERT_EQ(bus_.published.size(), 1u) << "one that began a moment ago is asked all the same";
  EXPECT_EQ(bus_.published[0].kind, TurnSignal::Kind::kSuspend);
}

TEST_F(RunningTurnsTest, ATurnIdIsClaimedOnceWhileItsTurnRunsHereOrElsewhere) {
  auto first = std::make_shared<TurnControl>();
  ASSERT_TRUE(running_.Claim("conversation", "turn-1", first));
  ASSERT_EQ(bus_.published.size(), 1u);
  EXPECT_EQ(bus_.published[0].kind, TurnSignal::Kind::kStarted) << "the other replicas learn of it";
  EXPECT_FALSE(running_.Claim("conversation", "turn-1", std::make_shared<TurnControl>()));
  EXPECT_TRUE(running_.Claim("conversation", "turn-2", std::make_shared<TurnControl>()));
  EXPECT_TRUE(running_.Claim("another-conversation", "turn-1", std::make_shared<TurnControl>()));
  // A claimed turn is running: a newer message suspends it, cancel reaches it.
  EXPECT_NE(running_.Suspend("conversation", "turn-3"), nullptr);
  EXPECT_TRUE(first->suspend_requested());
  running_.Remove("conversation", "turn-1");
  EXPECT_TRUE(running_.Claim("conversation", "turn-1", std::make_shared<TurnControl>()))
      << "once it ended, the turn id may run again (and is replayed)";

  // A turn another replica announced cannot be claimed here until it ends.
  bus_.Hear({TurnSignal::Kind::kStarted, "conversation", "remote-turn"});
  EXPECT_FALSE(running_.Claim("conversation", "remote-turn", std::make_shared<TurnControl>()));
  bus_.Hear(Ended("remote-turn", ""));
  EXPECT_TRUE(running_.Claim("conversation", "remote-turn", std::make_shared<TurnControl>()));
}

}  // namespace
}  // namespace omniforge::orchestrator
