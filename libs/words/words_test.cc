// The tokenizers, the word lists as compiled in, and one list read by both
// services: a word of libs/words/data/confirm.txt is a yes to the
// orchestrator's approval gate and to the intent analysis alike.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "libs/words/lists.h"
#include "libs/words/tokens.h"
#include "services/intent/src/analyzer.h"
#include "services/intent/src/labeled_data.h"
#include "services/intent/src/reply.h"

namespace omniforge::words {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(TokensTest, AsciiAlnumKeepsOnlyLettersAndDigits) {
  EXPECT_THAT(Tokens("Don't STOP the café-bot #2?", Tokenizer::kAsciiAlnum),
              ElementsAre("don", "t", "stop", "the", "caf", "bot", "2"));
  EXPECT_THAT(Tokens(" ,;! ", Tokenizer::kAsciiAlnum), IsEmpty());
}

TEST(TokensTest, Utf8KeepsNonAsciiCharactersInWords) {
  EXPECT_THAT(Tokens("Don't STOP the café-bot #2?", Tokenizer::kUtf8),
              ElementsAre("don", "t", "stop", "the", "café", "bot", "2"));
  // The typographic apostrophe is a non-ASCII character: part of the word.
  EXPECT_THAT(Tokens("don’t", Tokenizer::kUtf8), ElementsAre("don’t"));
  EXPECT_THAT(Tokens("Ĳssel 日本", Tokenizer::kUtf8), ElementsAre("Ĳssel", "日本"));
}

TEST(TokensTest, NormalizedDropsApostrophesAndKeepsQuestionMarks) {
  EXPECT_THAT(Tokens("Don't STOP the café-bot #2?", Tokenizer::kNormalized),
              ElementsAre("dont", "stop", "the", "café", "bot", "2", "?"));
  EXPECT_THAT(Tokens("don’t", Tokenizer::kNormalized), ElementsAre("dont"));
  EXPECT_EQ(Normalize("  Don't RUN the Weekly-Sales-Digest, ok?? "),
            "dont run the weekly sales digest ok ? ?");
  EXPECT_THAT(SplitNormalized("run  it ?"), ElementsAre("run", "it", "?"));
}

TEST(TokensTest, PhrasesAndRuns) {
  const std::string normalized = Normalize("please go ahead and run it");
  const std::vector<std::string_view> words = SplitNormalized(normalized);
  EXPECT_EQ(FindPhrase(words, "go ahead"), 1);
  EXPECT_EQ(FindPhrase(words, "ahead go"), -1);
  EXPECT_TRUE(ContainsAnyPhrase(words, {"nothing", "run it"}));
  EXPECT_TRUE(ContainsRun({"a", "b", "c"}, {"b", "c"}));
  EXPECT_FALSE(ContainsRun({"a", "b"}, {}));
  // Names as whole words in any script, longest first, a shorter name
  // inside a longer one given not a mention of its own.
  EXPECT_EQ(MentionedNames("delete Alpha-2 and 日報", {"alpha", "alpha-2", "日報", "週報"}),
            (std::vector<std::string>{"alpha-2", "日報"}));
  EXPECT_EQ(MentionedNames("delete alpha", {"alpha", "alpha-2"}),
            (std::vector<std::string>{"alpha"}));
  EXPECT_TRUE(EndsWithQuestionMark("really? \n"));
  EXPECT_FALSE(EndsWithQuestionMark("? no"));
}

TEST(ListsTest, EveryListParsesLowerCaseWithoutDuplicates) {
  const std::vector<std::string> names = ListNames();
  ASSERT_FALSE(names.empty());
  for (const std::string& name : names) {
    const std::vector<Entry>& entries = Entries(name);
    EXPECT_FALSE(entries.empty()) << name;
    EXPECT_EQ(List(name).size(), entries.size()) << name << " repeats an entry";
    for (const Entry& entry : entries) {
      EXPECT_FALSE(entry.text.empty()) << name;
      EXPECT_EQ(entry.text, Lowercase(entry.text)) << name;
      EXPECT_NE(entry.text.front(), '@') << name << ": an include that is not a list";
    }
  }
}

TEST(ListsTest, IncludesAddTheBaseList) {
  for (const char* extended : {"confirm_reply", "confirm_intent"}) {
    for (const std::string& word : List("confirm")) {
      EXPECT_TRUE(Contains(extended, word)) << extended << " lacks " << word;
    }
  }
  EXPECT_TRUE(Contains("confirm_reply", "execute"));
  EXPECT_FALSE(Contains("confirm", "execute"));
  EXPECT_TRUE(Contains("decline_intent", "cancel"));  // through decline -> cancel
}

TEST(ListsTest, QuotesKeepSpacesAndValuesAreSplitOff) {
  EXPECT_TRUE(Contains("decline_substrings", "dont "));
  EXPECT_TRUE(ContainsAnySubstring("i dont think so", "decline_substrings"));
  EXPECT_FALSE(ContainsAnySubstring("dontcha", "decline_substrings"));
  std::map<std::string, std::string> positions;
  for (const Entry& entry : Entries("ordinals")) positions[entry.text] = entry.value;
  EXPECT_EQ(positions["second"], "2");
  EXPECT_EQ(positions["last"], "-1");
}

TEST(ListsTest, EntriesMatchAsRunsOfTheReadersWords) {
  // "let's go" is let, s, go to the reply reader's tokenizer, "lets go" to
  // the follow-up rules'.
  EXPECT_TRUE(ContainsAnyEntry(Tokens("ok, let's go!", Tokenizer::kUtf8), "confirm_phrases",
                               Tokenizer::kUtf8));
  EXPECT_FALSE(
      ContainsAnyEntry(Tokens("go later", Tokenizer::kUtf8), "confirm_phrases", Tokenizer::kUtf8));
  EXPECT_TRUE(ContainsAnyEntry(Tokens("Could you carry on?", Tokenizer::kAsciiAlnum), "resume",
                               Tokenizer::kAsciiAlnum));
  const std::string normalized = Normalize("oh and make it weekly");
  EXPECT_TRUE(ContainsAnyEntry(SplitNormalized(normalized), "change_intent"));
}

TEST(ListsDeathTest, AnUnknownListAborts) {
  EXPECT_DEATH(List("no_such_list"), "no such word list: no_such_list");
}

// Both readers of the intent service read confirm.txt and decline.txt:
// every word in them is a yes (a no) to the reply reader, reviewing a plan,
// and to the follow-up analysis, answering the assistant's offer. A word
// added to either file is checked here too.
class BothReadersTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto trained = intent::LocalClassifier::Train(intent::TrainingSplit());
    ASSERT_TRUE(trained.ok()) << trained.status();
    classifier_ = std::move(trained).value().release();
    analyzer_ = new intent::LocalAnalyzer(*classifier_);
  }
  static void TearDownTestSuite() {
    delete analyzer_;
    delete classifier_;
  }

  // What the intent analysis makes of `reply` to an offer to pause an agent.
  static intent::Reference IntentReads(const std::string& reply) {
    intent::IntentRequest request;
    request.message = reply;
    request.history = {{intent::Role::kAssistant, "Want me to pause invoice-chaser?"}};
    request.agents = {{"invoice-chaser", "Reminds customers about overdue invoices"}};
    return analyzer_->Analyze(request).analysis.reference;
  }

  // What the reply reader makes of `reply` to a plan under review.
  static intent::ReplyKind PlanReviewReads(const std::string& reply) {
    intent::IntentRequest request;
    request.message = reply;
    request.pending.plan = intent::PlanStage::kReview;
    return intent::ReadReply(request, intent::IntentAnalysis()).kind;
  }

  static intent::LocalClassifier* classifier_;
  static intent::LocalAnalyzer* analyzer_;
};

intent::LocalClassifier* BothReadersTest::classifier_ = nullptr;
intent::LocalAnalyzer* BothReadersTest::analyzer_ = nullptr;

TEST_F(BothReadersTest, AWordOfConfirmIsAYesToBoth) {
  for (const std::string& word : List("confirm")) {
    EXPECT_EQ(PlanReviewReads(word), intent::ReplyKind::kApprove) << word;
    EXPECT_EQ(IntentReads(word), intent::Reference::kConfirmation) << word;
  }
}

TEST_F(BothReadersTest, AWordOfDeclineOrCancelIsANoToBoth) {
  for (const char* list : {"decline", "cancel"}) {
    for (const std::string& word : List(list)) {
      EXPECT_EQ(PlanReviewReads(word), intent::ReplyKind::kReject) << word;
      EXPECT_EQ(IntentReads(word), intent::Reference::kDecline) << word;
    }
  }
}

}  // namespace
}  // namespace omniforge::words
