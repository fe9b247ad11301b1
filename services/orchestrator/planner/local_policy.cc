#include "services/orchestrator/planner/local_policy.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "libs/core/ids.h"
#include "libs/core/text.h"
#include "libs/schedule/schedule.h"
#include "services/intent/entities/entities.h"
#include "services/orchestrator/approvals/preview.h"
#include "services/orchestrator/planner/agent_draft.h"
#include "services/orchestrator/planner/email_flow.h"
#include "services/orchestrator/planner/meeting_flow.h"
#include "services/orchestrator/planner/partial_fit.h"
#include "services/orchestrator/planner/recap.h"

namespace omniforge::orchestrator {

namespace {

namespace intentpb = ::omniforge::intent::v1;
namespace execpb = ::omniforge::executor::v1;
using nlohmann::json;

// The name of a draft the intent service suggested none for.
constexpr char kUnnamedDraft[] = "assistant-agent";

std::string Quoted(const std::string& name) { return "'" + name + "'"; }

// The description of an agent drafted for `purpose` (what the intent
// service read the request to be for), as a sentence.
std::string DraftDescription(std::string purpose) {
  if (purpose.empty()) return "";
  purpose[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(purpose[0])));
  return "Takes care of this for you: " + purpose + ".";
}

std::string NumberedAgents(const std::vector<AgentInfo>& agents) {
  std::string text;
  for (size_t i = 0; i < agents.size(); ++i) {
    text += "\n" + std::to_string(i + 1) + ". " + agents[i].name;
    if (!agents[i].description.empty()) text += " — " + core::Shortened(agents[i].description, 80);
    if (agents[i].status == "paused") text += " (paused)";
  }
  return text;
}

std::vector<std::string> Names(const std::vector<AgentInfo>& agents) {
  std::vector<std::string> names;
  names.reserve(agents.size());
  for (const AgentInfo& agent : agents) names.push_back(agent.name);
  return names;
}

std::string Entity(const intentpb::IntentAnalysis& intent, const char* key) {
  auto it = intent.entities().find(key);
  return it == intent.entities().end() ? std::string() : it->second;
}

// Whether this message is the one that started the flow (the goal), so that
// the analysis of this message is the goal's.
bool AtTheGoal(const PolicyInput& in) {
  return !in.last || in.goal.empty() || in.goal == in.message;
}

// What the intent service read a new agent drafted for the flow's goal to
// be for and be named: the analysis of the goal's own message, kept in the
// flow's entities when a later message continues the flow ("make an agent
// for it" after a question), else this message's.
std::string GoalEntity(const PolicyInput& in, const char* key) {
  if (!AtTheGoal(in)) {
    if (auto it = in.last->entities.find(key); it != in.last->entities.end()) return it->second;
  }
  return Entity(in.intent, key);
}

// Keeps the goal's purpose and name in the flow's entities over those of a
// later message (GoalEntity).
void KeepGoalDraft(const PolicyInput& in, Move& move) {
  if (AtTheGoal(in)) return;
  for (const char* key : {intent::kPurposeEntity, intent::kSuggestedNameEntity}) {
    if (auto it = in.last->entities.find(key); it != in.last->entities.end()) {
      move.entities[key] = it->second;
    }
  }
}

// What an option picked by the user carries (partial_fit.h): read only in
// the turn that answers the options.
std::string OptionEntity(const PolicyInput& in, const char* key) {
  return in.last && in.last->asked == kAskedOption ? Entity(in.intent, key) : std::string();
}

// Why the schedule the user gave cannot be stored, for the reply; empty when
// there is none or it reads (libs/schedule, as the executor reads it).
std::string UnreadableSchedule(const intentpb::IntentAnalysis& intent) {
  const std::string schedule = Entity(intent, "schedule");
  if (schedule.empty()) return "";
  auto read = schedule::ParseSchedule(schedule);
  if (read.ok()) return "";
  return " I could not read that as a schedule (" + std::string(read.status().message()) +
         "), so it is left out for now: tell me when it should run.";
}

// The entities of a draft or a change in its arguments: schedule, data
// source, recipients, and a project to read (the steps of the draft's kind,
// kept in its config); a schedule that cannot be read is left out
// (UnreadableSchedule says so).
bool ApplyDraftEntities(const intentpb::IntentAnalysis& intent, json& args) {
  bool changed = false;
  if (const std::string project = Entity(intent, "project"); !project.empty()) {
    const json config = args.value("config", json::object());
    SetDraftSteps(config.is_object() ? config.value("kind", "") : "", project, args);
    // A change keeps the agent's grant: the executor adds the steps' tools.
    if (args.contains("agent")) args.erase("tools");
    changed = true;
  }
  if (const std::string schedule = Entity(intent, "schedule");
      !schedule.empty() && UnreadableSchedule(intent).empty()) {
    args["schedule"] = schedule;
    changed = true;
  }
  if (const std::string zone = Entity(intent, "time_zone"); !zone.empty()) {
    args["time_zone"] = zone;
    changed = true;
  }
  for (const char* key : {"data_source", "recipients"}) {
    if (const std::string value = Entity(intent, key); !value.empty()) {
      if (!args.contains("config") || !args["config"].is_object()) args["config"] = json::object();
      args["config"][key] = value;
      changed = true;
    }
  }
  return changed;
}

PendingAction Pending(std::string tool, json args, execpb::ToolRisk risk, std::string summary) {
  return PendingAction{core::NewUuid(), std::move(tool), std::move(args), risk, std::move(summary)};
}

// The words of a preview, and the question that ends it.
std::string PreviewText(const PendingAction& action) {
  if (action.risk == execpb::TOOL_RISK_HIGH) {
    return "This needs your approval: " + action.summary +
           R"( This cannot be undone. Reply "yes" to go ahead or "cancel" to keep things as )"
           "they are.";
  }
  const bool draft = action.tool.rfind("create_", 0) == 0 || action.tool.rfind("update_", 0) == 0;
  return (draft ? "Here is the draft: " : "Ready to ") + action.summary +
         R"( Shall I go ahead? Say "yes", tell me what to change, or "cancel".)";
}

// Clarifying questions asked in a row before this turn.
int AskedInARow(const PolicyInput& in) { return in.last ? in.last->clarifications : 0; }

bool MayAsk(const PolicyInput& in) { return AskedInARow(in) < in.max_clarifications; }

Move Clarify(const PolicyInput& in, const char* about, std::string question,
             std::vector<std::string> listed = {}) {
  Move move;
  move.clarifying = true;
  move.asked = about;
  move.reply = std::move(question);
  move.action_type = in.intent.action_type();
  move.entities.insert(in.intent.entities().begin(), in.intent.entities().end());
  move.listed_agents = std::move(listed);
  return move;
}

Move ProposeOnAgent(const PolicyInput& in, const std::string& agent, const std::string& tool);

// The agent the user most likely means when they did not say: the first of
// the list they were shown, else the first of their agents.
std::string LikeliestAgent(const PolicyInput& in) {
  if (in.last && !in.last->listed_agents.empty()) return in.last->listed_agents.front();
  return in.agents.front().name;
}

// "Which agent ...?" with the user's agents numbered, so "the first one"
// answers it. Past the clarification cap (or with a single agent), the
// likeliest agent is taken instead, and the preview lets the user correct it.
Move AskWhichAgent(const PolicyInput& in, const std::string& what, const std::string& tool) {
  if (in.agents.empty()) {
    Move move;
    move.action_type = in.intent.action_type();
    move.reply =
        "You have no agents yet. Tell me what you would like an agent to do, and I will "
        "draft one.";
    return move;
  }
  if (in.agents.size() == 1 || !MayAsk(in)) {
    const std::string agent = LikeliestAgent(in);
    Move move = ProposeOnAgent(in, agent, tool);
    move.entities["agent_name"] = agent;
    move.reply = "I'll take " + Quoted(agent) + " as the agent you mean. " + move.reply;
    return move;
  }
  return Clarify(in, kAskedAgent, "Which agent should I " + what + "?" + NumberedAgents(in.agents),
                 Names(in.agents));
}

Move ProposeCreateAgent(const PolicyInput& in) {
  // The whole of a request offered as options (partial_fit.h), else what
  // started the flow.
  std::string purpose = OptionEntity(in, kRequestedTask);
  if (purpose.empty()) purpose = GoalEntity(in, intent::kPurposeEntity);
  if (purpose.empty()) purpose = in.goal.empty() ? in.message : in.goal;
  json args = json::object();
  args["name"] = UniqueAgentName(GoalEntity(in, intent::kSuggestedNameEntity), in.agents);
  args["description"] = core::Shortened(DraftDescription(purpose), 2000);
  if (const std::string kind = GoalEntity(in, "agent_kind"); !kind.empty()) {
    args["config"] = {{"kind", kind}};
  }
  ApplyDraftEntities(in.intent, args);
  if (const std::string project = GoalEntity(in, "project");
      !project.empty() && !args.contains("steps")) {
    SetDraftSteps(GoalEntity(in, "agent_kind"), project, args);
  }
  ReadScheduleInUsersZone("create_agent", in.time_zone, args);
  args["instructions"] =
      core::Shortened(DraftInstructions(GoalEntity(in, "agent_kind"), purpose, args), 20000);
  PendingAction action = Pending("create_agent", args, execpb::TOOL_RISK_WRITE,
                                 "a new agent " + DescribeAgentDraft(args));
  Move move;
  move.action_type = intentpb::ACTION_TYPE_CREATE_AGENT;
  move.entities.insert(in.intent.entities().begin(), in.intent.entities().end());
  move.reply =
      "I can set up an agent for that." + UnreadableSchedule(in.intent) + " " + PreviewText(action);
  move.propose.push_back(std::move(action));
  return move;
}

Move ProposeOnAgent(const PolicyInput& in, const std::string& agent, const std::string& tool) {
  json args = {{"agent", agent}};
  execpb::ToolRisk risk = execpb::TOOL_RISK_WRITE;
  if (tool == "delete_agent") risk = execpb::TOOL_RISK_HIGH;
  const std::string summary = ActionSummary(tool, args, "");
  PendingAction action = Pending(tool, std::move(args), risk, summary);
  Move move;
  move.action_type = in.intent.action_type();
  move.entities.insert(in.intent.entities().begin(), in.intent.entities().end());
  move.reply = PreviewText(action);
  move.propose.push_back(std::move(action));
  return move;
}

// One run for a person: agent, status, when and how it started, and what
// it produced or why it failed.
std::string RunLine(const json& run) {
  std::string line = run.value("agent_name", std::string("an agent")) + ": " +
                     run.value("status", std::string("?"));
  std::string when = run.value("started_at", std::string()).substr(0, 16);
  std::replace(when.begin(), when.end(), 'T', ' ');
  if (!when.empty()) line += " at " + when + " UTC";
  if (run.value("trigger", std::string()) == "schedule") line += " (scheduled)";
  if (const std::string error = run.value("error", std::string()); !error.empty()) {
    return line + " — " + core::Shortened(error, 200);
  }
  // The summary after its heading (the agent's name and description).
  std::string summary = run.value("summary", std::string());
  const size_t heading_end = summary.find('\n');
  summary = heading_end == std::string::npos ? "" : summary.substr(heading_end + 1);
  if (!summary.empty()) {
    std::replace(summary.begin(), summary.end(), '\n', ' ');
    line += " — " + core::Shortened(summary, 200);
  }
  return line;
}

// A question: the read tool for the topic the intent service read
// (runs, one agent, skills, projects, templates, else the list of agents).
Move DecideQuery(const PolicyInput& in) {
  Move move;
  move.action_type = intentpb::ACTION_TYPE_QUERY_INFO;
  move.entities.insert(in.intent.entities().begin(), in.intent.entities().end());
  const std::string agent = Entity(in.intent, "agent_name");
  const std::string topic = Entity(in.intent, intent::kTopicEntity);
  if (topic == "runs") {
    json args = json::object();
    if (!agent.empty()) args["agent"] = agent;
    move.run.push_back({"list_runs", args});
  } else if (!agent.empty() && (topic == "agent" || topic.empty())) {
    move.run.push_back({"get_agent", {{"agent", agent}}});
  } else if (topic == "skills") {
    move.run.push_back({"list_skills", json::object()});
  } else if (topic == "projects") {
    move.run.push_back({"search_projects", {{"query", ""}}});
  } else if (topic == "templates") {
    move.run.push_back({"list_project_templates", json::object()});
  } else {
    move.run.push_back({"list_agents", json::object()});
  }
  return move;
}

// A lifecycle request: the operation the intent service read; any other
// administration shows what its topic asks for.
Move DecideManage(const PolicyInput& in) {
  const std::string verb = Entity(in.intent, intent::kOperationEntity);
  std::string tool;
  if (verb == "delete" || verb == "resume" || verb == "pause") tool = verb + "_agent";
  const std::string agent = Entity(in.intent, "agent_name");
  if (tool.empty()) {
    Move move = DecideQuery(in);
    move.action_type = intentpb::ACTION_TYPE_MANAGE_PLATFORM;
    return move;
  }
  if (agent.empty()) return AskWhichAgent(in, verb, tool);
  return ProposeOnAgent(in, agent, tool);
}

// The description of `agent` grown by what it should also do.
std::string AlsoDoes(const std::vector<AgentInfo>& agents, const std::string& agent,
                     const std::string& also) {
  std::string description;
  for (const AgentInfo& a : agents) {
    if (a.name == agent) description = a.description;
  }
  while (!description.empty() && (description.back() == '.' || description.back() == ' ')) {
    description.pop_back();
  }
  return core::Shortened(description + (description.empty() ? "" : ". ") + "Also: " + also + ".",
                         2000);
}

Move DecideUpdate(const PolicyInput& in) {
  std::string agent = Entity(in.intent, "agent_name");
  if (agent.empty()) {
    if (in.agents.empty() || (in.agents.size() > 1 && MayAsk(in))) {
      return AskWhichAgent(in, "change", "update_agent");
    }
    agent = LikeliestAgent(in);
  }
  json args = {{"agent", agent}};
  ApplyDraftEntities(in.intent, args);
  if (const std::string also = OptionEntity(in, kOptionChange); !also.empty()) {
    args["description"] = AlsoDoes(in.agents, agent, also);
  }
  if (args.size() == 1) {
    if (!MayAsk(in)) {
      // Past the cap: show how the agent is set up, so the user can say
      // what to change without another question.
      Move move;
      move.action_type = intentpb::ACTION_TYPE_UPDATE_AGENT;
      move.entities.insert(in.intent.entities().begin(), in.intent.entities().end());
      move.entities["agent_name"] = agent;
      move.reply = "Here is how " + Quoted(agent) + " is set up now; tell me what to change.";
      move.run.push_back({"get_agent", {{"agent", agent}}});
      return move;
    }
    const std::string unreadable = UnreadableSchedule(in.intent);
    Move move = Clarify(in, kAskedChange,
                        unreadable.empty()
                            ? "What should change about " + Quoted(agent) +
                                  "? For example when it runs, where it reads from or who gets "
                                  "the result."
                            : "When should " + Quoted(agent) + " run?" + unreadable +
                                  " For example \"every monday at 9am\" or \"weekdays at "
                                  "7:30\".");
    move.entities["agent_name"] = agent;
    return move;
  }
  std::string changes;
  if (args.contains("schedule")) {
    changes += " It will run " + ScheduleInWords(args, "the agent's time zone") + ".";
  }
  if (const std::string steps = StepsInWords(args); !steps.empty()) {
    changes += " Each run it will " + steps + ".";
  }
  if (args.contains("config")) changes += " Its settings become " + args["config"].dump() + ".";
  if (args.contains("description")) {
    changes += " It will do this: " + args["description"].get<std::string>();
  }
  PendingAction action = Pending("update_agent", args, execpb::TOOL_RISK_WRITE,
                                 "change " + Quoted(agent) + "." + changes);
  Move move;
  move.action_type = intentpb::ACTION_TYPE_UPDATE_AGENT;
  move.entities.insert(in.intent.entities().begin(), in.intent.entities().end());
  move.reply = PreviewText(action);
  move.propose.push_back(std::move(action));
  return move;
}

Move DecideCreateSkill(const PolicyInput& in) {
  const std::string& goal = in.goal.empty() ? in.message : in.goal;
  std::string name = Entity(in.intent, "skill_name");
  if (name.empty()) name = GoalEntity(in, intent::kSuggestedNameEntity);
  if (name.empty()) name = kUnnamedDraft;
  json args = {{"name", name}, {"description", core::Shortened(goal, 2000)}};
  PendingAction action =
      Pending("create_skill", args, execpb::TOOL_RISK_WRITE,
              "a new skill " + Quoted(name) + ": " + core::Shortened(goal, 200) + ".");
  Move move;
  move.action_type = intentpb::ACTION_TYPE_CREATE_SKILL;
  move.entities.insert(in.intent.entities().begin(), in.intent.entities().end());
  move.reply = PreviewText(action);
  move.propose.push_back(std::move(action));
  return move;
}

// Small talk (a recap request is answered before: DecideFirst): thanks, or
// a greeting.
Move DecideConversation(const PolicyInput& in) {
  Move move;
  move.action_type = intentpb::ACTION_TYPE_CONVERSATION;
  if (Entity(in.intent, intent::kSmallTalkEntity) == "thanks") {
    move.reply = "You're welcome! Anything else I can set up or run for you?";
  } else {
    move.reply =
        "Hi! I can set up agents for recurring work, run or change the ones you have, "
        "and tell you how they are doing. What would you like to get done?";
  }
  return move;
}

}  // namespace

