// What every ApprovalAudit store promises (approval_audit.h), as typed tests
// a store's own test instantiates with its backend:
//
//   struct Backend {
//     static void SetUpTestSuite();     // e.g. a database
//     static void TearDownTestSuite();
//     static std::unique_ptr<ApprovalAudit> Make();
//   };
//   INSTANTIATE_TYPED_TEST_SUITE_P(Memory, ApprovalAuditContractTest, Backend);
//
// Each test uses a tenant and conversation of its own, so a backend may
// share its storage between tests.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "libs/core/clock.h"
#include "libs/core/ids.h"
#include "services/orchestrator/approvals/approval_audit.h"

namespace omniforge::orchestrator {

namespace audit_testing {

namespace execpb = ::omniforge::executor::v1;
namespace pb = ::omniforge::orchestrator::v1;

// Each decision's action_id, in the order given.
inline std::vector<std::string> ActionIds(const std::vector<ActionDecisionRecord>& decisions) {
  std::vector<std::string> ids;
  ids.reserve(decisions.size());
  for (const ActionDecisionRecord& d : decisions) ids.push_back(d.action_id);
  return ids;
}

}  // namespace audit_testing

template <typename Backend>
class ApprovalAuditContractTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { Backend::SetUpTestSuite(); }
  static void TearDownTestSuite() { Backend::TearDownTestSuite(); }

  void SetUp() override {
    audit_ = Backend::Make();
    ASSERT_NE(audit_, nullptr);
    who_ = {"tenant-" + core::NewUuid().substr(24), "alice"};  // the random tail
    conversation_ = core::NewUuid();
  }

  // A decision of this test's user in its conversation.
  ActionDecisionRecord Decision(const std::string& action_id, int64_t decided_at_micros) const {
    ActionDecisionRecord r;
    r.tenant_id = who_.tenant_id;
    r.user_id = who_.user_id;
    r.conversation_id = conversation_;
    r.turn_id = "turn-" + action_id;
    r.action_id = action_id;
    r.digest = "sha256:" + action_id;
    r.tool = "delete_agent";
    r.summary = "Delete the agent invoice-chaser";
    r.risk = audit_testing::execpb::TOOL_RISK_HIGH;
    r.outcome = audit_testing::pb::ACTION_OUTCOME_APPROVED;
    r.decided_by = who_.user_id;
    r.via = "words";
    r.decided_at_micros = decided_at_micros;
    return r;
  }

  std::vector<ActionDecisionRecord> Listed(const core::Identity& who, int limit = 100) const {
    auto listed = audit_->List(who, conversation_, limit);
    EXPECT_TRUE(listed.ok()) << listed.status();
    return listed.ok() ? *listed : std::vector<ActionDecisionRecord>{};
  }

  std::unique_ptr<ApprovalAudit> audit_;
  core::Identity who_;
  std::string conversation_;
};

TYPED_TEST_SUITE_P(ApprovalAuditContractTest);

TYPED_TEST_P(ApprovalAuditContractTest, ListsNewestFirstAtMostLimit) {
  // Recorded out of order: the time decides, not the order of recording.
  for (int64_t at : {3, 1, 5, 2, 4}) {
    ASSERT_TRUE(
        this->audit_->Record(this->Decision("a" + std::to_string(at), at * 1'000'000)).ok());
  }
  EXPECT_EQ(audit_testing::ActionIds(this->Listed(this->who_)),
            (std::vector<std::string>{"a5", "a4", "a3", "a2", "a1"}));
  EXPECT_EQ(audit_testing::ActionIds(this->Listed(this->who_, 2)),
            (std::vector<std::string>{"a5", "a4"}));
  EXPECT_EQ(this->Listed(this->who_, 1).size(), 1u);
}

