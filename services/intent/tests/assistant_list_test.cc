// The lists an assistant writes in text (assistant_list.h): every form is
// read in the order the user sees it.
#include "services/intent/src/assistant_list.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace omniforge::intent {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::vector<CatalogItem> Agents() {
  return {{"invoice-ocr", ""}, {"payment-run-prep", ""}, {"credit-note-matcher", ""}};
}

TEST(ListItemsTest, ReadsLinesNumbersBulletsAndRows) {
  EXPECT_THAT(ListItems("Finance agents:\n1. invoice-ocr\n2. payment-run-prep"),
              ElementsAre("invoice-ocr", "payment-run-prep"));
  // Numbered lines are counted by their numbers.
  EXPECT_THAT(ListItems("2) b — second\n1) a — first"), ElementsAre("a — first", "b — second"));
  EXPECT_THAT(ListItems("• x: does x\n• y: does y"), ElementsAre("x: does x", "y: does y"));
  EXPECT_THAT(ListItems("name | what\n---|---\nx | does x\ny | does y"),
              ElementsAre("name", "x", "y"));
  // "3.5 hours" opens no entry.
  EXPECT_THAT(ListItems("3.5 hours were logged.\nThat is all."), IsEmpty());
}

TEST(ListItemsTest, ReadsInlineNumbersAndProse) {
  EXPECT_THAT(ListItems("Agents for Year 9: 1) a, 2) b, 3) c."), ElementsAre("a", "b", "c"));
  EXPECT_THAT(ListItems("You've got a, b, c and d."), ElementsAre("You've got a", "b", "c", "d"));
  EXPECT_THAT(ListItems("They run in this order: a, then b, and finally c."),
              ElementsAre("a", "b", "c"));
  EXPECT_THAT(ListItems("Done."), IsEmpty());
}

TEST(ListedAgentsTest, OneAgentPerEntryInListOrder) {
  // credit-note-matcher is named in a description, not listed.
  EXPECT_THAT(ListedAgents("1. invoice-ocr — hands drafts to credit-note-matcher\n"
                           "2. payment-run-prep — prepares the Thursday run",
                           Agents()),
              ElementsAre("invoice-ocr", "payment-run-prep"));
  // Prose lists in the order it names them, across sentences.
  EXPECT_THAT(ListedAgents("Live: invoice-ocr and payment-run-prep. There's also "
                           "credit-note-matcher, paused.",
                           Agents()),
              ElementsAre("invoice-ocr", "payment-run-prep", "credit-note-matcher"));
  EXPECT_THAT(ListedAgents("invoice-ocr ran at 9.", Agents()), IsEmpty());
}

}  // namespace
}  // namespace omniforge::intent
