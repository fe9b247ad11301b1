#include "services/orchestrator/planner/agent_draft.h"

namespace omniforge::orchestrator {
namespace {

using json = nlohmann::json;

std::string StringIn(const json& object, const char* key) {
  if (!object.is_object()) return "";
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

// What the agent reads, in words: its project, its data sources, or "its
// sources".
std::string SourceOf(const json& args) {
  if (args.contains("steps") && args["steps"].is_array() && !args["steps"].empty()) {
    const std::string project =
        StringIn(args["steps"][0].value("arguments", json::object()), "project");
    if (!project.empty()) return "the project '" + project + "'";
  }
  const json config = args.value("config", json::object());
  const std::string sources = StringIn(config, "data_source");
  return sources.empty() ? "its sources" : sources;
}

}  // namespace

void SetDraftSteps(const std::string& kind, const std::string& project, json& args) {
  if (project.empty()) return;
  json step;
  if (kind == "report") {
    step = {{"tool", "get_project_details"}, {"arguments", {{"project", project}}}};
  } else if (kind == "monitor" || kind == "triage") {
    step = {{"tool", "list_tasks"}, {"arguments", {{"project", project}, {"status", "todo"}}}};
  } else {
    step = {{"tool", "list_tasks"}, {"arguments", {{"project", project}}}};
  }
  args["tools"] = json::array({step["tool"]});
  args["steps"] = json::array({std::move(step)});
}

std::string DraftInstructions(const std::string& kind, const std::string& purpose,
                              const json& args) {
  const std::string source = SourceOf(args);
  const std::string recipients = StringIn(args.value("config", json::object()), "recipients");
  const std::string to = recipients.empty() ? "" : " for " + recipients;
  std::string text;
  if (kind == "digest") {
    text = "Each run, read " + source +
           " and sum up what is new since the last run in a few short bullets" + to + ".";
  } else if (kind == "monitor") {
    text = "Each run, check " + source +
           " for anything that needs attention; when something does, say what and why" + to +
           "; otherwise say that all is well.";
  } else if (kind == "report") {
    text = "Each run, go through " + source +
           " and write a short report: where things stand, what is late and what comes next" + to +
           ".";
  } else if (kind == "triage") {
    text = "Each run, go through the new items in " + source +
           ", sort each by urgency and topic, and say who should take it" + to + ".";
  } else {
    text = "Each run, work from " + source + to + ".";
  }
  if (!purpose.empty()) text += " The request it was made for: \"" + purpose + "\".";
  return text;
}

void ReadScheduleInUsersZone(const std::string& tool, const std::string& zone,
                             nlohmann::json& args) {
  if (tool == "create_agent" && !zone.empty() && args.is_object() && args.contains("schedule") &&
      args["schedule"].is_string() && !args.contains("time_zone")) {
    args["time_zone"] = zone;
  }
}

}  // namespace omniforge::orchestrator
