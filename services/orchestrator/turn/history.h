// The conversation's history as the turn reads it: the routing stored with
// each assistant message (parsed once per message, RoutingMemo), the window
// as the intent service is given it, and tool results as JSON.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "omniforge/conversation/v1/conversation_service.pb.h"
#include "omniforge/intent/v1/intent_service.pb.h"
#include "services/orchestrator/flow/move.h"
#include "services/orchestrator/flow/routing.h"
#include "services/orchestrator/planner/local_policy.h"

namespace omniforge::orchestrator {

namespace convpb = ::omniforge::conversation::v1;
namespace intentpb = ::omniforge::intent::v1;

// `text` as a JSON value; an empty object when it is not JSON.
nlohmann::json ParseObject(const std::string& text);

// A call that failed, as a tool result the planner (and the user) reads.
nlohmann::json ErrorResult(const absl::Status& status);

// A stored message's metadata: asked for as JSON text (metadata_as_json),
// read from the Struct when storage sent one instead.
nlohmann::json MetadataOf(const convpb::Message& m);

// The routing stored with message `m`, parsed once per message.
std::shared_ptr<const Routing> RoutingOf(RoutingMemo& memo, const convpb::Message& m);

// The routing of the newest assistant message in `window`, if any.
std::optional<Routing> LastRouting(RoutingMemo& memo,
                                   const convpb::GetContextWindowResponse& window);

// How many of the latest turns the intent service is sent: all it reads
// (AnalyzeIntentRequest.history: "only the last 20 are read").
inline constexpr int kIntentHistoryTurns = 20;

// The window as the intent service reads history: the last
// kIntentHistoryTurns user and assistant turns, the assistant's with the
// routing stored beside them (without the policy's own entities:
// IsOptionEntity).
void AddHistory(RoutingMemo& memo, const convpb::GetContextWindowResponse& window,
                intentpb::AnalyzeIntentRequest& request);

// The window as the local policy reads it (a recap): user and assistant
// turns, oldest first, the assistant's with their routing when stored with
// one.
std::vector<HistoryTurn> PolicyHistory(RoutingMemo& memo,
                                       const convpb::GetContextWindowResponse& window);

// The user's agents as the intent service is given them (name, description).
void AddAgents(const std::vector<AgentInfo>& agents, intentpb::AnalyzeIntentRequest& request);

// Whether the intent service would be given the same agents (AddAgents).
bool SameForAnalysis(const std::vector<AgentInfo>& a, const std::vector<AgentInfo>& b);

// Whether the newest reply in `window` leaves nothing for this message to
// continue (no pending action, question, plan or suspended flow): the
// message then gets a new analysis.
bool StartsAFreshFlow(RoutingMemo& memo, const convpb::GetContextWindowResponse& window);

}  // namespace omniforge::orchestrator
