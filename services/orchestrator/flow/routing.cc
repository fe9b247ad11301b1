#include "services/orchestrator/flow/routing.h"

#include <algorithm>

namespace omniforge::orchestrator {
namespace {

namespace execpb = ::omniforge::executor::v1;
namespace intentpb = ::omniforge::intent::v1;

std::string StringAt(const nlohmann::json& json, const char* key) {
  auto it = json.find(key);
  return it != json.end() && it->is_string() ? it->get<std::string>() : std::string();
}

intentpb::ActionType ActionAt(const nlohmann::json& json, const char* key) {
  intentpb::ActionType action = intentpb::ACTION_TYPE_UNSPECIFIED;
  return intentpb::ActionType_Parse(StringAt(json, key), &action)
             ? action
             : intentpb::ACTION_TYPE_UNSPECIFIED;
}

std::map<std::string, std::string> EntitiesAt(const nlohmann::json& json, const char* key) {
  std::map<std::string, std::string> entities;
  if (auto it = json.find(key); it != json.end() && it->is_object()) {
    for (const auto& [name, value] : it->items()) {
      if (value.is_string()) entities[name] = value.get<std::string>();
    }
  }
  return entities;
}

std::optional<ContextBox> BoxAt(const nlohmann::json& json) {
  auto it = json.find("context_box");
  if (it == json.end() || !it->is_object()) return std::nullopt;
  return ContextBoxFromJson(*it);
}

nlohmann::json PlanRefToJson(const PlanRef& plan) {
  nlohmann::json json = {
      {"plan_id", plan.plan_id}, {"status", plan.status}, {"objective", plan.objective}};
  if (!plan.digest.empty()) {
    json["digest"] = plan.digest;
    json["expires_at_micros"] = plan.expires_at_micros;
  }
  return json;
}

int64_t IntAt(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

nlohmann::json PendingToJson(const PendingAction& action) {
  return {{"action_id", action.action_id},
          {"tool", action.tool},
          {"arguments", action.arguments},
          {"risk", execpb::ToolRisk_Name(action.risk)},
          {"summary", action.summary},
          {"digest", action.digest},
          {"expires_at_micros", action.expires_at_micros},
          {"targets", action.targets}};
}

std::optional<PendingAction> PendingFromJson(const nlohmann::json& json) {
  if (!json.is_object()) return std::nullopt;
  PendingAction pending;
  pending.action_id = StringAt(json, "action_id");
  pending.tool = StringAt(json, "tool");
  pending.summary = StringAt(json, "summary");
  pending.digest = StringAt(json, "digest");
  pending.expires_at_micros = IntAt(json, "expires_at_micros");
  if (auto args = json.find("arguments"); args != json.end() && args->is_object()) {
    pending.arguments = *args;
  }
  if (auto targets = json.find("targets"); targets != json.end() && targets->is_object()) {
    pending.targets = *targets;
  }
  // An unknown risk reads as HIGH: the preview says more, never less.
  execpb::ToolRisk risk = execpb::TOOL_RISK_HIGH;
  if (execpb::ToolRisk_Parse(StringAt(json, "risk"), &risk)) pending.risk = risk;
  if (pending.tool.empty()) return std::nullopt;
  return pending;
}

std::optional<PlanRef> PlanRefAt(const nlohmann::json& json) {
  auto it = json.find("plan");
  if (it == json.end() || !it->is_object()) return std::nullopt;
  PlanRef plan{StringAt(*it, "plan_id"), StringAt(*it, "status"), StringAt(*it, "objective"),
               StringAt(*it, "digest"), IntAt(*it, "expires_at_micros")};
  if (plan.plan_id.empty() || plan.status.empty()) return std::nullopt;
  return plan;
}

}  // namespace

nlohmann::json SuspendedFlowToJson(const SuspendedFlow& flow) {
  nlohmann::json json = {{"flow_id", flow.flow_id},
                         {"goal", flow.goal},
                         {"action_type", intentpb::ActionType_Name(flow.action_type)},
                         {"entities", flow.entities}};
  if (flow.box) json["context_box"] = ContextBoxToJson(*flow.box);
  if (flow.plan) json["plan"] = PlanRefToJson(*flow.plan);
  return json;
}

std::optional<SuspendedFlow> SuspendedFlowFromJson(const nlohmann::json& json) {
  if (!json.is_object()) return std::nullopt;
  SuspendedFlow flow;
  flow.flow_id = StringAt(json, "flow_id");
  flow.goal = StringAt(json, "goal");
  flow.action_type = ActionAt(json, "action_type");
  flow.entities = EntitiesAt(json, "entities");
  flow.box = BoxAt(json);
  flow.plan = PlanRefAt(json);
  if (flow.flow_id.empty()) return std::nullopt;
  return flow;
}

nlohmann::json RoutingToJson(const Routing& routing) {
  nlohmann::json json = nlohmann::json::object();
  json["turn_id"] = routing.turn_id;
  json["flow_id"] = routing.flow_id;
  json["goal"] = routing.goal;
  json["action_type"] = intentpb::ActionType_Name(routing.action_type);
  json["entities"] = routing.entities;
  json["listed_agents"] = routing.listed_agents;
  json["pending_action"] = !routing.pending.empty();
  if (!routing.pending.empty()) {
    nlohmann::json actions = nlohmann::json::array();
    for (const PendingAction& action : routing.pending) actions.push_back(PendingToJson(action));
    json["pending_actions"] = std::move(actions);
  }
  json["clarifications"] = routing.clarifications;
  if (!routing.asked.empty()) json["asked"] = routing.asked;
  json["tools_used"] = routing.tools_used;
  if (routing.box) json["context_box"] = ContextBoxToJson(*routing.box);
  if (routing.suspended) json["suspended"] = true;
  if (routing.suspended_flow) json["suspended_flow"] = SuspendedFlowToJson(*routing.suspended_flow);
  if (routing.plan) json["plan"] = PlanRefToJson(*routing.plan);
  return json;
}

Routing RoutingFromJson(const nlohmann::json& json) {
  Routing routing;
  if (!json.is_object()) return routing;
  routing.turn_id = StringAt(json, "turn_id");
  routing.flow_id = StringAt(json, "flow_id");
  routing.goal = StringAt(json, "goal");
  routing.action_type = ActionAt(json, "action_type");
  routing.entities = EntitiesAt(json, "entities");
  if (auto it = json.find("listed_agents"); it != json.end() && it->is_array()) {
    for (const auto& name : *it) {
      if (name.is_string()) routing.listed_agents.push_back(name.get<std::string>());
    }
  }
  if (auto it = json.find("pending_actions"); it != json.end() && it->is_array()) {
    for (const nlohmann::json& item : *it) {
      if (std::optional<PendingAction> action = PendingFromJson(item)) {
        routing.pending.push_back(*std::move(action));
      }
    }
  } else if (auto old = json.find("pending"); old != json.end()) {
    // One action, as the previous release stored it (no digest: it is
    // previewed again before anything runs).
    if (std::optional<PendingAction> action = PendingFromJson(*old)) {
      routing.pending.push_back(*std::move(action));
    }
  }
  if (auto it = json.find("clarifications"); it != json.end() && it->is_number_integer()) {
    routing.clarifications = it->get<int>();
  }
  routing.asked = StringAt(json, "asked");
  if (auto it = json.find("tools_used"); it != json.end() && it->is_array()) {
    for (const auto& name : *it) {
      if (name.is_string()) routing.tools_used.push_back(name.get<std::string>());
    }
  }
  routing.box = BoxAt(json);
  if (auto it = json.find("suspended"); it != json.end() && it->is_boolean()) {
    routing.suspended = it->get<bool>();
  }
  if (auto it = json.find("suspended_flow"); it != json.end()) {
    routing.suspended_flow = SuspendedFlowFromJson(*it);
  }
  routing.plan = PlanRefAt(json);
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
