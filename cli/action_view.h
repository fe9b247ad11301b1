// How `omniforge actions` shows a conversation's approval trail
// (ChatService.ListActions): one entry per decision, newest first, or the
// response as one JSON object for scripts.
#pragma once

#include <ostream>

#include "omniforge/orchestrator/v1/chat_service.pb.h"

namespace omniforge::cli {

// Per decision: a line with when (UTC), the outcome, the tool and its risk,
// who decided and how; the summary; the action id, digest and turn. A
// sentence when there are none. With `json`, the response in proto3 JSON
// (proto field names) on one line.
void ShowDecisions(std::ostream& out, const orchestrator::v1::ListActionsResponse& response,
                   bool json);

}  // namespace omniforge::cli
