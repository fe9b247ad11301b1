// The shipped model and rules, measured the way `make intent-eval` does:
// omniforge-intent-eval starts the real omniforge-intent binary in local
// mode and sends it the dev split, the follow-up sets and the
// clarify-or-proceed sets (dev and held out) over gRPC.
//
// The floors below are just under what the service reaches today (0.939
// on the dev split, 0.951 on the 876 dev follow-ups, 0.921 on the 597 dev
// clarify-or-proceed cases; 0.826 and 0.739 on the held-out sets at the
// last end-of-round measurement; see docs/intent.md), so a change that
// makes understanding worse fails here. The dev split's floor stays at the
// target (0.92); the held-out floors are the figures of an end-of-round
// measurement minus 0.01, rounded down. One dev follow-up is about
// 0.0011, one held-out follow-up 0.004, one dev clarify case 0.0017, one
// held-out clarify case 0.007.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <sstream>
#include <string>

namespace {

std::map<std::string, double> ResultLine(const std::string& output) {
  std::map<std::string, double> out;
  const size_t at = output.rfind("RESULT ");
  if (at == std::string::npos) return out;
  std::istringstream fields(output.substr(at + 7));
  std::string field;
  while (fields >> field) {
    const size_t eq = field.find('=');
    if (eq != std::string::npos) out[field.substr(0, eq)] = std::stod(field.substr(eq + 1));
  }
  return out;
}

TEST(IntentEvalTest, UnderstandingDoesNotFallBelowWhatItReaches) {
  std::string output;
  FILE* pipe = popen(OMNIFORGE_INTENT_EVAL " --spawn 2>&1", "r");
  ASSERT_NE(pipe, nullptr);
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe)) output.append(buffer, n);
  ASSERT_EQ(pclose(pipe), 0) << output;
  const auto result = ResultLine(output);
  for (const char* key : {"intent_accuracy", "followup_accuracy", "followup_holdout_accuracy",
                          "followup_holdout_older_accuracy", "clarify_accuracy",
                          "clarify_holdout_accuracy", "p99_ms"}) {
    ASSERT_TRUE(result.contains(key)) << key << "\n" << output;
  }
  EXPECT_GE(result.at("intent_accuracy"), 0.92) << output;
  EXPECT_GE(result.at("followup_accuracy"), 0.94) << output;
  EXPECT_GE(result.at("followup_holdout_accuracy"), 0.81) << output;
  // The 128 held-out follow-ups first written, on their own (0.922 today):
  // growing the set must not hide a regression on them.
  EXPECT_GE(result.at("followup_holdout_older_accuracy"), 0.91) << output;
  EXPECT_GE(result.at("clarify_accuracy"), 0.91) << output;
  EXPECT_GE(result.at("clarify_holdout_accuracy"), 0.72) << output;
  EXPECT_GT(result.at("p50_ms"), 0);
}

}  // namespace