TYPED_TEST_P(ApprovalAuditContractTest, DecisionsOfTheSameInstantListTheLaterRecordedFirst) {
  for (const char* id : {"first", "second", "third"}) {
    ASSERT_TRUE(this->audit_->Record(this->Decision(id, 1'700'000'000'000'000)).ok());
  }
  EXPECT_EQ(audit_testing::ActionIds(this->Listed(this->who_)),
            (std::vector<std::string>{"third", "second", "first"}));
}

TYPED_TEST_P(ApprovalAuditContractTest, EveryFieldIsKept) {
  ActionDecisionRecord policy = this->Decision("plan-1", 1'700'000'000'123'456);
  policy.tool = "agent_create_plan";
  policy.summary = "Set up the spring campaign — 3 steps";
  policy.risk = audit_testing::execpb::TOOL_RISK_UNSPECIFIED;
  policy.outcome = audit_testing::pb::ACTION_OUTCOME_AUTO_APPROVED;
  policy.decided_by = "policy";
  policy.via = "policy";
  ASSERT_TRUE(this->audit_->Record(policy).ok());
  const std::vector<ActionDecisionRecord> listed = this->Listed(this->who_);
  ASSERT_EQ(listed.size(), 1u);
  const ActionDecisionRecord& got = listed[0];
  EXPECT_EQ(got.tenant_id, policy.tenant_id);
  EXPECT_EQ(got.user_id, policy.user_id);
  EXPECT_EQ(got.conversation_id, policy.conversation_id);
  EXPECT_EQ(got.turn_id, policy.turn_id);
  EXPECT_EQ(got.action_id, "plan-1");
  EXPECT_EQ(got.digest, "sha256:plan-1");
  EXPECT_EQ(got.tool, "agent_create_plan");
  EXPECT_EQ(got.summary, policy.summary);
  EXPECT_EQ(got.risk, audit_testing::execpb::TOOL_RISK_UNSPECIFIED);
  EXPECT_EQ(got.outcome, audit_testing::pb::ACTION_OUTCOME_AUTO_APPROVED);
  EXPECT_EQ(got.decided_by, "policy");
  EXPECT_EQ(got.via, "policy");
  EXPECT_EQ(got.decided_at_micros, 1'700'000'000'123'456) << "to the microsecond";

  // Every outcome and risk is kept as it was.
  for (int outcome = 1; outcome <= 7; ++outcome) {
    ActionDecisionRecord r = this->Decision("o" + std::to_string(outcome), outcome);
    r.outcome = static_cast<audit_testing::pb::ActionOutcome>(outcome);
    r.risk = static_cast<audit_testing::execpb::ToolRisk>(outcome % 4);
    r.via = outcome % 2 == 0 ? "api" : "words";
    ASSERT_TRUE(this->audit_->Record(r).ok()) << outcome;
  }
  const std::vector<ActionDecisionRecord> all = this->Listed(this->who_);
  ASSERT_EQ(all.size(), 8u);
  for (int outcome = 1; outcome <= 7; ++outcome) {
    const ActionDecisionRecord& r = all[8 - outcome];  // plan-1 is newest
    EXPECT_EQ(r.outcome, outcome) << r.action_id;
    EXPECT_EQ(r.risk, outcome % 4) << r.action_id;
    EXPECT_EQ(r.via, outcome % 2 == 0 ? "api" : "words");
  }
}

TYPED_TEST_P(ApprovalAuditContractTest, OnlyTheCallersOwnAreListed) {
  ASSERT_TRUE(this->audit_->Record(this->Decision("mine", 10)).ok());
  // The same conversation id and user id under another tenant, and another
  // user of the same tenant: neither sees it, nor adds to it.
  const core::Identity other_tenant{"other-" + this->who_.tenant_id, this->who_.user_id};
  const core::Identity other_user{this->who_.tenant_id, "bob"};
  ActionDecisionRecord theirs = this->Decision("theirs", 20);
  theirs.tenant_id = other_tenant.tenant_id;
  ASSERT_TRUE(this->audit_->Record(theirs).ok());
  ActionDecisionRecord bobs = this->Decision("bobs", 30);
  bobs.user_id = bobs.decided_by = other_user.user_id;
  ASSERT_TRUE(this->audit_->Record(bobs).ok());

  EXPECT_EQ(audit_testing::ActionIds(this->Listed(this->who_)), std::vector<std::string>{"mine"});
  EXPECT_EQ(audit_testing::ActionIds(this->Listed(other_tenant)),
            std::vector<std::string>{"theirs"});
  EXPECT_EQ(audit_testing::ActionIds(this->Listed(other_user)), std::vector<std::string>{"bobs"});
  const core::Identity stranger{"stranger-" + this->who_.tenant_id, "eve"};
  EXPECT_TRUE(this->Listed(stranger).empty());
  // Another conversation of the same user has a trail of its own.
  auto elsewhere = this->audit_->List(this->who_, core::NewUuid(), 100);
  ASSERT_TRUE(elsewhere.ok()) << elsewhere.status();
  EXPECT_TRUE(elsewhere->empty());
}

TYPED_TEST_P(ApprovalAuditContractTest, ADecisionWithoutATimeIsStampedNow) {
  const int64_t before = core::NowMicros();
  ASSERT_TRUE(this->audit_->Record(this->Decision("now", 0)).ok());
  const int64_t after = core::NowMicros();
  ASSERT_TRUE(this->audit_->Record(this->Decision("earlier", before - 1'000'000)).ok());
  const std::vector<ActionDecisionRecord> listed = this->Listed(this->who_);
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].action_id, "now");
  // The database's clock is another process's: allow it a second.
  EXPECT_GE(listed[0].decided_at_micros, before - 1'000'000);
  EXPECT_LE(listed[0].decided_at_micros, after + 1'000'000);
}

TYPED_TEST_P(ApprovalAuditContractTest, ALongSummaryIsStoredShortened) {
  ActionDecisionRecord r = this->Decision("long", 1);
  r.summary = std::string(kMaxDecisionSummaryBytes - 1, 'x') + "é and more";
  ASSERT_TRUE(this->audit_->Record(r).ok());
  const std::vector<ActionDecisionRecord> listed = this->Listed(this->who_);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].summary, std::string(kMaxDecisionSummaryBytes - 1, 'x') + "…")
      << "cut before the character that does not fit whole";
}

TYPED_TEST_P(ApprovalAuditContractTest, AnInvalidDecisionIsRefusedAndNothingIsStored) {
  using Change = void (*)(ActionDecisionRecord&);
  const std::vector<std::pair<std::string, Change>> changes = {
      {"tenant_id", [](ActionDecisionRecord& r) { r.tenant_id.clear(); }},
      {"user_id", [](ActionDecisionRecord& r) { r.user_id.clear(); }},
      {"conversation_id", [](ActionDecisionRecord& r) { r.conversation_id = "not-a-uuid"; }},
      {"action_id", [](ActionDecisionRecord& r) { r.action_id.clear(); }},
      {"outcome",
       [](ActionDecisionRecord& r) { r.outcome = audit_testing::pb::ACTION_OUTCOME_UNSPECIFIED; }},
      {"outcome",
       [](ActionDecisionRecord& r) {
         r.outcome = static_cast<audit_testing::pb::ActionOutcome>(99);
       }},
      {"risk",
       [](ActionDecisionRecord& r) { r.risk = static_cast<audit_testing::execpb::ToolRisk>(42); }},
      {"decided_by", [](ActionDecisionRecord& r) { r.decided_by.clear(); }},
      {"via", [](ActionDecisionRecord& r) { r.via = "telepathy"; }},
      {"decided_at_micros", [](ActionDecisionRecord& r) { r.decided_at_micros = -1; }},
  };
  for (const auto& [field, change] : changes) {
    ActionDecisionRecord r = this->Decision("bad", 1);
    change(r);
    const absl::Status status = this->audit_->Record(r);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << field;
    EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr(field));
  }
  EXPECT_TRUE(this->Listed(this->who_).empty());
}

