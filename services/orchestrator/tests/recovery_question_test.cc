#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "services/orchestrator/flow/flow_state.h"
#include "services/orchestrator/flow/recovery.h"

namespace omniforge::orchestrator {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(RecoveryQuestionTest, TheOptionsFitTheFailure) {
  EXPECT_THAT(RecoveryOptions(false, false), ElementsAre(kOptionTryAgain, kOptionCancel));
  EXPECT_THAT(RecoveryOptions(true, false),
              ElementsAre(kOptionTryAgain, kOptionSkip, kOptionCancel));
  EXPECT_THAT(RecoveryOptions(true, true),
              ElementsAre(kOptionTryAgain, kOptionSkip, kOptionOtherAgent, kOptionCancel));
}

TEST(RecoveryQuestionTest, TheQuestionSaysWhatFailedWhyAndTheNumberedOptions) {
  Recovery failed;
  failed.what = "the tool list_runs";
  failed.detail = "Lists an agent's runs";
  failed.reason = "no agent named ghost";
  failed.options = RecoveryOptions(true, true);
  EXPECT_EQ(RecoveryQuestion(failed),
            "This did not work: the tool list_runs (Lists an agent's runs) failed: no agent named "
            "ghost.\nWhat would you like me to do?\n1. Try again\n2. Skip it and continue\n3. Use "
            "another agent\n4. Cancel\nAnswer with a number or the option's words.");
}

TEST(RecoveryQuestionTest, AnAnswersPositionPicksAmongTheOptionsOffered) {
  Recovery failed;
  failed.options = RecoveryOptions(false, false);  // try again, cancel
  EXPECT_EQ(RecoveryChoiceOf(failed, 1), RecoveryChoice::kTryAgain);
  EXPECT_EQ(RecoveryChoiceOf(failed, 2), RecoveryChoice::kCancel);
  EXPECT_EQ(RecoveryChoiceOf(failed, 0), std::nullopt);
  EXPECT_EQ(RecoveryChoiceOf(failed, 3), std::nullopt);
  failed.options = RecoveryOptions(true, true);
  EXPECT_EQ(RecoveryChoiceOf(failed, 2), RecoveryChoice::kSkip);
  EXPECT_EQ(RecoveryChoiceOf(failed, 3), RecoveryChoice::kOtherAgent);
}

TEST(RecoveryQuestionTest, TheReasonIsTheFailuresMessageBounded) {
  EXPECT_EQ(FailureReason(absl::NotFoundError("no such project"), json::object()),
            "no such project");
  EXPECT_EQ(FailureReason(absl::OkStatus(),
                          json{{"error", {{"code", "not_found"}, {"message", "no agent"}}}}),
            "no agent");
  EXPECT_EQ(FailureReason(absl::OkStatus(), json{{"error", {{"code", "forbidden"}}}}), "forbidden");
  EXPECT_EQ(FailureReason(absl::OkStatus(), json::array()), "it failed");
  const std::string huge(10000, 'x');
  EXPECT_LE(FailureReason(absl::InvalidArgumentError(huge), json::object()).size(),
            kMaxReasonBytes);
}

TEST(RecoveryQuestionTest, AnAgentNotFoundIsANotFoundOfACallThatNamesOne) {
  const json on_agent = {{"agent", "ghost"}};
  const json tool_not_found = {{"error", {{"code", "not_found"}, {"message", "no agent"}}}};
  EXPECT_TRUE(AgentNotFound(absl::NotFoundError("no agent"), json::object(), on_agent));
  EXPECT_TRUE(AgentNotFound(absl::OkStatus(), tool_not_found, {{"agent_name", "ghost"}}));
  EXPECT_FALSE(AgentNotFound(absl::OkStatus(), tool_not_found, {{"project", "apollo"}}));
  EXPECT_FALSE(AgentNotFound(absl::InvalidArgumentError("bad"), json::object(), on_agent));
}

TEST(RecoveryQuestionTest, TheFlowKeepsTheFailureUntilTheAnswer) {
  FlowState state;
  state.asked = "recovery";
  Recovery failed;
  failed.what = "the tool create_agent";
  failed.reason = "the workspace is read-only";
  failed.failed = {"create_agent", {{"name", "x"}}, "turn:c:t:0"};
  failed.rest = {{"run_agent", {{"agent", "x"}}, ""}};
  failed.options = RecoveryOptions(true, false);
  state.recovery = failed;
  const FlowState read = FlowStateFromJson(FlowStateToJson(state));
  ASSERT_TRUE(read.recovery.has_value());
  EXPECT_EQ(read.recovery->what, failed.what);
  EXPECT_EQ(read.recovery->reason, failed.reason);
  EXPECT_EQ(read.recovery->failed.arguments, failed.failed.arguments);
  EXPECT_EQ(read.recovery->failed.idempotency_key, "turn:c:t:0");
  ASSERT_EQ(read.recovery->rest.size(), 1u);
  EXPECT_EQ(read.recovery->rest[0].tool, "run_agent");
  EXPECT_EQ(read.recovery->options, failed.options);
  // A state written before: none.
  EXPECT_FALSE(FlowStateFromJson(json{{"flow_id", "f"}}).recovery.has_value());
  EXPECT_FALSE(RecoveryFromJson("not an object").has_value());
}

}  // namespace
}  // namespace omniforge::orchestrator
