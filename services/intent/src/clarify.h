// The clarify-or-proceed decision: whether the assistant should ask before
// acting on a message, what the question has to settle and which of the
// user's agents to offer. Taken on its own, after the action is known, from
// a table of named conditions (docs/intent.md lists them): a "this" or
// "them" nothing binds, a description of something only the user has seen
// ("the rubric from the department meeting"), a new agent or skill with no
// purpose, a change with nothing to change, an agent several of the user's
// agents fit, a send with no recipient or no object. Answers to the
// assistant's own question and replies to its offers never ask again.
// Pure computation, no gRPC; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "services/intent/src/model.h"

namespace omniforge::intent {

// What the analysis decided before the clarify decision is taken.
struct ClarifyInput {
  const IntentRequest& request;
  Action action = Action::kUnknown;
  // The agent the analysis resolved, if any.
  std::optional<std::string> agent_name;
  // How the message leaned on the history (answers to offers never ask).
  Reference reference = Reference::kNone;
};

struct ClarifyDecision {
  Clarification clarification;
  // Names what is missing and offers the candidates; empty when proceeding.
  std::string question;
  // The conditions that held, in table order (for the reasoning and logs).
  std::vector<std::string_view> conditions;
  // The one agent of the user's that the message describes ("has the
  // report gone out?" with a single report agent), when the analysis named
  // none and the action is about an existing agent.
  std::optional<std::string> resolved_agent;
};

// Decides for one analysed message. Never fails; the input's request must
// outlive the call only.
ClarifyDecision DecideClarification(const ClarifyInput& input);

// Takes the decision for `analysis` of `request` and writes it in: the
// clarification; when needed, is_ambiguous, the clarifying question and the
// conditions in the reasoning; the agent resolved from a description when
// a local layer found none (an LLM answer keeps its own reading). An LLM
// answer's own clarification is weighed with the local decision: for an
// action that changes something (anything but a look, a talk or unknown)
// it asks when either asks; otherwise the model's decision stands.
void ApplyClarification(const IntentRequest& request, IntentAnalysis& analysis);

// "Which report, and who should get it?": the question for `missing`,
// offering `candidates` when there are some.
std::string ClarifyQuestion(const std::vector<MissingSlot>& missing,
                            const std::vector<std::string>& candidates, Action action);

}  // namespace omniforge::intent
