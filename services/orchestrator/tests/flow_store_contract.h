// What every FlowStore promises (flow_store.h), as typed tests a store's own
// test instantiates with its backend:
//
//   struct Backend {
//     static void SetUpTestSuite();     // e.g. a database
//     static void TearDownTestSuite();
//     static std::unique_ptr<FlowStore> Make();
//   };
//   INSTANTIATE_TYPED_TEST_SUITE_P(Memory, FlowStoreContractTest, Backend);
//
// Each test uses a tenant and flows of its own, so a backend may share its
// storage between tests.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "libs/core/call.h"
#include "libs/core/clock.h"
#include "libs/core/ids.h"
#include "services/orchestrator/flow/flow_store.h"

namespace omniforge::orchestrator {

template <typename Backend>
class FlowStoreContractTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { Backend::SetUpTestSuite(); }
  static void TearDownTestSuite() { Backend::TearDownTestSuite(); }

  void SetUp() override {
    store_ = Backend::Make();
    ASSERT_NE(store_, nullptr);
    alice_ = {"tenant-" + core::NewUuid().substr(24), "alice"};  // the random tail
    bob_ = {alice_.tenant_id, "bob"};
  }

  core::Call CallOf(const core::Identity& who) const {
    return core::Call{who, core::SystemClock().Now() + std::chrono::seconds(10)};
  }

  // A flow that waits for Alice's approval of one action.
  FlowState Waiting() const {
    FlowState state;
    state.flow_id = "flow-" + core::NewUuid();
    state.conversation_id = core::NewUuid();
    state.turn_id = "turn-1";
    state.status = FlowStatus::kWaiting;
    state.goal = "chase late invoices";
    state.action_type = ::omniforge::intent::v1::ACTION_TYPE_CREATE_AGENT;
    state.entities = {{"agent_name", "invoice-chaser"}};
    state.listed_agents = {"weekly-digest"};
    PendingAction action;
    action.action_id = "action-1";
    action.tool = "create_agent";
    action.arguments = {{"name", "invoice-chaser"}};
    action.digest = "sha256:abc";
    action.expires_at_micros = 1'700'000'000'000'000;
    action.risk = ::omniforge::executor::v1::TOOL_RISK_HIGH;
    action.risk_reasons = {"invites 2 people besides you (rule: attendees)"};
    state.pending = {action};
    state.clarifications = 1;
    state.asked = "agent";
    state.plan = PlanRef{"plan-1", "pending_review", "ship it", "sha256:plan", 42};
    state.suspended_flow = SuspendedFlow{"flow-0", "an earlier goal"};
    state.tools_used = {"list_agents"};
    state.box.goal = state.goal;
    state.box.progress = {"drafted create_agent"};
    return state;
  }

  std::unique_ptr<FlowStore> store_;
  core::Identity alice_;
  core::Identity bob_;
};

TYPED_TEST_SUITE_P(FlowStoreContractTest);

TYPED_TEST_P(FlowStoreContractTest, AFlowWithoutAStateIsNotFound) {
  const absl::StatusOr<FlowState> loaded =
      this->store_->Load(this->CallOf(this->alice_), "flow-" + core::NewUuid());
  EXPECT_TRUE(absl::IsNotFound(loaded.status())) << loaded.status();
}

TYPED_TEST_P(FlowStoreContractTest, ASavedStateLoadsWholeWithItsFirstRevision) {
  const FlowState state = this->Waiting();
  ASSERT_TRUE(this->store_->Save(this->CallOf(this->alice_), state, 0).ok());
  const absl::StatusOr<FlowState> loaded =
      this->store_->Load(this->CallOf(this->alice_), state.flow_id);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->revision, 1);
  EXPECT_EQ(loaded->flow_id, state.flow_id);
  EXPECT_EQ(loaded->conversation_id, state.conversation_id);
  EXPECT_EQ(loaded->turn_id, "turn-1");
  EXPECT_EQ(loaded->status, FlowStatus::kWaiting);
  EXPECT_EQ(loaded->goal, state.goal);
  EXPECT_EQ(loaded->action_type, state.action_type);
  EXPECT_EQ(loaded->entities, state.entities);
  EXPECT_EQ(loaded->listed_agents, state.listed_agents);
  ASSERT_EQ(loaded->pending.size(), 1u);
  EXPECT_EQ(loaded->pending[0].action_id, "action-1");
  EXPECT_EQ(loaded->pending[0].arguments, state.pending[0].arguments);
  EXPECT_EQ(loaded->pending[0].digest, "sha256:abc");
  EXPECT_EQ(loaded->pending[0].expires_at_micros, 1'700'000'000'000'000);
  // Raised by its arguments: still HIGH, and why, when the user answers.
  EXPECT_EQ(loaded->pending[0].risk, ::omniforge::executor::v1::TOOL_RISK_HIGH);
  EXPECT_EQ(loaded->pending[0].risk_reasons, state.pending[0].risk_reasons);
  EXPECT_EQ(loaded->clarifications, 1);
  EXPECT_EQ(loaded->asked, "agent");
  ASSERT_TRUE(loaded->plan.has_value());
  EXPECT_EQ(loaded->plan->digest, "sha256:plan");
  EXPECT_EQ(loaded->plan->expires_at_micros, 42);
  ASSERT_TRUE(loaded->suspended_flow.has_value());
  EXPECT_EQ(loaded->suspended_flow->flow_id, "flow-0");
  EXPECT_EQ(loaded->tools_used, state.tools_used);
  EXPECT_EQ(loaded->box.goal, state.goal);
  EXPECT_EQ(loaded->box.progress, state.box.progress);
}