std::optional<Move> ReviseLocally(const PolicyInput& in, const std::string& other_agent) {
  if (!in.last || in.last->pending.empty()) return std::nullopt;
  const PendingAction& pending = in.last->pending.front();
  Move move;
  move.action_type = in.last->action_type;
  move.entities = in.last->entities;
  for (const auto& [key, value] : in.intent.entities()) move.entities[key] = value;
  // "ok but delete beta instead": the same action on the agent named now.
  if (!other_agent.empty() && pending.arguments.contains("agent")) {
    Move retargeted = ProposeOnAgent(in, other_agent, pending.tool);
    retargeted.action_type = move.action_type;
    retargeted.entities = move.entities;
    retargeted.entities["agent_name"] = other_agent;
    retargeted.reply = "Changed: nothing was done to the first one. " + retargeted.reply;
    return retargeted;
  }
  // "make it weekly instead", "send it to the sales channel": a revision.
  json args = pending.arguments;
  const bool draft = pending.tool == "create_agent" || pending.tool == "update_agent";
  const bool revised = draft && ApplyDraftEntities(in.intent, args);
  ReadScheduleInUsersZone(pending.tool, in.time_zone, args);  // a schedule added now
  const std::string unreadable = draft ? UnreadableSchedule(in.intent) : "";
  if (!revised && unreadable.empty()) return std::nullopt;
  PendingAction action = pending;
  action.action_id = core::NewUuid();
  action.arguments = std::move(args);
  action.digest.clear();  // sealed anew by the gate
  action.targets = json::object();
  if (action.tool == "create_agent") {
    action.summary = "a new agent " + DescribeAgentDraft(action.arguments);
  }
  move.reply = (revised ? "Updated." : "Nothing changed.") + unreadable + " " + PreviewText(action);
  move.propose.push_back(std::move(action));
  KeepGoalDraft(in, move);
  return move;
}

