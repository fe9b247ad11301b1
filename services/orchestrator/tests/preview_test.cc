#include "services/orchestrator/approvals/preview.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace omniforge::orchestrator {
namespace {

namespace execpb = ::omniforge::executor::v1;
namespace pb = ::omniforge::orchestrator::v1;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using json = nlohmann::json;

std::vector<std::string> RiskFactors(const PendingAction& action) {
  pb::PreviewEvent preview;
  FillPreview(action, preview);
  return {preview.risk_factors().begin(), preview.risk_factors().end()};
}

TEST(PreviewTest, ADeletionSaysItCannotBeUndoneAndWhatItTouches) {
  PendingAction action{"a1",
                       "delete_agent",
                       {{"agent", "invoice-chaser"}},
                       execpb::TOOL_RISK_HIGH,
                       "Delete the agent invoice-chaser."};
  pb::PreviewEvent preview;
  FillPreview(action, preview);
  EXPECT_EQ(preview.action_id(), "a1");
  EXPECT_EQ(preview.tool_name(), "delete_agent");
  EXPECT_EQ(preview.risk(), execpb::TOOL_RISK_HIGH);
  EXPECT_EQ(preview.summary(), "Delete the agent invoice-chaser.");
  EXPECT_THAT(preview.affected(), ElementsAre("invoice-chaser"));
  EXPECT_THAT(preview.risk_factors(),
              ElementsAre("deletes data that cannot be recovered", "cannot be undone"));
}

TEST(PreviewTest, AConnectedServicesToolIsNamedAsSuchNotAsADeletion) {
  EXPECT_THAT(
      RiskFactors(
          {"a2", "crm__merge_contacts", {{"ids", {1, 2}}}, execpb::TOOL_RISK_HIGH, "merge"}),
      ElementsAre("a tool of the connected service \"crm\": it may change or delete "
                  "data there",
                  "omniforge cannot undo what it does"));
  EXPECT_THAT(RiskFactors({"a3", "crm__add_note", nlohmann::json::object(), execpb::TOOL_RISK_WRITE,
                           "note"}),
              ElementsAre("changes data in the connected service \"crm\""));
}

TEST(PreviewTest, OtherHighRiskToolsAreNotCalledDeletions) {
  EXPECT_THAT(RiskFactors({"a4", "publish_template", nlohmann::json::object(),
                           execpb::TOOL_RISK_HIGH, "publish"}),
              ElementsAre("a high-risk change to your workspace", "may not be undone"));
}

TEST(PreviewTest, SchedulesAndRecipientsAreSaid) {
  PendingAction draft{"a5",
                      "create_agent",
                      {{"name", "monday-notion-updates"},
                       {"schedule", "every monday at 9am"},
                       {"config", {{"recipients", "the team channel"}}}},
                      execpb::TOOL_RISK_WRITE,
                      "Create monday-notion-updates."};
  pb::PreviewEvent preview;
  FillPreview(draft, preview);
  EXPECT_THAT(preview.affected(), ElementsAre("monday-notion-updates", "the team channel"));
  EXPECT_THAT(preview.risk_factors(),
              ElementsAre("changes your workspace", "runs on its own: every monday at 9am",
                          "sends to the team channel"));
}

// Where each run's output goes is said, and named as a risk: it leaves the
// workspace on its own.
TEST(PreviewTest, WhereARunsOutputGoesIsSaid) {
  PendingAction draft{
      "a6",
      "create_agent",
      {{"name", "sales-digest"},
       {"deliver", {{"tool", "slack__post_message"}, {"arguments", {{"channel", "#sales"}}}}}},
      execpb::TOOL_RISK_WRITE,
      ""};
  EXPECT_THAT(
      DescribeAgentDraft(draft.arguments),
      HasSubstr("Each run's output goes to slack__post_message ({\"channel\":\"#sales\"})."));
  pb::PreviewEvent preview;
  FillPreview(draft, preview);
  EXPECT_THAT(
      preview.risk_factors(),
      Contains("sends each run's output with slack__post_message, which every run may then call"));
  // A delivery a model wrote as something else is not said.
  EXPECT_THAT(DescribeAgentDraft({{"name", "x"}, {"deliver", "slack"}}),
              Not(HasSubstr("output goes")));
}

TEST(PreviewTest, ArgumentsThatAreNotAnObjectAreShownAsTheyAre) {
  pb::PreviewEvent preview;
  FillPreview({"a6", "run_agent", nlohmann::json::array({1}), execpb::TOOL_RISK_WRITE, "run"},
              preview);
  EXPECT_EQ(preview.arguments_json(), "[1]");
  EXPECT_TRUE(preview.affected().empty());
  EXPECT_THAT(preview.risk_factors(), ElementsAre("changes your workspace"));
}

// What a model-proposed action would do, in words: the agent tools say what
// happens to the agent, a draft what the new agent does, any other tool what
// its catalog says it does and with what.
TEST(PreviewTest, TheSummaryOfAnActionSaysWhatItDoesInWords) {
  EXPECT_EQ(ActionSummary("run_agent", {{"agent", "invoice-chaser"}}, "Runs an agent now."),
            "run 'invoice-chaser' now.");
  EXPECT_EQ(ActionSummary("delete_agent", {{"agent", "invoice-chaser"}}, ""),
            "delete 'invoice-chaser' and its whole run history. Affected: the agent, its "
            "schedule and every recorded run.");
  EXPECT_EQ(ActionSummary("create_agent",
                          {{"name", "weekly-digest"},
                           {"description", "Sums up the week's sales."},
                           {"schedule", "every Monday at 9:00"},
                           {"config", {{"recipients", "sales@acme.test"}}}},
                          ""),
            "a new agent 'weekly-digest' (Sums up the week's sales). It runs every Monday at "
            "09:00 (your time zone). It sends the result to sales@acme.test.");
  // A zone in the words, or given, is said as it is.
  EXPECT_THAT(DescribeAgentDraft({{"name", "d"}, {"schedule", "0 9 * * 1 Europe/Paris"}}),
              HasSubstr("every Monday at 09:00 (Europe/Paris)"));
  EXPECT_THAT(DescribeAgentDraft({{"name", "d"}, {"schedule", "daily"}, {"time_zone", "UTC"}}),
              HasSubstr("(UTC)"));
  // A connected service's tool: the first sentence of its description and
  // its arguments, text quoted.
  EXPECT_EQ(ActionSummary("crm__delete_contact",
                          {{"contact_id", 42}, {"hard", true}, {"reason", "duplicate"}},
                          "Deletes a contact. Its deals stay.\nUse with care."),
            "crm__delete_contact (Deletes a contact), with contact_id 42, hard yes and reason "
            "\"duplicate\".");
  EXPECT_EQ(ActionSummary("crm__sync", json::object(), ""), "crm__sync, with no arguments.");
  // Long values are cut; many arguments are counted, not listed.
  json many = json::object();
  for (int i = 0; i < 10; ++i) many["k" + std::to_string(i)] = i;
  EXPECT_THAT(ActionSummary("bulk", many, ""), ::testing::EndsWith("k7 7 and 2 more."));
  const std::string long_text = ActionSummary("note", {{"text", std::string(1000, 'x')}}, "");
  EXPECT_LT(long_text.size(), 260u);
}

// A model writes the arguments: a draft whose fields are not text is still
// worded, never a failure.
TEST(PreviewTest, ADraftWithFieldsOfAnyTypeIsStillWorded) {
  EXPECT_EQ(ActionSummary("create_agent",
                          {{"name", "digest"},
                           {"description", nullptr},
                           {"schedule", 7},
                           {"config",
                            {{"recipients", json::array({"a@acme.test", "b@acme.test"})},
                             {"data_source", {{"table", "sales"}}}}}},
                          ""),
            "a new agent 'digest' (null). It runs when you ask, or on a schedule you name. It "
            "reads from {\"table\":\"sales\"}. It sends the result to "
            "[\"a@acme.test\",\"b@acme.test\"].");
  EXPECT_EQ(ActionSummary("create_agent", {{"name", 3}}, ""), "create_agent, with name 3.");
  EXPECT_EQ(DescribeAgentDraft(json::array()),
            "''. It runs when you ask, or on a schedule you name.");
}

}  // namespace
}  // namespace omniforge::orchestrator
