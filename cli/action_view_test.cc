// What `omniforge actions` shows for a conversation's approval trail.
#include "cli/action_view.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

namespace omniforge::cli {
namespace {

namespace pb = ::omniforge::orchestrator::v1;
namespace epb = ::omniforge::orchestrator::v1;

std::string Shown(const pb::ListActionsResponse& response, bool json) {
  std::ostringstream out;
  ShowDecisions(out, response, json);
  return out.str();
}

pb::ListActionsResponse Trail() {
  pb::ListActionsResponse response;
  pb::ActionDecision* approved = response.add_decisions();
  approved->set_action_id("act-2");
  approved->set_digest("sha256:9b74");
  approved->set_tool_name("delete_agent");
  approved->set_summary("Delete the agent invoice-chaser");
  approved->set_risk(epb::TOOL_RISK_HIGH);
  approved->set_outcome(pb::ACTION_OUTCOME_APPROVED);
  approved->set_decided_by("alice");
  approved->set_via("words");
  approved->set_turn_id("turn-7");
  approved->set_decided_at_unix_ms(1'700'000'062'500);
  pb::ActionDecision* policy = response.add_decisions();
  policy->set_action_id("plan-1");
  policy->set_tool_name("agent_create_plan");
  policy->set_outcome(pb::ACTION_OUTCOME_AUTO_APPROVED);
  policy->set_decided_by("policy");
  policy->set_via("policy");
  policy->set_decided_at_unix_ms(1'700'000'000'000);
  return response;
}

TEST(ActionViewTest, EachDecisionSaysWhenWhatWhoHowAndWhichAction) {
  EXPECT_EQ(Shown(Trail(), false),
            "2023-11-14T22:14:22.500Z  approved  delete_agent (high risk)  by alice via words\n"
            "    Delete the agent invoice-chaser\n"
            "    action act-2  digest sha256:9b74  turn turn-7\n"
            "2023-11-14T22:13:20Z  auto approved  agent_create_plan  by policy via policy\n"
            "    action plan-1\n");
}

TEST(ActionViewTest, AnEmptyTrailIsSaidInWords) {
  EXPECT_EQ(Shown(pb::ListActionsResponse(), false),
            "no approval decisions in this conversation\n");
}

TEST(ActionViewTest, JsonIsTheResponseOnOneLineWithProtoFieldNames) {
  const std::string out = Shown(Trail(), true);
  ASSERT_EQ(out.find('\n'), out.size() - 1) << out;
  const nlohmann::json parsed = nlohmann::json::parse(out);
  ASSERT_EQ(parsed["decisions"].size(), 2u);
  EXPECT_EQ(parsed["decisions"][0]["action_id"], "act-2");
  EXPECT_EQ(parsed["decisions"][0]["outcome"], "ACTION_OUTCOME_APPROVED");
  EXPECT_EQ(parsed["decisions"][0]["decided_at_unix_ms"], "1700000062500");
  EXPECT_EQ(Shown(pb::ListActionsResponse(), true), "{}\n");
}

}  // namespace
}  // namespace omniforge::cli
