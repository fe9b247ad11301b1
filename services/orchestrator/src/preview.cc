#include "services/orchestrator/src/preview.h"

#include <string>

namespace omniforge::orchestrator {
namespace {

namespace execpb = ::omniforge::executor::v1;

// A string member of `object`, empty when absent or not a string.
std::string StringAt(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

void FillPreview(const PendingAction& action,
                 ::omniforge::orchestrator::v1::PreviewEvent& preview) {
  preview.set_action_id(action.action_id);
  preview.set_tool_name(action.tool);
  preview.set_arguments_json(action.arguments.dump());
  preview.set_risk(action.risk);
  preview.set_summary(action.summary);
  for (const char* key : {"agent", "name", "project"}) {
    if (std::string value = StringAt(action.arguments, key); !value.empty()) {
      preview.add_affected(value);
    }
  }
  const nlohmann::json config = action.arguments.is_object()
                                    ? action.arguments.value("config", nlohmann::json::object())
                                    : nlohmann::json::object();
  const std::string recipients = StringAt(config, "recipients");
  if (!recipients.empty()) preview.add_affected(recipients);

  // A connected (MCP) service's tools are named <server>__<tool>.
  const std::string& tool = action.tool;
  const size_t split = tool.find("__");
  const std::string service = split == std::string::npos ? "" : tool.substr(0, split);
  if (action.risk == execpb::TOOL_RISK_HIGH) {
    if (!service.empty()) {
      preview.add_risk_factors("a tool of the connected service \"" + service +
                               "\": it may change or delete data there");
      preview.add_risk_factors("omniforge cannot undo what it does");
    } else if (tool.rfind("delete_", 0) == 0) {
      preview.add_risk_factors("deletes data that cannot be recovered");
      preview.add_risk_factors("cannot be undone");
    } else {
      preview.add_risk_factors("a high-risk change to your workspace");
      preview.add_risk_factors("may not be undone");
    }
  } else if (!service.empty()) {
    preview.add_risk_factors("changes data in the connected service \"" + service + "\"");
  } else {
    preview.add_risk_factors("changes your workspace");
  }
  const std::string schedule = StringAt(action.arguments, "schedule");
  if (!schedule.empty()) preview.add_risk_factors("runs on its own: " + schedule);
  if (!recipients.empty()) preview.add_risk_factors("sends to " + recipients);
}

}  // namespace omniforge::orchestrator
