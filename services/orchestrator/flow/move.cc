#include "services/orchestrator/flow/move.h"

namespace omniforge::orchestrator {

using json = nlohmann::json;

std::vector<AgentInfo> AgentsFromListResult(const json& result) {
  std::vector<AgentInfo> agents;
  if (!result.is_object() || !result.contains("agents") || !result["agents"].is_array()) {
    return agents;
  }
  for (const json& item : result["agents"]) {
    if (!item.is_object()) continue;
    AgentInfo agent;
    agent.name = item.value("name", std::string());
    agent.id = item.contains("id") && item["id"].is_string() ? item["id"].get<std::string>() : "";
    agent.description = item.contains("description") && item["description"].is_string()
                            ? item["description"].get<std::string>()
                            : "";
    agent.status = item.contains("status") && item["status"].is_string()
                       ? item["status"].get<std::string>()
                       : "";
    agent.schedule = item.contains("schedule") && item["schedule"].is_string()
                         ? item["schedule"].get<std::string>()
                         : "";
    if (!agent.name.empty()) agents.push_back(std::move(agent));
  }
  return agents;
}

}  // namespace omniforge::orchestrator
