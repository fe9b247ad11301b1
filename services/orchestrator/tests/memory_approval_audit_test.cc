// The in-memory approval audit trail: the store contract
// (approval_audit_contract.h), its bound, its clock, and the conversions
// the stores and the API share.
#include "services/orchestrator/approvals/memory_approval_audit.h"

#include <gtest/gtest.h>

#include "services/orchestrator/tests/approval_audit_contract.h"

namespace omniforge::orchestrator {
namespace {

namespace execpb = ::omniforge::executor::v1;
namespace pb = ::omniforge::orchestrator::v1;

struct MemoryBackend {
  static void SetUpTestSuite() {}
  static void TearDownTestSuite() {}
  static std::unique_ptr<ApprovalAudit> Make() { return std::make_unique<MemoryApprovalAudit>(); }
};

INSTANTIATE_TYPED_TEST_SUITE_P(Memory, ApprovalAuditContractTest, MemoryBackend);

ActionDecisionRecord DecisionIn(const std::string& conversation, const std::string& action_id,
                                int64_t decided_at_micros = 0) {
  ActionDecisionRecord r;
  r.tenant_id = "acme";
  r.user_id = "alice";
  r.conversation_id = conversation;
  r.action_id = action_id;
  r.outcome = pb::ACTION_OUTCOME_REJECTED;
  r.risk = execpb::TOOL_RISK_WRITE;
  r.decided_by = "alice";
  r.via = "api";
  r.decided_at_micros = decided_at_micros;
  return r;
}

TEST(MemoryApprovalAuditTest, PastItsBoundTheOldestRecordedIsForgotten) {
  MemoryApprovalAudit audit(/*max_records=*/3);
  const std::string one = core::NewUuid(), two = core::NewUuid();
  ASSERT_TRUE(audit.Record(DecisionIn(one, "a", 50)).ok());
  ASSERT_TRUE(audit.Record(DecisionIn(two, "b", 10)).ok());
  ASSERT_TRUE(audit.Record(DecisionIn(one, "c", 20)).ok());
  ASSERT_TRUE(audit.Record(DecisionIn(two, "d", 30)).ok());
  EXPECT_EQ(audit.size(), 3u);
  // "a" was recorded first, so it goes, though its time is the latest.
  const core::Identity alice{"acme", "alice"};
  auto first = audit.List(alice, one, 10);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(audit_testing::ActionIds(*first), std::vector<std::string>{"c"});
  auto second = audit.List(alice, two, 10);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(audit_testing::ActionIds(*second), (std::vector<std::string>{"d", "b"}));

  ASSERT_TRUE(audit.Record(DecisionIn(two, "e", 40)).ok());
  ASSERT_TRUE(audit.Record(DecisionIn(two, "f", 60)).ok());
  EXPECT_EQ(audit.size(), 3u);
  first = audit.List(alice, one, 10);
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->empty()) << "a conversation whose decisions all went has none";
  second = audit.List(alice, two, 10);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(audit_testing::ActionIds(*second), (std::vector<std::string>{"f", "e", "d"}));
}

TEST(MemoryApprovalAuditTest, ADecisionWithoutATimeIsStampedByTheInjectedClock) {
  int64_t now = 1'000;
  MemoryApprovalAudit audit(10, [&now] { return now; });
  const std::string conversation = core::NewUuid();
  ASSERT_TRUE(audit.Record(DecisionIn(conversation, "a")).ok());
  now = 3'000;
  ASSERT_TRUE(audit.Record(DecisionIn(conversation, "b")).ok());
  ASSERT_TRUE(audit.Record(DecisionIn(conversation, "given", 2'000)).ok());
  auto listed = audit.List({"acme", "alice"}, conversation, 10);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 3u);
  EXPECT_EQ(audit_testing::ActionIds(*listed), (std::vector<std::string>{"b", "given", "a"}));
  EXPECT_EQ((*listed)[0].decided_at_micros, 3'000);
  EXPECT_EQ((*listed)[2].decided_at_micros, 1'000);
}

TEST(ApprovalAuditTextTest, OutcomesAndRisksAreStoredAsTheirLowerCaseNames) {
  EXPECT_EQ(ActionOutcomeText(pb::ACTION_OUTCOME_AUTO_APPROVED), "auto_approved");
  EXPECT_EQ(ActionOutcomeText(pb::ACTION_OUTCOME_STALE), "stale");
  EXPECT_EQ(ToolRiskText(execpb::TOOL_RISK_HIGH), "high");
  EXPECT_EQ(ToolRiskText(execpb::TOOL_RISK_UNSPECIFIED), "unspecified");
  for (int v = 0; v <= 7; ++v) {
    const auto outcome = static_cast<pb::ActionOutcome>(v);
    pb::ActionOutcome parsed = pb::ACTION_OUTCOME_UNSPECIFIED;
    ASSERT_TRUE(ParseActionOutcomeText(ActionOutcomeText(outcome), &parsed)) << v;
    EXPECT_EQ(parsed, outcome);
  }
  for (int v = 0; v <= 3; ++v) {
    const auto risk = static_cast<execpb::ToolRisk>(v);
    execpb::ToolRisk parsed = execpb::TOOL_RISK_UNSPECIFIED;
    ASSERT_TRUE(ParseToolRiskText(ToolRiskText(risk), &parsed)) << v;
    EXPECT_EQ(parsed, risk);
  }
  pb::ActionOutcome outcome = pb::ACTION_OUTCOME_UNSPECIFIED;
  EXPECT_FALSE(ParseActionOutcomeText("maybe", &outcome));
  execpb::ToolRisk risk = execpb::TOOL_RISK_UNSPECIFIED;
  EXPECT_FALSE(ParseToolRiskText("", &risk));
}

TEST(ApprovalAuditTextTest, TheApiShowsADecisionWithItsTimeInMilliseconds) {
  ActionDecisionRecord r = DecisionIn(core::NewUuid(), "action-1", 1'700'000'000'123'456);
  r.turn_id = "turn-9";
  r.digest = "sha256:abc";
  r.tool = "update_agent";
  r.summary = "Rename weekly-digest";
  const pb::ActionDecision d = ActionDecisionProto(r);
  EXPECT_EQ(d.action_id(), "action-1");
  EXPECT_EQ(d.digest(), "sha256:abc");
  EXPECT_EQ(d.tool_name(), "update_agent");
  EXPECT_EQ(d.summary(), "Rename weekly-digest");
  EXPECT_EQ(d.risk(), execpb::TOOL_RISK_WRITE);
  EXPECT_EQ(d.outcome(), pb::ACTION_OUTCOME_REJECTED);
  EXPECT_EQ(d.decided_by(), "alice");
  EXPECT_EQ(d.via(), "api");
  EXPECT_EQ(d.turn_id(), "turn-9");
  EXPECT_EQ(d.decided_at_unix_ms(), 1'700'000'000'123);
}

}  // namespace
}  // namespace omniforge::orchestrator