std::string ApprovalQuestion(const PendingAction& action) {
  if (action.risk != execpb::TOOL_RISK_HIGH) {
    return R"(Shall I go ahead? Say "yes", tell me what to change, or "cancel".)";
  }
  // What in its arguments made it HIGH, when anything did.
  std::string why;
  for (const std::string& reason : action.risk_reasons) {
    absl::StrAppend(&why, why.empty() ? ": " : "; ", reason);
  }
  return absl::StrCat("This needs your approval and cannot be undone", why,
                      R"(. Reply "yes" to go ahead or "cancel" to keep things as they are.)");
}

std::string ApprovalQuestion(const std::vector<PendingAction>& actions) {
  if (actions.size() == 1) return ApprovalQuestion(actions.front());
  return std::to_string(actions.size()) +
         " actions wait for your approval. Say \"yes\" to run them all, \"cancel\" to drop "
         "them, or tell me what to change; a client can approve each one by its action id.";
}

std::string UniqueAgentName(const std::string& suggested, const std::vector<AgentInfo>& taken) {
  const std::string base = suggested.empty() ? kUnnamedDraft : suggested;
  std::set<std::string> names;
  for (const AgentInfo& agent : taken) names.insert(absl::AsciiStrToLower(agent.name));
  std::string name = base;
  for (int n = 2; names.count(absl::AsciiStrToLower(name)) != 0; ++n)
    name = base + "-" + std::to_string(n);
  return name;
}

