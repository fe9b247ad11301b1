// A request of several parts ("can one of my agents chase the overdue
// invoices and also post a weekly summary to slack?") that one of the
// user's agents covers only in part; the parts and the agent each names are
// the intent service's reading (IntentAnalysis.parts). The local policy then says which agent
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

struct PartialFit {
  AgentInfo agent;
  std::vector<std::string> covered;    // the parts that name the agent
  std::vector<std::string> uncovered;  // the parts it does not cover
  // Of the uncovered parts, those another agent covers: part -> agent.
  std::vector<std::pair<std::string, std::string>> elsewhere;
};

// The agent that covers the most parts of the request `intent` read (its
// `parts`: a part covers the agent it names; the first such agent on a
// tie) when some part is covered by no agent at all; nullopt for a request
// of one part, when no agent covers any part, or when the agents cover
// every part between them. A part naming an agent not in `agents` covers
// none.
std::optional<PartialFit> FindPartialFit(const ::omniforge::intent::v1::IntentAnalysis& intent,
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
