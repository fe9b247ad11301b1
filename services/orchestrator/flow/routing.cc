#include "services/orchestrator/flow/routing.h"

#include <algorithm>

namespace omniforge::orchestrator {
namespace {

namespace intentpb = ::omniforge::intent::v1;

// The version of the projection's shape; older metadata has none.
constexpr int kRoutingFormat = 2;

}  // namespace

Routing RoutingOf(const FlowState& state) {
  Routing routing;
  routing.turn_id = state.turn_id;
  routing.flow_id = state.flow_id;
  routing.action_type = state.action_type;
  routing.entities = state.entities;
  routing.listed_agents = state.listed_agents;
  routing.tools_used = state.tools_used;
  routing.pending_action = !state.pending.empty();
  routing.status = state.status;
  routing.suspended_flow = state.suspended_flow;
  return routing;
}

nlohmann::json RoutingToJson(const Routing& routing) {
  nlohmann::json json = nlohmann::json::object();
  json["format"] = kRoutingFormat;
  json["turn_id"] = routing.turn_id;
  json["flow_id"] = routing.flow_id;
  json["action_type"] = intentpb::ActionType_Name(routing.action_type);
  json["entities"] = routing.entities;
  json["listed_agents"] = routing.listed_agents;
  json["tools_used"] = routing.tools_used;
  json["pending_action"] = routing.pending_action;
  json["status"] = FlowStatusName(routing.status);
  if (routing.suspended_flow) json["suspended_flow"] = SuspendedFlowToJson(*routing.suspended_flow);
  return json;
}

Routing RoutingFromJson(const nlohmann::json& json) {
  if (!json.is_object()) return Routing{};
  if (!json.contains("format")) {
    FlowState whole = FlowStateFromJson(json);
    Routing routing = RoutingOf(whole);
    routing.written_whole = std::move(whole);
    return routing;
  }
  Routing routing;
  routing.turn_id = flow_json::StringAt(json, "turn_id");
  routing.flow_id = flow_json::StringAt(json, "flow_id");
  routing.action_type = flow_json::ActionAt(json, "action_type");
  routing.entities = flow_json::EntitiesAt(json, "entities");
  routing.listed_agents = flow_json::StringsAt(json, "listed_agents");
  routing.tools_used = flow_json::StringsAt(json, "tools_used");
  if (auto it = json.find("pending_action"); it != json.end() && it->is_boolean()) {
    routing.pending_action = it->get<bool>();
  }
  routing.status = ParseFlowStatus(flow_json::StringAt(json, "status"));
  if (auto it = json.find("suspended_flow"); it != json.end()) {
    routing.suspended_flow = SuspendedFlowFromJson(*it);
  }
  return routing;
}

RoutingMemo::RoutingMemo(size_t max_entries)
    : max_per_shard_(std::max<size_t>(1, max_entries / kShards)) {}

RoutingMemo::Shard& RoutingMemo::ShardOf(const std::string& message_id) {
  return shards_[std::hash<std::string>{}(message_id) % kShards];
}

std::shared_ptr<const Routing> RoutingMemo::Of(const std::string& message_id,
                                               const std::function<Routing()>& parse) {
  Shard& shard = ShardOf(message_id);
  {
    absl::MutexLock lock(&shard.mu);
    auto it = shard.by_id.find(message_id);
    if (it != shard.by_id.end()) return it->second;
  }
  return Keep(shard, message_id, std::make_shared<const Routing>(parse()));
}

void RoutingMemo::Remember(const std::string& message_id, Routing routing) {
  Keep(ShardOf(message_id), message_id, std::make_shared<const Routing>(std::move(routing)));
}

std::shared_ptr<const Routing> RoutingMemo::Keep(Shard& shard, const std::string& message_id,
                                                 std::shared_ptr<const Routing> routing) {
  absl::MutexLock lock(&shard.mu);
  auto [it, added] = shard.by_id.emplace(message_id, std::move(routing));
  if (added) {
    shard.order.push_back(message_id);
    while (shard.order.size() > max_per_shard_) {
      shard.by_id.erase(shard.order.front());
      shard.order.pop_front();
    }
  }
  return it->second;
}

}  // namespace omniforge::orchestrator