TYPED_TEST_P(FlowStoreContractTest, EachSaveReplacesTheRevisionItReadAndNoOther) {
  FlowState state = this->Waiting();
  const core::Call call = this->CallOf(this->alice_);
  ASSERT_TRUE(this->store_->Save(call, state, 0).ok());
  state.turn_id = "turn-2";
  state.status = FlowStatus::kDone;
  state.pending.clear();
  ASSERT_TRUE(this->store_->Save(call, state, 1).ok());

  // Two turns read revision 2: the first to save wins, the second writes
  // nothing.
  FlowState first = state;
  first.turn_id = "turn-3";
  FlowState second = state;
  second.turn_id = "turn-3b";
  second.status = FlowStatus::kSuspended;
  ASSERT_TRUE(this->store_->Save(call, first, 2).ok());
  const absl::Status late = this->store_->Save(call, second, 2);
  EXPECT_TRUE(absl::IsAborted(late)) << late;
  // A new flow's first save finds a state already there.
  EXPECT_TRUE(absl::IsAborted(this->store_->Save(call, second, 0)));
  // A revision from the future is not one that was read.
  EXPECT_TRUE(absl::IsAborted(this->store_->Save(call, second, 9)));

  const absl::StatusOr<FlowState> loaded = this->store_->Load(call, state.flow_id);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->revision, 3);
  EXPECT_EQ(loaded->turn_id, "turn-3");
  EXPECT_EQ(loaded->status, FlowStatus::kDone);
  EXPECT_TRUE(loaded->pending.empty());

  // A flow never saved has nothing to replace but revision 0.
  FlowState fresh = this->Waiting();
  EXPECT_TRUE(absl::IsAborted(this->store_->Save(call, fresh, 1)));
  EXPECT_TRUE(absl::IsNotFound(this->store_->Load(call, fresh.flow_id).status()));
}

TYPED_TEST_P(FlowStoreContractTest, AnotherUsersFlowIsNeitherReadNorTakenOver) {
  const FlowState state = this->Waiting();
  ASSERT_TRUE(this->store_->Save(this->CallOf(this->alice_), state, 0).ok());
  EXPECT_TRUE(
      absl::IsNotFound(this->store_->Load(this->CallOf(this->bob_), state.flow_id).status()));
  FlowState taken = state;
  taken.goal = "bob's goal";
  EXPECT_TRUE(absl::IsAborted(this->store_->Save(this->CallOf(this->bob_), taken, 0)));
  EXPECT_TRUE(absl::IsAborted(this->store_->Save(this->CallOf(this->bob_), taken, 1)));
  const core::Identity elsewhere{"tenant-" + core::NewUuid().substr(24), "alice"};
  EXPECT_TRUE(
      absl::IsNotFound(this->store_->Load(this->CallOf(elsewhere), state.flow_id).status()));

  const absl::StatusOr<FlowState> loaded =
      this->store_->Load(this->CallOf(this->alice_), state.flow_id);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->goal, state.goal);
  EXPECT_EQ(loaded->revision, 1);
}

// A deleted conversation's flows go, the caller's only: another user's flow
// of the same conversation id and the caller's other conversations stay.
TYPED_TEST_P(FlowStoreContractTest, ForgettingAConversationRemovesOnlyTheCallersFlowsOfIt) {
  const core::Call alice = this->CallOf(this->alice_);
  const FlowState first = this->Waiting();
  FlowState second = this->Waiting();
  second.conversation_id = first.conversation_id;
  const FlowState other_conversation = this->Waiting();
  FlowState bobs = this->Waiting();
  bobs.conversation_id = first.conversation_id;
  ASSERT_TRUE(this->store_->Save(alice, first, 0).ok());
  ASSERT_TRUE(this->store_->Save(alice, second, 0).ok());
  ASSERT_TRUE(this->store_->Save(alice, other_conversation, 0).ok());
  ASSERT_TRUE(this->store_->Save(this->CallOf(this->bob_), bobs, 0).ok());

  const absl::StatusOr<int> forgotten = this->store_->Forget(alice, first.conversation_id);
  ASSERT_TRUE(forgotten.ok()) << forgotten.status();
  EXPECT_EQ(*forgotten, 2);
  EXPECT_TRUE(absl::IsNotFound(this->store_->Load(alice, first.flow_id).status()));
  EXPECT_TRUE(absl::IsNotFound(this->store_->Load(alice, second.flow_id).status()));
  EXPECT_TRUE(this->store_->Load(alice, other_conversation.flow_id).ok());
  EXPECT_TRUE(this->store_->Load(this->CallOf(this->bob_), bobs.flow_id).ok());
  // Nothing left to forget; a malformed id names nothing.
  EXPECT_EQ(this->store_->Forget(alice, first.conversation_id).value_or(-1), 0);
  EXPECT_EQ(this->store_->Forget(alice, "not-a-uuid").value_or(-1), 0);
}

REGISTER_TYPED_TEST_SUITE_P(FlowStoreContractTest, AFlowWithoutAStateIsNotFound,
                            ASavedStateLoadsWholeWithItsFirstRevision,
                            EachSaveReplacesTheRevisionItReadAndNoOther,
                            AnotherUsersFlowIsNeitherReadNorTakenOver,
                            ForgettingAConversationRemovesOnlyTheCallersFlowsOfIt);

}  // namespace omniforge::orchestrator