namespace {

// The actions a request of several parts may be when one of the user's
// agents already does part of it: a task to run, a question about their
// agents, a new agent to set up (the one they have may do), or words the
// intent service is unsure of.
bool MayBePartlyCovered(const intentpb::IntentAnalysis& intent) {
  switch (intent.action_type()) {
    case intentpb::ACTION_TYPE_EXECUTE_TASK:
    case intentpb::ACTION_TYPE_QUERY_INFO:
    case intentpb::ACTION_TYPE_CREATE_AGENT:
    case intentpb::ACTION_TYPE_UNKNOWN:
      return true;
    default:
      return intent.is_ambiguous();
  }
}

// What a clarifying question settles when the intent service asked none.
std::string QuestionFor(const intentpb::Clarification& clarification) {
  std::string question;
  for (int slot : clarification.missing()) {
    const char* what = nullptr;
    switch (slot) {
      case intentpb::MISSING_SLOT_REFERENT:
        what = "which one you mean";
        break;
      case intentpb::MISSING_SLOT_PURPOSE:
        what = "what it should do";
        break;
      case intentpb::MISSING_SLOT_OBJECT:
        what = "what it should work on";
        break;
      case intentpb::MISSING_SLOT_RECIPIENT:
        what = "who should get the result";
        break;
      case intentpb::MISSING_SLOT_AGENT:
        what = "which agent";
        break;
      case intentpb::MISSING_SLOT_CHANGE:
        what = "what should change";
        break;
      default:
        continue;
    }
    question += (question.empty() ? "" : ", and ") + std::string(what);
  }
  return question.empty() ? "" : "Before I act, tell me " + question + ".";
}

// The intent service's clarifying question, with its candidates offered
// as numbered options ("the second one" answers it). An answer that names
// an agent continues the flow as it is; any other is analysed.
Move AskAsIntentSays(const PolicyInput& in) {
  const intentpb::Clarification& clarification = in.intent.clarification();
  std::string question = in.intent.clarifying_question();
  if (question.empty()) question = QuestionFor(clarification);
  if (question.empty()) question = "What exactly would you like me to do?";
  std::vector<AgentInfo> options;
  for (const std::string& name : clarification.candidates()) {
    AgentInfo option{name, "", "", "", ""};
    for (const AgentInfo& agent : in.agents) {
      if (agent.name == name) option = agent;
    }
    options.push_back(std::move(option));
  }
  const bool asks_agent = !clarification.missing().empty() &&
                          clarification.missing(0) == intentpb::MISSING_SLOT_AGENT &&
                          !options.empty();
  return Clarify(in, asks_agent ? kAskedAgent : kAskedIntent, question + NumberedAgents(options),
                 Names(options));
}

// The user's own time zone: set ("set my time zone to Berlin", "my
// timezone is Europe/Paris": previewed, it is a setting) or asked ("what is
// my time zone?"). Not in a request about an agent ("a digest at 9am, my
// time zone is Berlin"): the zone is then the draft's.
std::optional<Move> TimeZoneMove(const PolicyInput& in) {
  const std::string lowered = absl::AsciiStrToLower(in.message);
  const bool zone_words =
      absl::StrContains(lowered, "time zone") || absl::StrContains(lowered, "timezone");
  if (!zone_words) return std::nullopt;  // most messages: nothing more to read
  bool sets = false;                     // a verb that changes it: "set", "use", "switch to" ...
  for (absl::string_view word : absl::StrSplit(lowered, absl::ByAnyChar(" ,.!?;:"))) {
    sets |= word == "set" || word == "change" || word == "switch" || word == "use" ||
            word == "update" || word == "move" || word == "make";
  }
  const bool mine =
      absl::StrContains(lowered, "my time zone") || absl::StrContains(lowered, "my timezone") ||
      absl::StrContains(lowered, "our time zone") || absl::StrContains(lowered, "our timezone");
  for (const char* about_an_agent : {"agent_name", "schedule", "agent_kind"}) {
    if (!Entity(in.intent, about_an_agent).empty()) return std::nullopt;
  }
  if (!mine && !sets) return std::nullopt;
  Move move;
  move.action_type = intentpb::ACTION_TYPE_MANAGE_PLATFORM;
  move.entities.insert(in.intent.entities().begin(), in.intent.entities().end());
  const std::string zone = Entity(in.intent, "time_zone");
  if (zone.empty() && sets) {
    move.reply =
        "I did not recognise that time zone. Say it as a zone name such as 'Europe/Berlin', "
        "'America/New_York' or 'UTC', or as a city (\"set my time zone to Tokyo\").";
    return move;
  }
  if (zone.empty()) {
    move.run.push_back({"get_settings", json::object()});
    return move;
  }
  if (zone == in.time_zone) {
    move.reply = "Your time zone is " + zone + " already.";
    return move;
  }
  json args = {{"time_zone", zone}};
  PendingAction action = Pending("update_settings", args, execpb::TOOL_RISK_WRITE,
                                 ActionSummary("update_settings", args, ""));
  move.reply = "Ready to " + action.summary +
               R"( Shall I go ahead? Say "yes", tell me what to change, or "cancel".)";
  move.propose.push_back(std::move(action));
  return move;
}

// The moves that come before the action's own: a recap, project work as a
// plan, a request an agent covers in part, a clarifying question.
std::optional<Move> DecideFirst(const PolicyInput& in) {
  const intentpb::IntentAnalysis& intent = in.intent;
  if (intent.summary_worthy()) return RecapMove(in);
  if (std::optional<Move> zone = TimeZoneMove(in)) return zone;
  // Creating or auditing a project is work of several steps: a plan (the
  // engine's template for the context). Creating writes, so its plan is
  // shown for review first; an audit only reads and runs at once.
  const bool project_work = in.context_type == intentpb::CONTEXT_TYPE_PROJECT_CREATE ||
                            in.context_type == intentpb::CONTEXT_TYPE_PROJECT_AUDIT;
  if (in.plans && project_work && intent.action_type() != intentpb::ACTION_TYPE_CONVERSATION) {
    Move move;
    move.action_type = intent.action_type();
    move.entities.insert(intent.entities().begin(), intent.entities().end());
    move.plan = LocalPlan{in.goal.empty() ? in.message : in.goal,
                          in.context_type == intentpb::CONTEXT_TYPE_PROJECT_CREATE};
    return move;
  }
  // Only a request of its own: a reply to what waits ("make it weekly and
  // send it to the team") revises that.
  const bool fresh = !in.last || (in.last->pending.empty() && in.last->clarifications == 0);
  if (fresh && MayAsk(in) && MayBePartlyCovered(intent)) {
    if (std::optional<PartialFit> fit = FindPartialFit(intent, in.agents)) {
      return OfferPartialFit(in, *fit);
    }
  }
  if (intent.clarification().needed() && MayAsk(in)) return AskAsIntentSays(in);
  const bool unsure =
      intent.is_ambiguous() || intent.action_type() == intentpb::ACTION_TYPE_UNKNOWN;
  if (unsure && MayAsk(in)) {
    std::string question = intent.clarifying_question();
    if (question.empty()) {
      question =
          "I didn't catch what you would like me to do. You can ask me to set up a new "
          "agent, to run, change or pause one of yours, or to list them.";
    }
    return Clarify(in, kAskedIntent, question);
  }
  return std::nullopt;
}

}  // namespace

