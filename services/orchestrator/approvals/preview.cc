#include "services/orchestrator/approvals/preview.h"

#include <string>

#include "libs/core/text.h"
#include "libs/schedule/schedule.h"
#include "services/orchestrator/api/public_types.h"
#include "services/orchestrator/approvals/approval_gate.h"

namespace omniforge::orchestrator {
namespace {

namespace execpb = ::omniforge::executor::v1;

// A string member of `object`, empty when absent or not a string.
std::string StringAt(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string Quoted(const std::string& name) { return "'" + name + "'"; }

// A value as the summary shows it: text quoted, numbers and yes/no as they
// are, lists and objects as compact JSON.
std::string Worded(const nlohmann::json& value) {
  std::string text;
  if (value.is_string()) {
    text = "\"" + core::Shortened(value.get<std::string>(), 200) + "\"";
  } else if (value.is_boolean()) {
    text = value.get<bool>() ? "yes" : "no";
  } else {
    text = core::Shortened(value.dump(), 200);
  }
  return text;
}

// A value said in a sentence: text as it is, anything else as Worded.
std::string Plain(const nlohmann::json& value) {
  return value.is_string() ? core::Shortened(value.get<std::string>(), 200) : Worded(value);
}

// The first sentence of a tool's description, without its full stop.
std::string FirstSentence(const std::string& description) {
  std::string sentence = description.substr(0, description.find(". "));
  sentence = sentence.substr(0, sentence.find('\n'));
  while (!sentence.empty() && (sentence.back() == '.' || sentence.back() == ' ')) {
    sentence.pop_back();
  }
  return core::Shortened(sentence, 200);
}

}  // namespace

std::string ScheduleInWords(const nlohmann::json& args, const std::string& zone_when_none) {
  std::string schedule = StringAt(args, "schedule");
  const std::string zone = StringAt(args, "time_zone");
  auto read = schedule::ParseSchedule(schedule, zone.empty() ? "UTC" : zone);
  if (!read.ok()) return schedule;
  if (!zone.empty()) return read->description;
  // No zone given: the words' own, else the one the executor will use,
  // which is not known here (the same minutes in any zone).
  auto elsewhere = schedule::ParseSchedule(schedule, "Asia/Tokyo");
  const std::string suffix = " (UTC)";
  const std::string& words = read->description;
  if (elsewhere.ok() && elsewhere->time_zone == read->time_zone) return words;
  if (words.size() < suffix.size() ||
      words.compare(words.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return words;
  }
  return words.substr(0, words.size() - suffix.size()) + " (" + zone_when_none + ")";
}

// The steps of agent arguments in words: "lists the tasks of 'Harbor' still
// to do, using list_tasks".
std::string StepsInWords(const nlohmann::json& args) {
  if (!args.is_object() || !args.contains("steps") || !args["steps"].is_array()) return "";
  std::string text;
  for (const nlohmann::json& step : args["steps"]) {
    if (!step.is_object()) continue;
    const std::string tool = StringAt(step, "tool");
    const nlohmann::json arguments = step.value("arguments", nlohmann::json::object());
    const std::string project = StringAt(arguments, "project");
    if (!text.empty()) text += ", then ";
    if (tool == "list_tasks" && !project.empty()) {
      text += "lists the tasks of " + Quoted(project) +
              (StringAt(arguments, "status") == "todo" ? " still to do" : "");
    } else if (tool == "get_project_details" && !project.empty()) {
      text += "reads the project " + Quoted(project) + " with its tasks and documents";
    } else {
      text += "calls " + tool;
    }
  }
  return text;
}

std::string DescribeAgentDraft(const nlohmann::json& args) {
  // A model writes these arguments: any field may be of any type.
  std::string text = Quoted(StringAt(args, "name"));
  if (args.is_object() && args.contains("description")) {
    std::string description = Plain(args["description"]);
    while (!description.empty() && description.back() == '.') description.pop_back();
    text += " (" + description + ")";
  }
  const std::string schedule = StringAt(args, "schedule");
  text += schedule.empty() ? ". It runs when you ask, or on a schedule you name."
                           : ". It runs " + ScheduleInWords(args) + ".";
  if (args.is_object() && args.contains("config") && args["config"].is_object()) {
    const nlohmann::json& config = args["config"];
    if (config.contains("data_source")) {
      text += " It reads from " + Plain(config["data_source"]) + ".";
    }
    if (config.contains("recipients")) {
      text += " It sends the result to " + Plain(config["recipients"]) + ".";
    }
  }
  if (const std::string steps = StepsInWords(args); !steps.empty()) {
    text += " Each run it " + steps + ".";
  } else if (args.is_object() && args.contains("instructions")) {
    text += " Without a model it has no steps to run yet: name a project for it to read.";
  }
  const nlohmann::json deliver =
      args.is_object() ? args.value("deliver", nlohmann::json::object()) : nlohmann::json();
  if (const std::string tool = StringAt(deliver, "tool"); !tool.empty()) {
    text += " Each run's output goes to " + tool;
    const nlohmann::json with = deliver.value("arguments", nlohmann::json::object());
    if (with.is_object() && !with.empty()) text += " (" + Plain(with) + ")";
    text += ".";
  }
  return text;
}

std::string ActionSummary(const std::string& tool, const nlohmann::json& arguments,
                          const std::string& description) {
  const std::string agent = StringAt(arguments, "agent");
  if (!agent.empty()) {
    if (tool == "run_agent") return "run " + Quoted(agent) + " now.";
    if (tool == "pause_agent") {
      return "pause " + Quoted(agent) + ": it stops running on its schedule until resumed.";
    }
    if (tool == "resume_agent")
      return "resume " + Quoted(agent) + ": it runs on its schedule again.";
    if (tool == "delete_agent") {
      return "delete " + Quoted(agent) +
             " and its whole run history. Affected: the agent, its schedule and every recorded "
             "run.";
    }
  }
  if (tool == "update_settings" && !StringAt(arguments, "time_zone").empty()) {
    return "set your time zone to " + StringAt(arguments, "time_zone") +
           ": the schedules of agents you create from now on are read in it; your agents keep "
           "theirs.";
  }
  if (tool == "create_agent" && arguments.is_object() && !StringAt(arguments, "name").empty()) {
    return "a new agent " + DescribeAgentDraft(arguments);
  }
  std::string text = tool;
  if (const std::string does = FirstSentence(description); !does.empty()) {
    text += " (" + does + ")";
  }
  if (!arguments.is_object() || arguments.empty()) return text + ", with no arguments.";
  text += ", with ";
  size_t shown = 0;
  for (auto it = arguments.begin(); it != arguments.end(); ++it) {
    if (shown == 8) {
      text += " and " + std::to_string(arguments.size() - shown) + " more";
      break;
    }
    if (shown > 0) text += shown + 1 == arguments.size() ? " and " : ", ";
    text += it.key() + " " + Worded(it.value());
    ++shown;
  }
  return text + ".";
}

void FillPreview(const PendingAction& action,
                 ::omniforge::orchestrator::v1::PreviewEvent& preview) {
  preview.set_action_id(action.action_id);
  preview.set_tool_name(action.tool);
  preview.set_arguments_json(action.arguments.dump());
  preview.set_risk(PublicRisk(action.risk));
  preview.set_summary(action.summary);
  preview.set_digest(action.digest);
  preview.set_expires_at_unix_ms(action.expires_at_micros / 1000);
  for (const char* key : {"agent", "name", "project"}) {
    // A target resolved to its id is named as the user knows it.
    std::string value = StringAt(action.targets.value(key, nlohmann::json::object()), "name");
    if (value.empty()) value = StringAt(action.arguments, key);
    if (!value.empty()) preview.add_affected(value);
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
  // What in its arguments made it HIGH comes first: it is why it asks now.
  for (const std::string& reason : action.risk_reasons) preview.add_risk_factors(reason);
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
  const std::string deliver_tool = StringAt(
      action.arguments.is_object() ? action.arguments.value("deliver", nlohmann::json::object())
                                   : nlohmann::json::object(),
      "tool");
  if (!deliver_tool.empty()) {
    preview.add_risk_factors("sends each run's output with " + deliver_tool +
                             ", which every run may then call");
  }
}

void FillPlanPreview(const Plan& plan, const std::vector<execpb::ToolDescriptor>& tools,
                     const ApprovalPolicy& policy, const std::string& digest,
                     int64_t expires_at_micros,
                     ::omniforge::orchestrator::v1::PreviewEvent& preview) {
  preview.set_action_id(plan.id);
  preview.set_plan_id(plan.id);
  preview.set_tool_name(kCreatePlanTool);
  preview.set_digest(digest);
  preview.set_expires_at_unix_ms(expires_at_micros / 1000);
  execpb::ToolRisk highest = execpb::TOOL_RISK_READ;
  int changing = 0;
  for (const PlanStep& step : plan.steps) {
    bool changes = false;
    for (const std::string& tool : step.tools) {
      const execpb::ToolRisk risk = RiskIn(tools, tool);
      if (policy.Decide(tool, risk) == GateVerdict::kRun) continue;
      const execpb::ToolRisk shown =
          risk == execpb::TOOL_RISK_UNSPECIFIED ? execpb::TOOL_RISK_HIGH : risk;
      if (shown > highest) highest = shown;
      changes = true;
      bool planned = false;
      for (const PlannedCall& call : step.tool_calls) {
        if (call.tool != tool) continue;
        planned = true;
        auto* shown_step = preview.add_steps();
        shown_step->set_step_id(step.id);
        shown_step->set_description(step.description);
        shown_step->set_tool_name(tool);
        shown_step->set_arguments_json(call.arguments.dump());
        shown_step->set_risk(PublicRisk(shown));
        for (const char* key : {"agent", "name", "project"}) {
          if (std::string value = StringAt(call.arguments, key); !value.empty()) {
            preview.add_affected(value);
          }
        }
      }
      if (!planned) {
        auto* shown_step = preview.add_steps();
        shown_step->set_step_id(step.id);
        shown_step->set_description(step.description);
        shown_step->set_tool_name(tool);
        shown_step->set_risk(PublicRisk(shown));
        shown_step->set_constraint(
            "the executor agent chooses the arguments, within this step's task and only with "
            "this step's tools");
      }
      if (shown == execpb::TOOL_RISK_HIGH) {
        preview.add_risk_factors("step " + step.id + " may call " + tool +
                                 ", which is hard or impossible to undo");
      }
    }
    changing += changes ? 1 : 0;
  }
  preview.set_risk(PublicRisk(highest));
  preview.set_arguments_json(StepsToJson(plan.steps).dump());
  preview.set_summary("a plan of " + std::to_string(plan.steps.size()) + " steps to " +
                      core::Shortened(plan.objective, 300) + "; " + std::to_string(changing) +
                      (changing == 1 ? " step changes" : " steps change") +
                      " your workspace and runs only once you approve the plan.");
  if (changing > 0) preview.add_risk_factors("changes your workspace");
}

}  // namespace omniforge::orchestrator
