// What a message does to what the assistant waits on (IntentRequest::pending):
// approve, reject or edit the actions previewed, review the plan, answer the
// question asked, resume what was set aside, ask for a recap, or make a new
// request that leaves everything waiting.
//
// Read by rules in every mode, never by a model: an approval is words that
// say nothing but yes (yes words, filler, the pending tools' and targets'
// names), and a reply that names another target, another setting or a
// change is never one, whatever the analysis says. The orchestrator's
// approval gate checks the same of every approval it is given (another
// agent named, another setting): two readers must agree before anything
// runs.
//
// The words: libs/words/data (confirm_reply, decline_reply, change_reply,
// filler_reply, confirm_phrases, revise, resume and the substring lists).
// Pure functions, thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "services/intent/src/model.h"

namespace omniforge::intent {

// The decision for `request.message`, given `request.pending` and the
// message's own `analysis` (its entities, reference and summary_worthy).
// Precedence: a resume of the flow set aside; the plan (review, a step's
// question, "continue"); the actions previewed; the question asked; then,
// with nothing of these, RESUME for words that ask to go on, RECAP, or
// NEW_REQUEST.
ReplyDecision ReadReply(const IntentRequest& request, const IntentAnalysis& analysis);

// A short message (at most ten words) whose words ask to go on with what
// was being done: "continue", "go on with that", "back to what we were
// doing" ("make it run continuously" or "pick up the logs" are other
// requests).
bool AsksToResume(std::string_view message);

// The agents of `agents` that `message` names (words::MentionedNames, as
// the approval gate reads them).
std::vector<std::string> NamedAgents(std::string_view message,
                                     const std::vector<CatalogItem>& agents);

}  // namespace omniforge::intent