Move DecideLocally(const PolicyInput& in) {
  const intentpb::IntentAnalysis& intent = in.intent;
  if (std::optional<Move> first = DecideFirst(in)) {
    KeepGoalDraft(in, *first);
    return *std::move(first);
  }
  intentpb::ActionType action = intent.action_type();
  if (action == intentpb::ACTION_TYPE_UNKNOWN) {
    // The clarification cap was reached: proceed with the best reading.
    action = intent.alternative_action() != intentpb::ACTION_TYPE_UNSPECIFIED
                 ? intent.alternative_action()
                 : intentpb::ACTION_TYPE_QUERY_INFO;
  }
  Move move;
  switch (action) {
    case intentpb::ACTION_TYPE_CREATE_AGENT:
      move = ProposeCreateAgent(in);
      break;
    case intentpb::ACTION_TYPE_UPDATE_AGENT:
      move = DecideUpdate(in);
      break;
    case intentpb::ACTION_TYPE_CREATE_SKILL:
      move = DecideCreateSkill(in);
      break;
    case intentpb::ACTION_TYPE_EXECUTE_TASK: {
      const std::string agent = Entity(intent, "agent_name");
      if (!agent.empty()) {
        move = ProposeOnAgent(in, agent, "run_agent");
      } else if (in.agents.empty()) {
        move = ProposeCreateAgent(in);  // no agent can do it yet: draft one
      } else {
        move = AskWhichAgent(in, "run", "run_agent");
      }
      break;
    }
    case intentpb::ACTION_TYPE_MANAGE_PLATFORM:
      move = DecideManage(in);
      break;
    case intentpb::ACTION_TYPE_CONVERSATION:
      move = DecideConversation(in);
      break;
    default:
      move = DecideQuery(in);
      break;
  }
  KeepGoalDraft(in, move);
  return move;
}

