// A request of several parts ("can one of my agents chase the overdue
// invoices and also post a weekly summary to slack?") that one of the
// user's agents covers only in part. The local policy then says which agent
// partly fits and why (the part it covers, the part it does not) and offers
// the ways on: run it anyway, create a new agent that does all of it, or
// change the agent so that it does the rest.
//
// Pure functions: no I/O, deterministic, thread-safe.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "services/orchestrator/flow/move.h"
#include "services/orchestrator/planner/local_policy.h"

namespace omniforge::orchestrator {

// The parts of a request: its clauses joined by "and also", "and then",
// "as well as", "plus" or "and" (each part at least two words; a clause too
// short stays with the one before), without the request's frame ("can one
// of my agents", "could you") and its closing punctuation. One part when
// the request has no such joints.
std::vector<std::string> RequestParts(const std::string& message);

struct PartialFit {
  AgentInfo agent;
  std::vector<std::string> covered;    // the parts that name the agent
  std::vector<std::string> uncovered;  // the parts it does not cover
  // Of the uncovered parts, those another agent covers: part -> agent.
  std::vector<std::pair<std::string, std::string>> elsewhere;
};

// The agent that covers the most parts of `message` (a part covers the
// agent it names, loosely: intent::MatchCatalogItem; the first such agent
// on a tie) when some part is covered by no agent at all; nullopt for a
// request of one part, when no agent covers any part, or when the agents
// cover every part between them.
std::optional<PartialFit> FindPartialFit(const std::string& message,
                                         const std::vector<AgentInfo>& agents);

// The options, numbered so that "the second one" answers: run the agent
// anyway, create a new agent that does all of it, change the agent. A
// clarifying question (kAskedOption) whose flow keeps the agent
// (kOptionAgent), the parts it lacks (kOptionChange) and the whole request
// (kRequestedTask).
Move OfferPartialFit(const PolicyInput& input, const PartialFit& fit);

// The flow's entities the options keep. They are the policy's own: the
// intent service is not given them with the history (IsOptionEntity), and
// the policy reads them only in the turn that answers the options.
inline constexpr char kOptionAgent[] = "option_agent";
inline constexpr char kOptionChange[] = "option_change";
inline constexpr char kRequestedTask[] = "requested_task";

bool IsOptionEntity(const std::string& key);

}  // namespace omniforge::orchestrator