TYPED_TEST_P(ApprovalAuditContractTest, AnInvalidQueryIsRefused) {
  EXPECT_EQ(this->audit_->List(this->who_, "not-a-uuid", 10).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(this->audit_->List(this->who_, this->conversation_, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(this->audit_->List(this->who_, this->conversation_, -5).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TYPED_TEST_P(ApprovalAuditContractTest, ConcurrentDecisionsAreAllKept) {
  constexpr int kThreads = 4;
  constexpr int kEach = 25;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, t] {
      for (int i = 0; i < kEach; ++i) {
        const std::string id = std::to_string(t) + "-" + std::to_string(i);
        EXPECT_TRUE(this->audit_->Record(this->Decision(id, 0)).ok()) << id;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  const std::vector<ActionDecisionRecord> listed = this->Listed(this->who_, 500);
  EXPECT_EQ(listed.size(), static_cast<size_t>(kThreads * kEach));
  for (size_t i = 1; i < listed.size(); ++i) {
    EXPECT_GE(listed[i - 1].decided_at_micros, listed[i].decided_at_micros) << i;
  }
}

REGISTER_TYPED_TEST_SUITE_P(ApprovalAuditContractTest, ListsNewestFirstAtMostLimit,
                            DecisionsOfTheSameInstantListTheLaterRecordedFirst, EveryFieldIsKept,
                            OnlyTheCallersOwnAreListed, ADecisionWithoutATimeIsStampedNow,
                            ALongSummaryIsStoredShortened,
                            AnInvalidDecisionIsRefusedAndNothingIsStored, AnInvalidQueryIsRefused,
                            ConcurrentDecisionsAreAllKept);

}  // namespace omniforge::orchestrator
