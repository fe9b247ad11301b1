// A request to send an email ("email Sarah the agenda for tomorrow's design
// review", "send an email to John Smith about the budget", "write to Priya
// saying the demo moved to 3pm"), read from the message's words for a
// caller that sends without a model of its own (the orchestrator's email
// flow): to whom, about what, and what it should say. Pure functions,
// thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "services/intent/entities/email_entities.h"
#include "services/intent/entities/entities.h"  // kAttendeesEntity
#include "services/intent/src/model.h"

namespace omniforge::intent {

struct EmailRequest {
  // The names of the recipients, as written ("Sarah", "John Smith"), in order.
  std::vector<std::string> recipients;
  // What the message is about or carries, as written ("the agenda for
  // tomorrow's design review"); empty: not said.
  std::string topic;
  // What the message should say ("the demo moved to 3pm"); empty: not said.
  std::string says;
  // Whether the topic is what is sent ("email Sarah the agenda") rather
  // than what the message is about ("about the budget").
  bool sends_topic = false;
};

// The email `message` asks to send: "email"/"mail"/"e-mail" followed by
// names, "send (an email|a note|a message) to" names, "send" names "an
// email", "write to" names, "drop" names "a line" (capitalized names,
// joined by "and" or commas), then what it is about ("about", "regarding",
// or the thing sent) and what it says ("saying", "to say", "telling them",
// a colon). nullopt for anything else, and for a request about agents or
// recurring work ("an agent that emails Sarah every week").
std::optional<EmailRequest> ReadEmailRequest(std::string_view message);

// The entities of `request`: email_to (names joined with ", "),
// email_subject (a subject line), email_body (the message's sentence, no
// greeting: the sender greets the recipients by their names).
std::map<std::string, std::string> EmailEntities(const EmailRequest& request);

// Sets in `analysis` (once its action and details are settled) what an
// email request asks: EXECUTE_TASK, sure and unambiguous, with the email's
// entities and no agent, question or draft details. Nothing for a reply
// to what is pending (a question, or actions previewed).
void ApplyEmailRequest(const IntentRequest& request, IntentAnalysis& analysis);

}  // namespace omniforge::intent
