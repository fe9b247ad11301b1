#include "services/conversation/src/context_window.h"

#include <gtest/gtest.h>

#include "services/conversation/src/token_estimator.h"

namespace omniforge::conversation {
namespace {

Message Msg(int64_t seq, Role role, int tokens) {
  Message m;
  m.seq = seq;
  m.role = role;
  m.token_count = tokens;
  m.content = "m" + std::to_string(seq);
  return m;
}

// Feeds `all` (ascending) newest-first, as the logic does.
ContextWindow Assemble(const std::vector<Message>& all, ContextWindowOptions options) {
  ContextWindowAssembler assembler(options);
  // NOLINTNEXTLINE(modernize-loop-convert): clang 14 cannot compile libstdc++ 12's views::reverse
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (!assembler.Offer(*it)) return std::move(assembler).Finish(true);
  }
  return std::move(assembler).Finish(false);
}

std::vector<int64_t> Seqs(const ContextWindow& w) {
  std::vector<int64_t> seqs;
  for (const Message& m : w.messages) seqs.push_back(m.seq);
  return seqs;
}

TEST(ContextWindowTest, SmallConversationIsReturnedWholeOldestFirst) {
  std::vector<Message> all = {Msg(1, Role::kUser, 10), Msg(2, Role::kAssistant, 10)};
  ContextWindow w = Assemble(all, {});
  EXPECT_EQ(Seqs(w), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(w.total_tokens, 20);
  EXPECT_FALSE(w.truncated);
}

TEST(ContextWindowTest, RecentExchangesAreKeptEvenOverBudget) {
  // Three exchanges of 500 tokens per message: 3000 tokens > 2000 budget.
  std::vector<Message> all;
  for (int i = 0; i < 5; ++i) {
    all.push_back(Msg(2 * i + 1, Role::kUser, 500));
    all.push_back(Msg(2 * i + 2, Role::kAssistant, 500));
  }
  ContextWindow w = Assemble(all, {2000, 3});
  EXPECT_EQ(Seqs(w), (std::vector<int64_t>{5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(w.total_tokens, 3000);
  EXPECT_TRUE(w.truncated);
}

// A live probe stored one user message and 80 replies of 64 KiB: the last
// exchange alone was 5 MiB, over gRPC's 4 MiB, and every later turn of that
// conversation reported storage unavailable.
TEST(ContextWindowTest, RecentExchangesAreBoundedInBytesToo) {
  std::vector<Message> all = {Msg(1, Role::kUser, 10)};
  for (int i = 0; i < 80; ++i) {
    all.push_back(Msg(i + 2, Role::kAssistant, 16000));
    all.back().content = std::string(size_t{64} * 1024, 'r');
  }
  ContextWindow w = Assemble(all, {2000, 3});
  EXPECT_TRUE(w.truncated);
  size_t bytes = 0;
  for (const Message& m : w.messages) bytes += m.content.size() + m.metadata_json.size();
  EXPECT_LE(bytes, size_t{2} * 1024 * 1024);
  EXPECT_EQ(w.messages.size(), 31u) << "as many of the newest as fit in 2 MiB";
  EXPECT_EQ(w.messages.back().seq, 81) << "the newest are the ones kept";
}

TEST(ContextWindowTest, TheNewestMessageIsKeptWhateverItsSize) {
  std::vector<Message> all = {Msg(1, Role::kUser, 10), Msg(2, Role::kAssistant, 10)};
  all.back().content = std::string(size_t{64} * 1024, 'r');
  ContextWindowOptions options;
  options.max_bytes = 1024;
  ContextWindow w = Assemble(all, options);
  EXPECT_EQ(Seqs(w), (std::vector<int64_t>{2}));
  EXPECT_TRUE(w.truncated);
}

TEST(ContextWindowTest, ToolAndPlannerMessagesBelongToTheirExchange) {
  std::vector<Message> all = {Msg(1, Role::kUser, 10),    Msg(2, Role::kAssistant, 10),
                              Msg(3, Role::kUser, 10),    Msg(4, Role::kTool, 10),
                              Msg(5, Role::kPlanner, 10), Msg(6, Role::kAssistant, 10)};
  ContextWindow w = Assemble(all, {0, 1});  // budget 0: only the last exchange
  EXPECT_EQ(Seqs(w), (std::vector<int64_t>{3, 4, 5, 6}));
  EXPECT_TRUE(w.truncated);
}

TEST(ContextWindowTest, OlderMessagesFillTheBudgetNewestFirstWithoutHoles) {
  std::vector<Message> all = {Msg(1, Role::kUser, 10), Msg(2, Role::kAssistant, 300),
                              Msg(3, Role::kUser, 10), Msg(4, Role::kAssistant, 50),
                              Msg(5, Role::kUser, 10), Msg(6, Role::kAssistant, 10)};
  // Recent: 5, 6 (20 tokens). Then 4 (70 total) fits, 3 (80) fits, 2 (380)
  // does not fit in 100, and 1 would fit but must not leave a hole.
  ContextWindow w = Assemble(all, {100, 1});
  EXPECT_EQ(Seqs(w), (std::vector<int64_t>{3, 4, 5, 6}));
  EXPECT_EQ(w.total_tokens, 80);
  EXPECT_TRUE(w.truncated);
}

TEST(ContextWindowTest, ExactlyFillingTheBudgetIsAllowed) {
  std::vector<Message> all = {Msg(1, Role::kSystem, 40), Msg(2, Role::kUser, 60)};
  ContextWindow w = Assemble(all, {100, 1});
  EXPECT_EQ(Seqs(w), (std::vector<int64_t>{1, 2}));
  EXPECT_FALSE(w.truncated);
}

TEST(TokenEstimatorTest, CountsWordPiecesPunctuationAndFraming) {
  HeuristicTokenEstimator estimator;
  EXPECT_EQ(estimator.CountMessage(""), 4);
  EXPECT_EQ(estimator.CountMessage("hello"), 4 + 2);                 // 5 letters -> 2 pieces
  EXPECT_EQ(estimator.CountMessage("Hi, Bob!"), 4 + 1 + 1 + 1 + 1);  // Hi , Bob !
  EXPECT_EQ(estimator.CountMessage("日本語"), 4 + 3);                // one per code point
  EXPECT_EQ(estimator.Name(), "heuristic-v1");
}

TEST(TokenEstimatorTest, EnglishProseIsInTheRangeOfRealTokenizers) {
  HeuristicTokenEstimator estimator;
  // cl100k encodes this sentence as 20 tokens.
  const std::string text =
      "Our Monday Notion updates take hours to write. Can you help me automate them?";
  const int tokens = estimator.CountMessage(text) - 4;
  EXPECT_GE(tokens, 16);
  EXPECT_LE(tokens, 26);
}

}  // namespace
}  // namespace omniforge::conversation
