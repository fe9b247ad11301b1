// The answer to "where were we?" in local mode: a recap of the conversation
// built from its stored history (the words of every turn, plain text ones
// too, and the routing stored with the assistant's) and the state of the
// flow the last reply left: what the user came for, what was done or
// decided, and what is still open (an action waiting for approval, a plan
// waiting for review, a question not answered, a flow set aside).
//
// Pure functions: no I/O, deterministic, thread-safe.
#pragma once

#include <string>
#include <vector>

#include "services/orchestrator/flow/move.h"
#include "services/orchestrator/planner/local_policy.h"

namespace omniforge::orchestrator {

// The parts of a recap, each item a short phrase in the user's terms.
struct Recap {
  std::string goal;               // the user's first request; empty: none yet
  std::vector<std::string> done;  // done or decided, oldest first
  std::vector<std::string> open;  // still open, most pressing first
};

Recap MakeRecap(const PolicyInput& input);

// The recap as the reply says it, ending with how the user can go on.
std::string RecapText(const Recap& recap, const PolicyInput& input);

// The turn that answers a recap request: the recap as its reply, and what
// waited before (the actions, the question) waiting still.
Move RecapMove(const PolicyInput& input);

}  // namespace omniforge::orchestrator