bool AnswerSkipsAnalysis(const FlowState& last) {
  if (last.asked == kAskedRecovery) return last.recovery.has_value();
  return last.clarifications > 0 &&
         (last.asked == kAskedAgent || last.asked == kAskedChange || last.asked == kAskedModel ||
          last.asked == kAskedOption || last.asked == kAskedMeeting || last.asked == kAskedEmail);
}

namespace {

// The option of a partial fit (partial_fit.h) at 0-based position `at`: a
// run of the agent, a new agent for the whole request, or a change of the
// agent. False when `at` picks none of the three.
bool PickOption(const FlowState& last, int at, intentpb::IntentAnalysis& analysis) {
  auto entity = [&last](const char* key) {
    auto it = last.entities.find(key);
    return it == last.entities.end() ? std::string() : it->second;
  };
  auto& entities = *analysis.mutable_entities();
  entities.clear();
  switch (at) {
    case 0:
      analysis.set_action_type(intentpb::ACTION_TYPE_EXECUTE_TASK);
      entities["agent_name"] = entity(kOptionAgent);
      break;
    case 1:
      analysis.set_action_type(intentpb::ACTION_TYPE_CREATE_AGENT);
      entities[kRequestedTask] = entity(kRequestedTask);
      break;
    case 2:
      analysis.set_action_type(intentpb::ACTION_TYPE_UPDATE_AGENT);
      entities["agent_name"] = entity(kOptionAgent);
      entities[kOptionChange] = entity(kOptionChange);
      break;
    default:
      return false;
  }
  analysis.set_reference(intentpb::REFERENCE_KIND_ORDINAL);
  return true;
}

}  // namespace

