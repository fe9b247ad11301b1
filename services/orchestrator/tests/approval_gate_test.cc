#include "services/orchestrator/approvals/approval_gate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "libs/core/config.h"
#include "services/orchestrator/approvals/preview.h"
#include "services/orchestrator/turn/gate_moves.h"

namespace omniforge::orchestrator {
namespace {

namespace execpb = ::omniforge::executor::v1;
namespace intentpb = ::omniforge::intent::v1;
namespace pb = ::omniforge::orchestrator::v1;
using nlohmann::json;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr int64_t kNow = 1'700'000'000'000'000;
constexpr std::chrono::seconds kTtl{900};

const std::vector<AgentInfo> kAgents = {
    {"alpha-reports", "Sends reports", "active", "", "11111111-1111-1111-1111-111111111111"},
    {"beta-digest", "Digests", "active", "", "22222222-2222-2222-2222-222222222222"},
    {"alpha-reports-2", "Another", "active", "", "33333333-3333-3333-3333-333333333333"}};

PendingAction Sealed(const std::string& tool, json args,
                     execpb::ToolRisk risk = execpb::TOOL_RISK_HIGH) {
  PendingAction action{"action-1", tool, std::move(args), risk, "delete 'alpha-reports'."};
  SealPendingAction(action, kAgents, kNow, kTtl);
  return action;
}

// The intent service's analysis of a reply: what it read the reply to do
// (services/intent/src/reply.h) and the entities it found.
intentpb::IntentAnalysis Analysis(intentpb::ReplyKind reply = intentpb::REPLY_KIND_APPROVE,
                                  std::map<std::string, std::string> entities = {},
                                  const std::vector<std::string>& action_ids = {}) {
  intentpb::IntentAnalysis analysis;
  analysis.mutable_reply()->set_kind(reply);
  for (const std::string& id : action_ids) analysis.mutable_reply()->add_action_ids(id);
  analysis.mutable_entities()->insert(entities.begin(), entities.end());
  return analysis;
}

TEST(ApprovalPolicyTest, DefaultsAskForWritesAndHighAndRunReads) {
  const ApprovalPolicy policy;
  EXPECT_EQ(policy.Decide("list_agents", execpb::TOOL_RISK_READ), GateVerdict::kRun);
  EXPECT_EQ(policy.Decide("create_agent", execpb::TOOL_RISK_WRITE), GateVerdict::kAsk);
  EXPECT_EQ(policy.Decide("delete_agent", execpb::TOOL_RISK_HIGH), GateVerdict::kAsk);
  // A tool the catalog does not know is treated as HIGH.
  EXPECT_EQ(policy.Decide("mystery", execpb::TOOL_RISK_UNSPECIFIED), GateVerdict::kAsk);
}

TEST(ApprovalPolicyTest, ConfigLoosensNamedToolsOnlyAndRefusesHighRunAsALevel) {
  auto reader = core::ConfigReader::FromString(
      "approvals:\n  write: ask\n  tools:\n    create_skill: run\n    delete_agent: deny\n"
      "  pending_ttl_s: 60\n");
  ASSERT_TRUE(reader.ok());
  absl::StatusOr<ApprovalPolicy> policy = ReadApprovalPolicy(*reader);
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_TRUE(reader->Finish().ok());
  EXPECT_EQ(policy->Decide("create_skill", execpb::TOOL_RISK_WRITE), GateVerdict::kRun);
  EXPECT_EQ(policy->Decide("create_agent", execpb::TOOL_RISK_WRITE), GateVerdict::kAsk);
  EXPECT_EQ(policy->Decide("delete_agent", execpb::TOOL_RISK_HIGH), GateVerdict::kDeny);
  EXPECT_EQ(policy->pending_ttl, std::chrono::seconds(60));

  auto high_run = core::ConfigReader::FromString("approvals:\n  high: run\n");
  ASSERT_TRUE(high_run.ok());
  absl::StatusOr<ApprovalPolicy> refused = ReadApprovalPolicy(*high_run);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("approvals.high"));

