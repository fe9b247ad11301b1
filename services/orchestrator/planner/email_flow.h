// The email flow of local mode: "email Sarah the agenda for tomorrow's
// design review" sent over the email and contacts domain tools, turn by
// turn through the flow's state.
//
//   1. each recipient the intent service read (`email_to`) is looked up
//      with contacts__find_contacts: two or more matches are offered as
//      numbered options ("Which John do you mean?"); none: the user is told
//      and asked who they mean;
//   2. the message is drafted with email__draft_message (a READ: a draft
//      sends nothing): the subject (`email_subject`) and a body greeting
//      the recipients by their first names around what the intent service
//      read it should say (`email_body`);
//   3. sending it, email__send_message (WRITE) with the draft's to,
//      subject, body and draft_id, is proposed: the approval gate previews
//      it and sends it on the user's "yes", or drops it on "no" (the draft
//      stays among the drafts; nothing is sent).
//
// As the meeting flow (meeting_flow.h), the flow reads no words of the
// user's: what is asked for is the intent service's reading, an answer is
// the option it read or a name the contacts tool looks up as written. The
// flow's progress is kept in the flow's entities (email_flow_* keys), so
// any replica goes on with it.
//
// Pure functions but RunEmailFlow, whose calls run through the caller:
// no I/O, deterministic, thread-safe.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "omniforge/intent/v1/intent_service.pb.h"
#include "services/orchestrator/flow/flow_state.h"
#include "services/orchestrator/flow/move.h"
#include "services/orchestrator/planner/local_policy.h"

namespace omniforge::orchestrator {

// What a clarifying question of the email flow asks for (Move::asked):
// which contact.
inline constexpr char kAskedEmail[] = "email";

// The email's state as the flow's entities hold it.
using EmailState = std::map<std::string, std::string>;

// One step of a turn of the flow: a call to run (its result goes to
// TakeEmailResult, then NextEmailStep again), or the turn's move.
struct EmailStep {
  std::optional<ToolStep> call;
  Move move;
};

// True when this turn starts an email flow (an EXECUTE_TASK with
// email_to) or answers the flow's own question.
bool IsEmailTurn(const PolicyInput& input);

// The email's state at the start of the turn: a new request's entities,
// or the flow's state with the answer to its question applied.
EmailState EmailAtStart(const PolicyInput& input);

// The next step of the turn. Updates `email` with what the step asks.
EmailStep NextEmailStep(EmailState& email);

// Takes in the result of `call` (a domain tool's result through the
// executor: {"status", "data", ...}, or an error result).
void TakeEmailResult(EmailState& email, const ToolStep& call, const nlohmann::json& result,
                     bool is_error);

// How the turn runs one of the flow's calls: the result and whether it is
// an error; nullopt when a guardrail stopped the turn or a newer message
// set the flow aside.
using EmailToolRun =
    std::function<std::optional<std::pair<nlohmann::json, bool>>(const ToolStep& call)>;

// A turn of the flow (stage Decide in local mode): its calls run by `run`
// one after the other, each result taken in, until the flow asks, proposes
// sending, or stops (a move without a reply when `run` gives nullopt).
Move RunEmailFlow(EmailState email, const EmailToolRun& run);

// The analysis of the user's answer to the flow's question: the flow's
// action and state with the option `heard` picked, whether it declines,
// and the answer as written (for the contacts tool to look up).
::omniforge::intent::v1::IntentAnalysis EmailAnswer(
    const FlowState& last, const ::omniforge::intent::v1::IntentAnalysis& heard,
    const std::string& message);

// True for the keys of the flow's own progress in its entities.
bool IsEmailProgress(const std::string& key);

// The words for a message sent (or one the mailbox refused), for the reply
// after an approved email__send_message; empty for any other tool.
std::string DescribeEmailResult(const ToolStep& step, const nlohmann::json& result, bool is_error);

}  // namespace omniforge::orchestrator
