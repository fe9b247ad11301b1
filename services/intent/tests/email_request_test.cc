// An email request read from the message: to whom, about what, what it
// says (email_request.h).
#include "services/intent/src/email_request.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace omniforge::intent {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

TEST(EmailRequestTest, TheThingSentToANamedRecipient) {
  const auto email = ReadEmailRequest("email Sarah the agenda for tomorrow's design review");
  ASSERT_TRUE(email.has_value());
  EXPECT_THAT(email->recipients, ElementsAre("Sarah"));
  EXPECT_EQ(email->topic, "the agenda for tomorrow's design review");
  EXPECT_TRUE(email->sends_topic);
  EXPECT_THAT(
      EmailEntities(*email),
      UnorderedElementsAre(Pair("email_to", "Sarah"),
                           Pair("email_subject", "The agenda for tomorrow's design review"),
                           Pair("email_body", "Here is the agenda for tomorrow's design review.")));
}

TEST(EmailRequestTest, FramesNamesTopicsAndWhatItSays) {
  auto email = ReadEmailRequest("Can you send an email to John Smith and Priya about the budget?");
  ASSERT_TRUE(email.has_value());
  EXPECT_THAT(email->recipients, ElementsAre("John Smith", "Priya"));
  EXPECT_EQ(email->topic, "the budget");
  EXPECT_FALSE(email->sends_topic);
  EXPECT_EQ(EmailEntities(*email).at("email_body"), "I'm writing about the budget.");

  email = ReadEmailRequest("send Sarah a note saying the demo moved to 3pm");
  ASSERT_TRUE(email.has_value());
  EXPECT_THAT(email->recipients, ElementsAre("Sarah"));
  EXPECT_EQ(email->says, "the demo moved to 3pm");
  EXPECT_EQ(EmailEntities(*email).at("email_subject"), "The demo moved to 3pm");
  EXPECT_EQ(EmailEntities(*email).at("email_body"), "The demo moved to 3pm.");

  email = ReadEmailRequest(
      "write to Miguel, Sarah Chen and John Doe about the launch: it moves to Friday");
  ASSERT_TRUE(email.has_value());
  EXPECT_THAT(email->recipients, ElementsAre("Miguel", "Sarah Chen", "John Doe"));
  EXPECT_EQ(email->topic, "the launch");
  EXPECT_EQ(email->says, "it moves to Friday");

  email = ReadEmailRequest("please mail Priya the notes from today's sync");
  ASSERT_TRUE(email.has_value());
  EXPECT_THAT(email->recipients, ElementsAre("Priya"));
  EXPECT_EQ(email->topic, "the notes from today's sync");
}

TEST(EmailRequestTest, NotAnEmailToSend) {
  EXPECT_FALSE(ReadEmailRequest("email them the parking details").has_value());
  EXPECT_FALSE(ReadEmailRequest("email these notes to everyone who was in the meeting"));
  EXPECT_FALSE(ReadEmailRequest("check my email").has_value());
  EXPECT_FALSE(ReadEmailRequest("send the report").has_value());
  EXPECT_FALSE(ReadEmailRequest("send Sarah the weekly digest").has_value());
  EXPECT_FALSE(ReadEmailRequest("schedule a call with Sarah tomorrow").has_value());
}

TEST(EmailRequestTest, AppliedAsATaskButNotForAgentsOrAnswers) {
  IntentRequest request;
  request.message = "email Sarah the agenda for tomorrow's design review";
  IntentAnalysis analysis;
  analysis.action = Action::kCreateAgent;
  analysis.is_ambiguous = true;
  analysis.clarifying_question = "What should it do?";
  analysis.entities["recipients"] = "Sarah";
  ApplyEmailRequest(request, analysis);
  EXPECT_EQ(analysis.action, Action::kExecuteTask);
  EXPECT_FALSE(analysis.is_ambiguous);
  EXPECT_TRUE(analysis.clarifying_question.empty());
  EXPECT_FALSE(analysis.entities.contains("recipients"));
  EXPECT_EQ(analysis.entities.at("email_to"), "Sarah");

  IntentRequest agent;
  agent.message = "email Sarah the sales figures every monday";
  IntentAnalysis drafted;
  drafted.action = Action::kCreateAgent;
  ApplyEmailRequest(agent, drafted);
  EXPECT_EQ(drafted.action, Action::kCreateAgent);

  IntentRequest answer = request;
  answer.pending.question = QuestionKind::kOption;
  IntentAnalysis reply;
  ApplyEmailRequest(answer, reply);
  EXPECT_FALSE(reply.entities.contains("email_to"));
}

}  // namespace
}  // namespace omniforge::intent