intentpb::PendingQuestion PendingQuestionOf(const FlowState& last) {
  intentpb::PendingQuestion question;
  if (last.asked == kAskedAgent) {
    question.set_kind(intentpb::QUESTION_KIND_AGENT);
    for (const std::string& name : last.listed_agents) question.add_options(name);
  } else if ((last.asked == kAskedMeeting || last.asked == kAskedEmail) &&
             !last.listed_agents.empty()) {
    // Which contact or which time: the options as the question numbered them.
    question.set_kind(intentpb::QUESTION_KIND_OPTION);
    for (const std::string& option : last.listed_agents) question.add_options(option);
  } else if (last.asked == kAskedRecovery && last.recovery) {
    question.set_kind(intentpb::QUESTION_KIND_OPTION);
    for (const std::string& option : last.recovery->options) question.add_options(option);
  } else if (last.asked == kAskedOption) {
    question.set_kind(intentpb::QUESTION_KIND_OPTION);
    for (const char* option : {"run it anyway", "create a new agent", "change the agent"}) {
      question.add_options(option);
    }
  } else {
    question.set_kind(intentpb::QUESTION_KIND_OPEN);
  }
  return question;
}

intentpb::IntentAnalysis AnalysisOfAnswer(const FlowState& last,
                                          const intentpb::ReplyDecision& reply,
                                          bool* answer_settles) {
  intentpb::IntentAnalysis analysis;
  analysis.set_action_type(last.action_type == intentpb::ACTION_TYPE_UNSPECIFIED
                               ? intentpb::ACTION_TYPE_UNKNOWN
                               : last.action_type);
  analysis.set_confidence(1.0f);
  analysis.set_source(intentpb::INTENT_SOURCE_FAST_PATH);
  analysis.set_reasoning("the answer to the clarifying question of the flow: " + reply.reasoning());
  auto& entities = *analysis.mutable_entities();
  entities.insert(last.entities.begin(), last.entities.end());
  bool settles = false;
  if (reply.kind() == intentpb::REPLY_KIND_ANSWER) {
    if (last.asked == kAskedOption) {
      settles = reply.option() > 0 && PickOption(last, reply.option() - 1, analysis);
    } else {
      for (const auto& [key, value] : reply.fields()) entities[key] = value;
      settles = !reply.fields().empty();
    }
  }
  if (answer_settles != nullptr) *answer_settles = settles;
  return analysis;
}

namespace {
std::string DescribeResultOf(const ToolStep& step, const json& result, bool is_error,
                             std::vector<std::string>* listed_agents);
}  // namespace

