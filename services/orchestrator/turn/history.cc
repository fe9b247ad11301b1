#include "services/orchestrator/turn/history.h"

#include <algorithm>

#include "libs/core/struct_json.h"
#include "libs/core/text.h"
#include "services/orchestrator/planner/partial_fit.h"

namespace omniforge::orchestrator {

namespace intentpb = ::omniforge::intent::v1;
namespace convpb = ::omniforge::conversation::v1;

using nlohmann::json;

json ParseObject(const std::string& text) {
  json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return parsed.is_discarded() ? json::object() : parsed;
}

json ErrorResult(const absl::Status& status) {
  return {{"error",
           {{"code", absl::StatusCodeToString(status.code())},
            {"message", std::string(status.message())}}}};
}

json MetadataOf(const convpb::Message& m) {
  if (m.metadata_json().empty()) return core::JsonFromStruct(m.metadata());
  return ParseObject(m.metadata_json());
}

std::shared_ptr<const Routing> RoutingOf(RoutingMemo& memo, const convpb::Message& m) {
  return memo.Of(m.id(), [&m] { return RoutingFromJson(MetadataOf(m)); });
}

std::optional<Routing> LastRouting(RoutingMemo& memo,
                                   const convpb::GetContextWindowResponse& window) {
  for (int i = window.messages_size() - 1; i >= 0; --i) {
    const convpb::Message& m = window.messages(i);
    if (m.role() == convpb::ROLE_ASSISTANT) return *RoutingOf(memo, m);
  }
  return std::nullopt;
}

void AddHistory(RoutingMemo& memo, const convpb::GetContextWindowResponse& window,
                intentpb::AnalyzeIntentRequest& request) {
  int skip = -kIntentHistoryTurns;
  for (const convpb::Message& m : window.messages()) {
    skip += m.role() == convpb::ROLE_USER || m.role() == convpb::ROLE_ASSISTANT ? 1 : 0;
  }
  for (const convpb::Message& m : window.messages()) {
    if ((m.role() == convpb::ROLE_USER || m.role() == convpb::ROLE_ASSISTANT) && skip-- > 0) {
      continue;
    }
    intentpb::Turn* turn = nullptr;
    if (m.role() == convpb::ROLE_USER) {
      turn = request.add_history();
      turn->set_role(intentpb::TURN_ROLE_USER);
    } else if (m.role() == convpb::ROLE_ASSISTANT) {
      turn = request.add_history();
      turn->set_role(intentpb::TURN_ROLE_ASSISTANT);
      const std::shared_ptr<const Routing> routing = RoutingOf(memo, m);
      turn->set_action_type(routing->action_type);
      for (const auto& [key, value] : routing->entities) {
        if (!IsOptionEntity(key)) (*turn->mutable_entities())[key] = value;
      }
      for (const std::string& name : routing->listed_agents) turn->add_listed_agents(name);
      turn->set_pending_action(routing->pending_action);
    } else {
      continue;
    }
    turn->set_content(m.content());
  }
}

std::vector<HistoryTurn> PolicyHistory(RoutingMemo& memo,
                                       const convpb::GetContextWindowResponse& window) {
  std::vector<HistoryTurn> turns;
  for (const convpb::Message& m : window.messages()) {
    if (m.role() != convpb::ROLE_USER && m.role() != convpb::ROLE_ASSISTANT) continue;
    HistoryTurn turn;
    turn.from_user = m.role() == convpb::ROLE_USER;
    turn.content = m.content();
    if (!turn.from_user && (!m.metadata_json().empty() || m.has_metadata())) {
      const std::shared_ptr<const Routing> routing = RoutingOf(memo, m);
      turn.routed = !routing->flow_id.empty() || !routing->turn_id.empty();
      turn.action_type = routing->action_type;
      turn.entities = routing->entities;
      turn.tools_used = routing->tools_used;
      turn.pending_action = routing->pending_action;
    }
    turns.push_back(std::move(turn));
  }
  return turns;
}

void AddAgents(const std::vector<AgentInfo>& agents, intentpb::AnalyzeIntentRequest& request) {
  for (const AgentInfo& agent : agents) {
    intentpb::CatalogItem* item = request.add_available_agents();
    item->set_name(agent.name);
    item->set_description(core::Shortened(agent.description, 2000));
  }
}

bool SameForAnalysis(const std::vector<AgentInfo>& a, const std::vector<AgentInfo>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const AgentInfo& x, const AgentInfo& y) {
                      return x.name == y.name && x.description == y.description;
                    });
}

bool StartsAFreshFlow(RoutingMemo& memo, const convpb::GetContextWindowResponse& window) {
  const std::optional<Routing> last = LastRouting(memo, window);
  return !last || (last->status == FlowStatus::kDone && !last->suspended_flow);
}

}  // namespace omniforge::orchestrator
