// The parts of a request of several ("can one of my agents chase the
// overdue invoices and also post a weekly summary to slack?" -> "chase the
// overdue invoices", "post a weekly summary to slack"), and the user's
// agent each part names. A caller acting without a model (the
// orchestrator's local policy) offers the ways on when one agent covers
// only some of the parts. Pure functions, thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "services/intent/entities/entities.h"
#include "services/intent/src/model.h"

namespace omniforge::intent {

// The parts of `message`: its clauses joined by "and also", "and then", "as
// well as", "plus" or "and" (libs/words/data/request_joints.txt; each part
// at least two words: a clause too short stays with the one before),
// without the request's frame ("can one of my agents", "could you":
// request_frames.txt, then request_leads.txt) and closing punctuation. One
// part when the request has no joints; none for an empty message.
std::vector<std::string> RequestParts(std::string_view message);

// The parts of `message` with the agent of `agents` each names
// (MatchCatalogItem, loosely; empty when none does); empty for a request of
// one part, and for one of more than twelve (material pasted in, not a
// request).
std::vector<RequestPart> PartsWithAgents(std::string_view message,
                                         const std::vector<CatalogItem>& agents);

}  // namespace omniforge::intent