std::string DescribeResult(const ToolStep& step, const json& result, bool is_error,
                           std::vector<std::string>* listed_agents) {
  // A tool's result (or a model's arguments) may hold any JSON type where a
  // string is expected: the words then stay general.
  try {
    if (std::string booked = DescribeMeetingResult(step, result, is_error); !booked.empty()) {
      return booked;
    }
    if (std::string sent = DescribeEmailResult(step, result, is_error); !sent.empty()) {
      return sent;
    }
    return DescribeResultOf(step, result, is_error, listed_agents);
  } catch (const json::exception&) {
    return (is_error ? "It did not work: " : "Done: ") + step.tool + ".";
  }
}

namespace {
// The user's settings as get_settings or update_settings returned them.
std::optional<std::string> SettingsInWords(const ToolStep& step, const json& result) {
  if ((step.tool != "update_settings" && step.tool != "get_settings") ||
      !result.contains("settings") || !result["settings"].is_object()) {
    return std::nullopt;
  }
  const std::string zone = result["settings"].value("time_zone", std::string("UTC"));
  return step.tool == "update_settings"
             ? "Done: your time zone is " + zone +
                   ". New schedules are read in it; your agents keep the zone they have."
             : "Your time zone is " + zone +
                   ": schedules that name none are read in it. Say \"set my time zone to "
                   "Europe/Berlin\" (or a city) to change it.";
}

std::string DescribeResultOf(const ToolStep& step, const json& result, bool is_error,
                             std::vector<std::string>* listed_agents) {
  if (is_error) {
    std::string message = "it failed";
    if (result.is_object() && result.contains("error") && result["error"].is_object()) {
      message = result["error"].value("message", message);
    }
    return "I could not " + step.tool + ": " + message + ".";
  }
  const std::string agent =
      step.arguments.is_object() ? step.arguments.value("agent", std::string()) : "";
  if (step.tool == "list_agents") {
    std::vector<AgentInfo> agents = AgentsFromListResult(result);
    if (agents.empty()) {
      return "You have no agents yet. Tell me about a task that eats your time, and I will "
             "draft one.";
    }
    if (listed_agents != nullptr) *listed_agents = Names(agents);
    return "Your agents:" + NumberedAgents(agents);
  }
  if (step.tool == "get_agent" && result.contains("agent") && result["agent"].is_object()) {
    const json& a = result["agent"];
    std::string text = Quoted(a.value("name", agent)) + " is " + a.value("status", "active");
    const std::string schedule =
        a.contains("schedule") && a["schedule"].is_string() ? a["schedule"].get<std::string>() : "";
    text += schedule.empty() ? " and runs when asked." : " and runs " + schedule + ".";
    if (a.contains("description") && a["description"].is_string()) {
      text += " " + a["description"].get<std::string>();
    }
    return text;
  }
  if (step.tool == "list_runs" && result.contains("runs") && result["runs"].is_array()) {
    if (result["runs"].empty()) return "There are no runs yet.";
    std::string text = "Latest runs:";
    int shown = 0;
    for (const json& run : result["runs"]) {
      if (!run.is_object() || ++shown > 10) break;
      text += "\n- " + RunLine(run);
    }
    return text;
  }
  if (step.tool == "run_agent") {
    std::string text = "Done: " + Quoted(agent) + " ran";
    const json run = result.contains("run") && result["run"].is_object() ? result["run"] : result;
    text += " (" + run.value("status", std::string("recorded")) + ").";
    if (const std::string error = run.value("error", std::string()); !error.empty()) {
      text += " Why: " + core::Shortened(error, 300);
    } else if (run.contains("output") && run["output"].is_object()) {
      text += "\n" + core::Shortened(run["output"].value("summary", std::string()), 1500);
    }
    return text;
  }
  if (step.tool == "create_agent") {
    const json made =
        result.contains("agent") && result["agent"].is_object() ? result["agent"] : json::object();
    const std::string schedule =
        made.value("schedule", step.arguments.value("schedule", std::string()));
    return "Done: the agent " + Quoted(step.arguments.value("name", std::string())) +
           " is created" + (schedule.empty() ? "." : " and runs " + schedule + ".");
  }
  if (std::optional<std::string> settings = SettingsInWords(step, result)) return *settings;
  if (step.tool == "update_agent") return "Done: " + Quoted(agent) + " is updated.";
  if (step.tool == "pause_agent") return "Done: " + Quoted(agent) + " is paused.";
  if (step.tool == "resume_agent") return "Done: " + Quoted(agent) + " is running again.";
  if (step.tool == "delete_agent") return "Done: " + Quoted(agent) + " is deleted.";
  if (step.tool == "create_skill") {
    return "Done: the skill " + Quoted(step.arguments.value("name", std::string())) +
           " is created.";
  }
  if (result.is_object() && result.contains("count") && result["count"].is_number()) {
    return "Found " + std::to_string(result["count"].get<int64_t>()) + ": " +
           core::Shortened(result.dump(), 1500);
  }
  return core::Shortened(result.dump(), 1500);
}
}  // namespace

}  // namespace omniforge::orchestrator
