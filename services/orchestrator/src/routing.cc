#include "services/orchestrator/src/routing.h"

namespace omniforge::orchestrator {
namespace {

namespace execpb = ::omniforge::executor::v1;
namespace intentpb = ::omniforge::intent::v1;

std::string StringAt(const nlohmann::json& json, const char* key) {
  auto it = json.find(key);
  return it != json.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

nlohmann::json RoutingToJson(const Routing& routing) {
  nlohmann::json json = nlohmann::json::object();
  json["turn_id"] = routing.turn_id;
  json["flow_id"] = routing.flow_id;
  json["goal"] = routing.goal;
  json["action_type"] = intentpb::ActionType_Name(routing.action_type);
  json["entities"] = routing.entities;
  json["listed_agents"] = routing.listed_agents;
  json["pending_action"] = routing.pending.has_value();
  if (routing.pending) {
    json["pending"] = {{"action_id", routing.pending->action_id},
                       {"tool", routing.pending->tool},
                       {"arguments", routing.pending->arguments},
                       {"risk", execpb::ToolRisk_Name(routing.pending->risk)},
                       {"summary", routing.pending->summary}};
  }
  json["clarifications"] = routing.clarifications;
  json["tools_used"] = routing.tools_used;
  return json;
}

Routing RoutingFromJson(const nlohmann::json& json) {
  Routing routing;
  if (!json.is_object()) return routing;
  routing.turn_id = StringAt(json, "turn_id");
  routing.flow_id = StringAt(json, "flow_id");
  routing.goal = StringAt(json, "goal");
  intentpb::ActionType action = intentpb::ACTION_TYPE_UNSPECIFIED;
  if (intentpb::ActionType_Parse(StringAt(json, "action_type"), &action)) {
    routing.action_type = action;
  }
  if (auto it = json.find("entities"); it != json.end() && it->is_object()) {
    for (const auto& [key, value] : it->items()) {
      if (value.is_string()) routing.entities[key] = value.get<std::string>();
    }
  }
  if (auto it = json.find("listed_agents"); it != json.end() && it->is_array()) {
    for (const auto& name : *it) {
      if (name.is_string()) routing.listed_agents.push_back(name.get<std::string>());
    }
  }
  if (auto it = json.find("pending"); it != json.end() && it->is_object()) {
    PendingAction pending;
    pending.action_id = StringAt(*it, "action_id");
    pending.tool = StringAt(*it, "tool");
    pending.summary = StringAt(*it, "summary");
    if (auto args = it->find("arguments"); args != it->end() && args->is_object()) {
      pending.arguments = *args;
    }
    execpb::ToolRisk risk = execpb::TOOL_RISK_WRITE;
    if (execpb::ToolRisk_Parse(StringAt(*it, "risk"), &risk)) pending.risk = risk;
    if (!pending.tool.empty()) routing.pending = std::move(pending);
  }
  if (auto it = json.find("clarifications"); it != json.end() && it->is_number_integer()) {
    routing.clarifications = it->get<int>();
  }
  if (auto it = json.find("tools_used"); it != json.end() && it->is_array()) {
    for (const auto& name : *it) {
      if (name.is_string()) routing.tools_used.push_back(name.get<std::string>());
    }
  }
  return routing;
}

}  // namespace omniforge::orchestrator
