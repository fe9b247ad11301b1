// The bounds of a plan step (CheckStepCall): the step's tools, writes only
// when approved, approved targets only; and the idempotency keys of its
// writes (StepWriteKeys).
#include "services/executor/src/step_bounds.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace omniforge::executor {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;
using Reason = CallRefusal::Reason;

Assignment Approved(std::vector<PlannedCall> calls) {
  Assignment a;
  a.task = "tidy the agents";
  a.allowed_tools = {"list_agents", "delete_agent", "create_agent"};
  a.writes_approved = true;
  a.approved_targets_only = true;
  a.tool_calls = std::move(calls);
  return a;
}

TEST(CheckStepCallTest, OnlyTheStepsToolsRun) {
  Assignment reads;  // no allowed_tools: every READ tool, no write
  EXPECT_FALSE(CheckStepCall(reads, "list_agents", ToolRisk::kRead, Json::object()).has_value());
  auto write = CheckStepCall(reads, "create_agent", ToolRisk::kWrite, Json::object());
  ASSERT_TRUE(write.has_value());
  EXPECT_EQ(write->reason, Reason::kNotAllowed);
  EXPECT_EQ(write->code(), "not_available");

  Assignment listed = Approved({});
  listed.approved_targets_only = false;
  auto other = CheckStepCall(listed, "run_agent", ToolRisk::kWrite, Json::object());
  ASSERT_TRUE(other.has_value());
  EXPECT_EQ(other->reason, Reason::kNotAllowed);
  auto read = CheckStepCall(listed, "list_skills", ToolRisk::kRead, Json::object());
  ASSERT_TRUE(read.has_value()) << "a READ tool not listed is not the step's either";
  EXPECT_THAT(read->message, HasSubstr("not one of this step's tools"));
}

TEST(CheckStepCallTest, WritesNeedApproval) {
  for (bool targets_only : {false, true}) {
    Assignment a = Approved({{"delete_agent", R"({"agent": "old"})"}});
    a.writes_approved = false;
    a.approved_targets_only = targets_only;
    auto refused = CheckStepCall(a, "delete_agent", ToolRisk::kHigh, Json{{"agent", "old"}});
    ASSERT_TRUE(refused.has_value());
    EXPECT_EQ(refused->reason, Reason::kWriteNotApproved);
    EXPECT_EQ(refused->code(), "write_not_approved");
    EXPECT_FALSE(CheckStepCall(a, "list_agents", ToolRisk::kRead, Json::object()).has_value());
  }
}

TEST(CheckStepCallTest, ApprovedTargetsOnly) {
  const Assignment a = Approved({{"delete_agent", R"({"agent": "old", "force": 1})"},
                                 {"delete_agent", R"({"agent": "older"})"},
                                 {"list_agents", R"({"status": "paused"})"}});
  // Exactly an approved call (1.0 is the JSON number 1).
  EXPECT_FALSE(
      CheckStepCall(a, "delete_agent", ToolRisk::kHigh, Json{{"agent", "old"}, {"force", 1.0}})
          .has_value());
  // One argument more than approved is not the approved call (an update's
  // approved schedule approves no new recipients).
  EXPECT_TRUE(CheckStepCall(a, "delete_agent", ToolRisk::kHigh,
                            Json{{"agent", "old"}, {"force", 1}, {"note", "x"}})
                  .has_value());
  EXPECT_FALSE(
      CheckStepCall(a, "delete_agent", ToolRisk::kHigh, Json{{"agent", "older"}}).has_value());
  // Another target, a missing argument, another value's type.
  for (const Json& args : {Json{{"agent", "victim"}}, Json{{"force", 1}}, Json::object(),
                           Json{{"agent", Json::array({"old"})}, {"force", 1}},
                           Json{{"agent", "OLD"}, {"force", 1}}, Json("not an object")}) {
    auto refused = CheckStepCall(a, "delete_agent", ToolRisk::kHigh, args);
    ASSERT_TRUE(refused.has_value()) << args.dump();
    EXPECT_EQ(refused->reason, Reason::kTargetNotApproved);
    EXPECT_THAT(refused->message, HasSubstr(R"(delete_agent {"agent":"old","force":1})"));
    EXPECT_THAT(refused->message, HasSubstr("not approved"));
  }
  // Each approved call runs once.
  size_t matched = 99;
  EXPECT_FALSE(
      CheckStepCall(a, "delete_agent", ToolRisk::kHigh, Json{{"agent", "older"}}, {}, &matched)
          .has_value());
  EXPECT_EQ(matched, 1u);
  auto again =
      CheckStepCall(a, "delete_agent", ToolRisk::kHigh, Json{{"agent", "older"}}, {matched});
  ASSERT_TRUE(again.has_value());
  EXPECT_THAT(again->message, HasSubstr("already ran"));
  // A write tool the plan names no call of: its arguments are the agent's.
  EXPECT_FALSE(
      CheckStepCall(a, "create_agent", ToolRisk::kWrite, Json{{"name", "any"}}).has_value());
  // READ calls are not bound by the planned ones.
  EXPECT_FALSE(
      CheckStepCall(a, "list_agents", ToolRisk::kRead, Json{{"status", "active"}}).has_value());
  // Without the flag an approved write tool takes any target.
  Assignment free = a;
  free.approved_targets_only = false;
  EXPECT_FALSE(
      CheckStepCall(free, "delete_agent", ToolRisk::kHigh, Json{{"agent", "victim"}}).has_value());
}

TEST(StepWriteKeysTest, WritesAreNumberedByTheStepNotByTheCall) {
  StepWriteKeys keys("plan:p1:s2");
  EXPECT_EQ(keys.KeyFor(ToolRisk::kRead), "");
  EXPECT_EQ(keys.KeyFor(ToolRisk::kWrite), "plan:p1:s2:w0");
  keys.Ran(ToolRisk::kRead, absl::OkStatus());
  keys.Ran(ToolRisk::kWrite, absl::InvalidArgumentError("bad arguments: nothing ran"));
  EXPECT_EQ(keys.KeyFor(ToolRisk::kHigh), "plan:p1:s2:w0");
  keys.Ran(ToolRisk::kHigh, absl::OkStatus());
  EXPECT_EQ(keys.KeyFor(ToolRisk::kWrite), "plan:p1:s2:w1");
  keys.Ran(ToolRisk::kWrite, absl::UnavailableError("down: released, a retry runs it"));
  EXPECT_EQ(keys.KeyFor(ToolRisk::kWrite), "plan:p1:s2:w1");

  StepWriteKeys none;
  EXPECT_EQ(none.KeyFor(ToolRisk::kWrite), "");
}

}  // namespace
}  // namespace omniforge::executor
