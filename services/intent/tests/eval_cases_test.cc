// The scoring both measurements share (eval_cases.h): what makes a
// follow-up or a clarify-or-proceed case right, and how a set is read.
#include "services/intent/eval_cases.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "libs/core/ids.h"

namespace omniforge::intent::eval {
namespace {

namespace pb = ::omniforge::intent::v1;

// A file of `lines` in the temporary directory, removed with this object.
class CaseFile final {
 public:
  explicit CaseFile(const std::string& lines)
      : path_(
            (std::filesystem::temp_directory_path() / ("eval-cases-" + core::NewUuid())).string()) {
    std::ofstream(path_) << lines;
  }
  ~CaseFile() { std::filesystem::remove(path_); }
  CaseFile(const CaseFile&) = delete;
  CaseFile& operator=(const CaseFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

LabelledCase OneCase(const std::string& line) {
  CaseFile file(line + "\n");
  absl::StatusOr<std::vector<LabelledCase>> cases = ReadCases(file.path());
  EXPECT_TRUE(cases.ok()) << cases.status();
  EXPECT_EQ(cases->size(), 1u);
  return cases->front();
}

pb::IntentAnalysis Analysis(pb::ActionType action, const std::string& agent = "") {
  pb::IntentAnalysis analysis;
  analysis.set_action_type(action);
  if (!agent.empty()) (*analysis.mutable_entities())["agent_name"] = agent;
  return analysis;
}

TEST(EvalCasesTest, ACaseIsReadWithItsAgentsHistoryAndExpectationAndMakesItsRequest) {
  const LabelledCase c = OneCase(
      R"({"id": "ordinal-a012", "agents": [{"name": "a", "description": "the a"}, {"name": "b"}],)"
      R"( "history": [{"role": "user", "content": "list"}, {"role": "assistant", "content": "1. a"}],)"
      R"( "message": "run the first", "expect": {"action_type": "EXECUTE_TASK", "agent_name": "a",)"
      R"( "summary_worthy": false}})");
  EXPECT_EQ(c.category, "ordinal");
  EXPECT_FALSE(IsOlderCase(c));
  EXPECT_EQ(c.expect.summary_worthy, false);
  const pb::AnalyzeIntentRequest request = RequestOf(c);
  EXPECT_EQ(request.message(), "run the first");
  ASSERT_EQ(request.available_agents_size(), 2);
  EXPECT_EQ(request.available_agents(0).description(), "the a");
  EXPECT_EQ(request.available_agents(1).description(), "");
  ASSERT_EQ(request.history_size(), 2);
  EXPECT_EQ(request.history(1).role(), pb::TURN_ROLE_ASSISTANT);
}

TEST(EvalCasesTest, ASetThatCannotBeReadIsAnError) {
  EXPECT_EQ(ReadCases("/nonexistent/cases.jsonl").status().code(), absl::StatusCode::kNotFound);
  CaseFile not_json("{not json\n");
  EXPECT_EQ(ReadCases(not_json.path()).status().code(), absl::StatusCode::kInvalidArgument);
  CaseFile no_message(R"({"id": "x-1", "expect": {}})"
                      "\n");
  EXPECT_EQ(ReadCases(no_message.path()).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(EvalCasesTest, AFollowUpIsRightOnlyWithTheActionTheAgentTheValueAndTheSummaryFlag) {
  const LabelledCase c =
      OneCase(R"({"id": "correction-001", "message": "make it 9am", "expect": {"action_type":)"
              R"( "UPDATE_AGENT", "agent_name": "digest", "corrected_value": "9AM"}})");
  EXPECT_TRUE(IsOlderCase(c));
  FollowupTally tally;
  pb::IntentAnalysis right = Analysis(pb::ACTION_TYPE_UPDATE_AGENT, "digest");
  (*right.mutable_entities())["corrected_value"] = "at 9am";
  EXPECT_TRUE(tally.Add(c, right));
  EXPECT_FALSE(tally.Add(c, Analysis(pb::ACTION_TYPE_UPDATE_AGENT, "digest"))) << "no value";
  pb::IntentAnalysis other_agent = right;
  (*other_agent.mutable_entities())["agent_name"] = "chaser";
  EXPECT_FALSE(tally.Add(c, other_agent));

  const LabelledCase no_agent =
      OneCase(R"({"id": "recap-002", "message": "so?", "expect": {"action_type": "CONVERSATION",)"
              R"( "summary_worthy": true}})");
  pb::IntentAnalysis recap = Analysis(pb::ACTION_TYPE_CONVERSATION);
  recap.set_summary_worthy(true);
  EXPECT_TRUE(tally.Add(no_agent, recap));
  EXPECT_FALSE(tally.Add(no_agent, Analysis(pb::ACTION_TYPE_CONVERSATION))) << "summary";
  (*recap.mutable_entities())["agent_name"] = "digest";
  EXPECT_FALSE(tally.Add(no_agent, recap)) << "an agent where none is expected";

  EXPECT_EQ(tally.right(), 2);
  EXPECT_EQ(tally.total(), 6);
  EXPECT_EQ(tally.by_category().at("correction"), std::make_pair(1, 3));
  EXPECT_DOUBLE_EQ(tally.older_accuracy(), 1.0 / 3);
}

TEST(EvalCasesTest, AClarifyCaseIsRightWhenItAsksExactlyWhenItShouldAndOtherwiseActsRight) {
  const LabelledCase ask =
      OneCase(R"({"id": "deictic-001", "message": "run it", "expect": {"clarify": true,)"
              R"( "missing": ["agent"]}})");
  const LabelledCase proceed =
      OneCase(R"({"id": "fullspec-001", "message": "run digest", "expect": {"clarify": false,)"
              R"( "action_type": "EXECUTE_TASK", "agent_name": "digest"}})");
  ClarifyTally tally;
  pb::IntentAnalysis asked = Analysis(pb::ACTION_TYPE_EXECUTE_TASK);
  asked.mutable_clarification()->set_needed(true);
  asked.mutable_clarification()->add_missing(pb::MISSING_SLOT_AGENT);
  EXPECT_TRUE(tally.Add(ask, asked));
  EXPECT_FALSE(tally.Add(ask, Analysis(pb::ACTION_TYPE_EXECUTE_TASK)));
  EXPECT_TRUE(tally.Add(proceed, Analysis(pb::ACTION_TYPE_EXECUTE_TASK, "digest")));
  EXPECT_FALSE(tally.Add(proceed, Analysis(pb::ACTION_TYPE_EXECUTE_TASK, "chaser")));
  EXPECT_FALSE(tally.Add(proceed, asked));
  EXPECT_EQ(tally.right(), 2);
  EXPECT_DOUBLE_EQ(tally.missing_slot_recall(), 0.5);
}

TEST(EvalCasesTest, TwoAnswersCompareByWhatIsScoredAndWhetherTheyAsk) {
  pb::IntentAnalysis a = Analysis(pb::ACTION_TYPE_EXECUTE_TASK, "digest");
  pb::IntentAnalysis b = a;
  b.set_reasoning("another reason");
  EXPECT_EQ(AnswerOf(a), AnswerOf(b));
  EXPECT_EQ(AnswerOf(a), "EXECUTE_TASK/digest");
  b.mutable_clarification()->set_needed(true);
  b.mutable_clarification()->add_missing(pb::MISSING_SLOT_AGENT);
  EXPECT_EQ(AnswerOf(b), "EXECUTE_TASK/digest clarify agent");
}

}  // namespace
}  // namespace omniforge::intent::eval