  auto bad = core::ConfigReader::FromString("approvals:\n  tools:\n    x: maybe\n");
  ASSERT_TRUE(bad.ok());
  EXPECT_THAT(std::string(ReadApprovalPolicy(*bad).status().message()),
              HasSubstr("approvals.tools.x"));
}

TEST(ApprovalGateTest, APreviewResolvesItsTargetToAnIdAndBindsTheExactCall) {
  const PendingAction action = Sealed("delete_agent", {{"agent", "Alpha-Reports"}});
  EXPECT_EQ(action.arguments["agent"], "11111111-1111-1111-1111-111111111111");
  EXPECT_EQ(action.targets["agent"]["name"], "alpha-reports");
  EXPECT_EQ(action.digest, ActionDigest("delete_agent", action.arguments));
  EXPECT_EQ(action.expires_at_micros, kNow + 900'000'000);
  EXPECT_NE(action.digest, ActionDigest("delete_agent", {{"agent", "beta-digest"}}));
  EXPECT_FALSE(WhyNotApprovable(action, kAgents, kNow + 1).has_value());
}

TEST(ApprovalGateTest, AnExpiredChangedOrStaleActionIsNotApprovable) {
  const PendingAction action = Sealed("delete_agent", {{"agent", "alpha-reports"}});
  EXPECT_THAT(WhyNotApprovable(action, kAgents, kNow + 900'000'000).value_or(""),
              HasSubstr("expired"));
  PendingAction tampered = action;
  tampered.arguments["agent"] = "22222222-2222-2222-2222-222222222222";
  EXPECT_THAT(WhyNotApprovable(tampered, kAgents, kNow).value_or(""),
              HasSubstr("not the one that was previewed"));
  std::vector<AgentInfo> renamed = kAgents;
  renamed[0].name = "alpha-old";
  EXPECT_THAT(WhyNotApprovable(action, renamed, kNow).value_or(""),
              HasSubstr("is now called 'alpha-old'"));
  const std::vector<AgentInfo> gone(kAgents.begin() + 1, kAgents.end());
  EXPECT_THAT(WhyNotApprovable(action, gone, kNow).value_or(""), HasSubstr("no longer exists"));
  PendingAction old_release = action;
  old_release.digest.clear();
  EXPECT_TRUE(WhyNotApprovable(old_release, kAgents, kNow).has_value());
}

TEST(ApprovalGateTest, AnApprovalNamingAnotherTargetOrSettingIsAnEditWhateverReadTheWords) {
  // The gate checks every approval it is given: an intent service (or a
  // model behind it) that reads these as a yes does not make them one.
  const std::vector<PendingAction> pending = {Sealed("delete_agent", {{"agent", "alpha-reports"}})};
  for (const char* edit : {"ok but delete beta-digest instead", "yes, delete beta-digest",
                           "ok, beta-digest", "ok delete alpha-reports-2"}) {
    EXPECT_EQ(ReadPendingReply(edit, Analysis(), pending, kAgents), PendingReply::kEdit) << edit;
  }
  EXPECT_EQ(ReadPendingReply("yes",
                             Analysis(intentpb::REPLY_KIND_APPROVE, {{"schedule", "every friday"}}),
                             pending, kAgents),
            PendingReply::kEdit);
  // The analysis's agent carries the flow's agent from earlier turns: a
  // plain yes is still a yes.
  EXPECT_EQ(
      ReadPendingReply("yes, do that",
                       Analysis(intentpb::REPLY_KIND_APPROVE, {{"agent_name", "beta-digest"}}),
                       pending, kAgents),
      PendingReply::kApprove);
  EXPECT_EQ(ReadPendingReply("yes, delete alpha-reports", Analysis(), pending, kAgents),
            PendingReply::kApprove);
  // Recipients read as a list are held by an array argument holding each.
  const std::vector<PendingAction> booking = {
      Sealed("calendar__create_event", {{"attendees", {"sarah@example.com", "john@example.com"}}})};
  EXPECT_EQ(ReadPendingReply("yes",
                             Analysis(intentpb::REPLY_KIND_APPROVE,
                                      {{"recipients", "sarah@example.com, john@example.com"}}),
                             booking, kAgents),
            PendingReply::kApprove);
  EXPECT_EQ(ReadPendingReply("yes",
                             Analysis(intentpb::REPLY_KIND_APPROVE,
                                      {{"recipients", "sarah@example.com,eve@example.com"}}),
                             booking, kAgents),
            PendingReply::kEdit);
}

TEST(ApprovalGateTest, TheIntentServicesReadingDecidesAndAnythingElseLeavesItPending) {
  const std::vector<PendingAction> pending = {Sealed("delete_agent", {{"agent", "alpha-reports"}})};
  EXPECT_EQ(ReadPendingReply("no", Analysis(intentpb::REPLY_KIND_REJECT), pending, kAgents),
            PendingReply::kReject);
  EXPECT_EQ(
      ReadPendingReply("make it weekly", Analysis(intentpb::REPLY_KIND_EDIT), pending, kAgents),
      PendingReply::kEdit);
  for (intentpb::ReplyKind other :
       {intentpb::REPLY_KIND_UNSPECIFIED, intentpb::REPLY_KIND_NEW_REQUEST,
        intentpb::REPLY_KIND_RECAP, intentpb::REPLY_KIND_RESUME, intentpb::REPLY_KIND_ANSWER}) {
    EXPECT_EQ(ReadPendingReply("yes", Analysis(other), pending, kAgents), PendingReply::kOther)
        << intentpb::ReplyKind_Name(other) << ": only the service's approval approves";
  }
  // The intent service could not be reached: nothing is decided.
  EXPECT_EQ(ReadPendingReply("yes", intentpb::IntentAnalysis(), pending, kAgents),
            PendingReply::kOther);
  // What it is told of an action: its targets by name, lower-cased.
  EXPECT_THAT(PendingTargets(pending[0]), ::testing::ElementsAre("alpha-reports"));
}

TEST(ApprovalGateTest, AShorterOrForeignNameIsAnotherTarget) {
  // "alpha" beside a pending delete of "alpha-2" is the other agent.
  const std::vector<AgentInfo> agents = {{"alpha", "", "", "", "a1"},
                                         {"alpha-2", "", "", "", "a2"},
                                         {"日報", "", "", "", "a3"},
                                         {"週報", "", "", "", "a4"}};
  PendingAction longer{
      "action-1", "delete_agent", {{"agent", "alpha-2"}}, execpb::TOOL_RISK_HIGH, "delete"};
  SealPendingAction(longer, agents, kNow, kTtl);
  EXPECT_EQ(ReadPendingReply("yes, delete alpha", Analysis(), {longer}, agents),
            PendingReply::kEdit);
  EXPECT_EQ(ReadPendingReply("yes, delete alpha-2", Analysis(), {longer}, agents),
            PendingReply::kApprove);
  PendingAction daily{
      "action-2", "delete_agent", {{"agent", "日報"}}, execpb::TOOL_RISK_HIGH, "delete"};
  SealPendingAction(daily, agents, kNow, kTtl);
  EXPECT_EQ(ReadPendingReply("yes, 週報", Analysis(), {daily}, agents), PendingReply::kEdit);
  EXPECT_EQ(ReadPendingReply("yes, 日報", Analysis(), {daily}, agents), PendingReply::kApprove);
}

TEST(ApprovalGateTest, ApprovingOneOfSeveralPendingActionsApprovesThatOneOnly) {
  std::vector<PendingAction> pending = {Sealed("delete_agent", {{"agent", "alpha-reports"}}),
                                        Sealed("delete_agent", {{"agent", "beta-digest"}})};
  pending[1].action_id = "action-2";
  PendingResolution one = ResolvePending("yes, delete beta-digest", pb::ApprovalDecision(),
                                         Analysis(intentpb::REPLY_KIND_APPROVE, {}, {"action-2"}),
                                         pending, kAgents, kNow, kTtl);
  ASSERT_EQ(one.approved.size(), 1u);
  EXPECT_EQ(one.approved[0].action_id, "action-2");
  ASSERT_EQ(one.carried.size(), 1u);
  EXPECT_EQ(one.carried[0].action_id, "action-1");
}

TEST(ApprovalGateTest, ApprovingRunsExactlyThePendingActionsWithTheirOwnKeys) {
  const std::vector<PendingAction> pending = {
      Sealed("delete_agent", {{"agent", "alpha-reports"}}),
      Sealed("pause_agent", {{"agent", "beta-digest"}}, execpb::TOOL_RISK_WRITE)};
  PendingResolution yes =
      ResolvePending("yes", pb::ApprovalDecision(), Analysis(), pending, kAgents, kNow, kTtl);
  EXPECT_EQ(yes.reply, PendingReply::kApprove);
  ASSERT_EQ(yes.approved.size(), 2u);
  EXPECT_EQ(yes.approved[0].arguments, pending[0].arguments);
  EXPECT_EQ(ApprovedStepKey(yes.approved[0]), "action:action-1");
  ASSERT_EQ(yes.decisions.size(), 2u);
  EXPECT_EQ(yes.decisions[0].outcome, pb::ACTION_OUTCOME_APPROVED);
  EXPECT_EQ(yes.decisions[0].via, "words");
  EXPECT_TRUE(yes.carried.empty());
}

TEST(ApprovalGateTest, AStructuredDecisionActsOnTheActionItNamesOnly) {
  std::vector<PendingAction> pending = {Sealed("delete_agent", {{"agent", "alpha-reports"}}),
                                        Sealed("pause_agent", {{"agent", "beta-digest"}})};
  pending[1].action_id = "action-2";
  pb::ApprovalDecision approve;
  approve.set_kind(pb::DECISION_KIND_APPROVE);
  approve.set_action_id("action-2");
  PendingResolution one =
      ResolvePending("Approve action-2", approve, Analysis(), pending, kAgents, kNow, kTtl);
  ASSERT_EQ(one.approved.size(), 1u);
  EXPECT_EQ(one.approved[0].action_id, "action-2");
  ASSERT_EQ(one.carried.size(), 1u);
  EXPECT_EQ(one.carried[0].action_id, "action-1");
  EXPECT_EQ(one.decisions[0].via, "api");

  // An id that is not waiting (replaced, decided, never made) runs nothing.
  approve.set_action_id("action-old");
  PendingResolution stale =
      ResolvePending("Approve action-old", approve, Analysis(), pending, kAgents, kNow, kTtl);
  EXPECT_TRUE(stale.approved.empty());
  EXPECT_THAT(stale.refusal, HasSubstr("no action action-old is waiting"));
  EXPECT_EQ(stale.carried.size(), 2u);

  // Words inside a structured approval never change it.
  approve.set_action_id("action-1");
  PendingResolution worded = ResolvePending("ok but delete beta-digest instead", approve,
                                            Analysis(), pending, kAgents, kNow, kTtl);
  ASSERT_EQ(worded.approved.size(), 1u);
  EXPECT_EQ(worded.approved[0].arguments["agent"], "11111111-1111-1111-1111-111111111111");

  pb::ApprovalDecision edit;
  edit.set_kind(pb::DECISION_KIND_EDIT);
  edit.set_action_id("action-1");
  edit.set_arguments_json(R"({"agent": "beta-digest"})");
  PendingResolution edited = ResolvePending("", edit, Analysis(), pending, kAgents, kNow, kTtl);
  EXPECT_TRUE(edited.approved.empty());
  ASSERT_EQ(edited.previewed_again.size(), 1u);
  EXPECT_EQ(edited.previewed_again[0].arguments["agent"], "beta-digest");
  EXPECT_NE(edited.previewed_again[0].action_id, "action-1");
  EXPECT_TRUE(edited.previewed_again[0].digest.empty()) << "sealed anew by the turn";
}

TEST(ApprovalGateTest, AnExpiredApprovalRunsNothingAndPreviewsItAgain) {
  const std::vector<PendingAction> pending = {Sealed("delete_agent", {{"agent", "alpha-reports"}})};
  PendingResolution late = ResolvePending("yes", pb::ApprovalDecision(), Analysis(), pending,
                                          kAgents, kNow + 901'000'000, kTtl);
  EXPECT_TRUE(late.approved.empty());
  EXPECT_THAT(late.refusal, HasSubstr("expired"));
  ASSERT_EQ(late.previewed_again.size(), 1u);
  EXPECT_NE(late.previewed_again[0].action_id, "action-1");
  EXPECT_EQ(late.previewed_again[0].expires_at_micros, kNow + 901'000'000 + 900'000'000);
  ASSERT_EQ(late.decisions.size(), 1u);
  EXPECT_EQ(late.decisions[0].outcome, pb::ACTION_OUTCOME_EXPIRED);

  // A target renamed since the preview: nothing runs, and the user is told.
  std::vector<AgentInfo> renamed = kAgents;
  renamed[0].name = "alpha-renamed";
  PendingResolution stale =
      ResolvePending("yes", pb::ApprovalDecision(), Analysis(), pending, renamed, kNow, kTtl);
  EXPECT_TRUE(stale.approved.empty());
  EXPECT_THAT(stale.reply_text, HasSubstr("alpha-renamed"));
  EXPECT_EQ(stale.decisions[0].outcome, pb::ACTION_OUTCOME_STALE);
  // Asked again with the name the agent has now (worded anew by the turn).
  ASSERT_EQ(stale.previewed_again.size(), 1u);
  EXPECT_EQ(stale.previewed_again[0].targets["agent"]["name"], "alpha-renamed");
  EXPECT_TRUE(stale.previewed_again[0].summary.empty());

  // A target that is gone: nothing to ask again.
  const std::vector<AgentInfo> gone(kAgents.begin() + 1, kAgents.end());
  PendingResolution deleted =
      ResolvePending("yes", pb::ApprovalDecision(), Analysis(), pending, gone, kNow, kTtl);
  EXPECT_TRUE(deleted.approved.empty());
  EXPECT_TRUE(deleted.previewed_again.empty());
  EXPECT_THAT(deleted.reply_text, HasSubstr("no longer exists"));

  // A call changed since its preview is never asked again as if it were it.
  std::vector<PendingAction> tampered = pending;
  tampered[0].arguments["agent"] = "22222222-2222-2222-2222-222222222222";
  PendingResolution changed =
      ResolvePending("yes", pb::ApprovalDecision(), Analysis(), tampered, kAgents, kNow, kTtl);
  EXPECT_TRUE(changed.approved.empty());
  EXPECT_TRUE(changed.previewed_again.empty());
}

TEST(ApprovalGateTest, AnEditNamesTheNewTarget) {
  const std::vector<PendingAction> pending = {Sealed("delete_agent", {{"agent", "alpha-reports"}})};
  PendingResolution edit =
      ResolvePending("ok but delete beta-digest instead", pb::ApprovalDecision(),
                     Analysis(intentpb::REPLY_KIND_EDIT, {}), pending, kAgents, kNow, kTtl);
  EXPECT_EQ(edit.reply, PendingReply::kEdit);
  EXPECT_TRUE(edit.approved.empty());
  EXPECT_EQ(edit.other_agent, "beta-digest");
  EXPECT_EQ(edit.decisions[0].outcome, pb::ACTION_OUTCOME_EDITED);
}

TEST(ApprovalGateTest, APlanNeedsApprovalWhenAStepMayWriteAndIsRefusedWhenAToolIsDenied) {
  std::vector<execpb::ToolDescriptor> tools(2);
  tools[0].set_name("list_agents");
  tools[0].set_risk(execpb::TOOL_RISK_READ);
  tools[1].set_name("delete_agent");
  tools[1].set_risk(execpb::TOOL_RISK_HIGH);
  PlanStep read;
  read.id = "s1";
  read.description = "list";
  read.tools = {"list_agents"};
  PlanStep remove = read;
  remove.id = "s2";
  remove.tools = {};
  remove.tool_calls = {{"delete_agent", {{"agent", "alpha-reports"}}}};
  ApprovalPolicy policy;
  EXPECT_EQ(DecidePlan(policy, {read}, tools).verdict, GateVerdict::kRun);
  EXPECT_EQ(DecidePlan(policy, {read, remove}, tools).verdict, GateVerdict::kAsk);
  policy.tools["delete_agent"] = GateVerdict::kDeny;
  const PlanVerdict denied = DecidePlan(policy, {read, remove}, tools);
  EXPECT_EQ(denied.verdict, GateVerdict::kDeny);
  EXPECT_EQ(denied.denied_tool, "delete_agent");
  EXPECT_NE(PlanDigest({read}), PlanDigest({read, remove}));
}

// A catalog of one WRITE tool that sends email, and its calls to `to`.
std::vector<execpb::ToolDescriptor> EmailCatalog() {
  std::vector<execpb::ToolDescriptor> tools(1);
  tools[0].set_name("send_email");
  tools[0].set_risk(execpb::TOOL_RISK_WRITE);
  tools[0].set_description("Sends an email.");
  return tools;
}

PendingAction EmailTo(const std::string& id, const std::vector<std::string>& to) {
  return {id,
          "send_email",
          {{"to", to}, {"subject", "Quarterly numbers"}},
          execpb::TOOL_RISK_WRITE,
          ""};
}

std::vector<std::string> Colleagues(int count) {
  std::vector<std::string> to;
  to.reserve(count);
  for (int i = 0; i < count; ++i) to.push_back("colleague" + std::to_string(i) + "@acme.com");
  return to;
}

TEST(ContentRiskGateTest, ElevenRecipientsArePreviewedHighWithTheRuleAndTwoInternalStayAWrite) {
  ApprovalPolicy policy;
  policy.content_risk.internal_domains = {"acme.com"};
  const ContentRiskUser alice = ContentRiskUserOf("alice@acme.com");
  Move move;
  move.propose = {EmailTo("many", Colleagues(11)), EmailTo("two", Colleagues(2))};
  std::vector<GateDecision> decisions;
  std::vector<std::string> denied;
  const std::vector<PendingAction> asking =
      PassProposals(move, EmailCatalog(), {}, policy, alice, kNow, decisions, denied);
  ASSERT_EQ(asking.size(), 2u);
  EXPECT_TRUE(decisions.empty() && denied.empty()) << "both wait for the user";

  pb::PreviewEvent many;
  FillPreview(asking[0], many);
  EXPECT_EQ(many.risk(), pb::TOOL_RISK_HIGH);
  ASSERT_GT(many.risk_factors_size(), 0);
  EXPECT_EQ(many.risk_factors(0), "sends to 11 recipients (more than 10) (rule: recipients)");
  EXPECT_EQ(asking[0].digest, ActionDigest("send_email", asking[0].arguments));

  pb::PreviewEvent two;
  FillPreview(asking[1], two);
  EXPECT_EQ(two.risk(), pb::TOOL_RISK_WRITE);
  EXPECT_THAT(two.risk_factors(), Not(Contains(HasSubstr("rule:"))));
  EXPECT_THAT(two.risk_factors(), Contains("changes your workspace"));
}

TEST(ContentRiskGateTest, ARaisedCallIsAskedEvenWhereItsToolRunsUnaskedAndAuditedWithItsReason) {
  ApprovalPolicy policy;
  policy.write = GateVerdict::kRun;
  policy.tools["send_email"] = GateVerdict::kRun;
  const ContentRiskUser alice = ContentRiskUserOf("alice@acme.com");
  Move move;
  move.propose = {EmailTo("outside", {"eve@example.org"}), EmailTo("inside", {"bob@acme.com"})};
  std::vector<GateDecision> decisions;
  std::vector<std::string> denied;
  const std::vector<PendingAction> asking =
      PassProposals(move, EmailCatalog(), {}, policy, alice, kNow, decisions, denied);
  ASSERT_EQ(asking.size(), 1u);
  EXPECT_EQ(asking[0].action_id, "outside");
  EXPECT_EQ(asking[0].risk, execpb::TOOL_RISK_HIGH);
  EXPECT_THAT(
      asking[0].risk_reasons,
      ::testing::ElementsAre("sends outside your domain: example.org (rule: external_domains)"));
  ASSERT_EQ(move.run.size(), 1u) << "the internal one runs as the policy says";
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_EQ(decisions[0].outcome, pb::ACTION_OUTCOME_AUTO_APPROVED);
  EXPECT_EQ(decisions[0].risk, execpb::TOOL_RISK_WRITE);

  // Where HIGH is denied, the raised call is refused and audited as HIGH
  // with the rule that raised it.
  policy.high = GateVerdict::kDeny;
  Move again;
  again.propose = {EmailTo("outside", {"eve@example.org"})};
  decisions.clear();
  EXPECT_TRUE(
      PassProposals(again, EmailCatalog(), {}, policy, alice, kNow, decisions, denied).empty());
  EXPECT_TRUE(again.run.empty());
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_EQ(decisions[0].outcome, pb::ACTION_OUTCOME_DENIED);
  EXPECT_EQ(decisions[0].risk, execpb::TOOL_RISK_HIGH);
  EXPECT_THAT(decisions[0].summary,
              HasSubstr("High risk: sends outside your domain: example.org (rule: "
                        "external_domains)."));
}

TEST(ContentRiskGateTest, ConfigRulesAreReadWithThePolicyAndAMalformedOneStopsIt) {
  auto reader = core::ConfigReader::FromString(
      "approvals:\n  content_risk:\n    recipient_limit: 2\n    internal_domains: [acme.com]\n");
  ASSERT_TRUE(reader.ok());
  absl::StatusOr<ApprovalPolicy> policy = ReadApprovalPolicy(*reader);
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_TRUE(reader->Finish().ok());
  EXPECT_EQ(policy->content_risk.recipient_limit, 2);
  EXPECT_EQ(policy->DecideCall("send_email", execpb::TOOL_RISK_HIGH, true), GateVerdict::kAsk);
  policy->tools["send_email"] = GateVerdict::kDeny;
  EXPECT_EQ(policy->DecideCall("send_email", execpb::TOOL_RISK_HIGH, true), GateVerdict::kDeny);

  auto bad = core::ConfigReader::FromString(
      "approvals:\n  content_risk:\n    internal_domains: [not a domain]\n");
  ASSERT_TRUE(bad.ok());
  const absl::Status refused = ReadApprovalPolicy(*bad).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.message()),
              HasSubstr("approvals.content_risk.internal_domains: 'not a domain'"));
}

}  // namespace
}  // namespace omniforge::orchestrator
