#include "services/orchestrator/planner/local_policy.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "absl/strings/ascii.h"
#include "libs/core/ids.h"
#include "libs/core/text.h"
#include "libs/words/lists.h"
#include "services/intent/entities/entities.h"
#include "services/orchestrator/approvals/preview.h"
#include "services/orchestrator/planner/partial_fit.h"
#include "services/orchestrator/planner/recap.h"

namespace omniforge::orchestrator {

std::vector<std::string> Words(const std::string& message) {
  return words::Tokens(message, words::Tokenizer::kAsciiAlnum);
}

namespace {

namespace intentpb = ::omniforge::intent::v1;
namespace execpb = ::omniforge::executor::v1;
using nlohmann::json;

bool HasWord(const std::vector<std::string>& words, std::initializer_list<const char*> any) {
  for (const std::string& w : words) {
    for (const char* candidate : any) {
      if (w == candidate) return true;
    }
  }
  return false;
}

bool HasPrefix(const std::vector<std::string>& words, std::initializer_list<const char*> any) {
  for (const std::string& w : words) {
    for (const char* candidate : any) {
      if (w.rfind(candidate, 0) == 0) return true;
    }
  }
  return false;
}

std::string Quoted(const std::string& name) { return "'" + name + "'"; }

// What an agent drafted from `message` is for, as a sentence: the user's
// words without a trailing request for help ("can you help?").
std::string Purpose(const std::string& message) {
  std::string text = message;
  const std::string lower = absl::AsciiStrToLower(text);
  for (const char* ask : {"can you help", "could you help", "can you do something", "any ideas",
                          "help me", "please help"}) {
    const size_t at = lower.rfind(ask);
    if (at != std::string::npos && at > 0 && lower.size() - at < std::string(ask).size() + 4) {
      text.resize(at);
      break;
    }
  }
  while (!text.empty() && std::string(" \t\n?.!,;:-").find(text.back()) != std::string::npos) {
    text.pop_back();
  }
  // A dash (ASCII or an em dash) left at the end.
  for (const std::string dash : {"\xE2\x80\x94", "\xE2\x80\x93"}) {
    if (text.size() >= dash.size() &&
        text.compare(text.size() - dash.size(), dash.size(), dash) == 0) {
      text.resize(text.size() - dash.size());
      while (!text.empty() && text.back() == ' ') text.pop_back();
    }
  }
  if (text.empty()) text = message;
  text[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[0])));
  return "Takes care of this for you: " + text + ".";
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

// What an option picked by the user carries (partial_fit.h): read only in
// the turn that answers the options.
std::string OptionEntity(const PolicyInput& in, const char* key) {
  return in.last && in.last->asked == kAskedOption ? Entity(in.intent, key) : std::string();
}

// Entities that fill in an agent draft: schedule, data source, recipients.
bool ApplyDraftEntities(const intentpb::IntentAnalysis& intent, json& args) {
  bool changed = false;
  if (const std::string schedule = Entity(intent, "schedule"); !schedule.empty()) {
    args["schedule"] = schedule;
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
  std::string goal = OptionEntity(in, kRequestedTask);
  if (goal.empty()) goal = in.goal.empty() ? in.message : in.goal;
  json args = json::object();
  args["name"] = SuggestAgentName(goal, in.agents);
  args["description"] = core::Shortened(Purpose(goal), 2000);
  ApplyDraftEntities(in.intent, args);
  PendingAction action = Pending("create_agent", args, execpb::TOOL_RISK_WRITE,
                                 "a new agent " + DescribeAgentDraft(args));
  Move move;
  move.action_type = intentpb::ACTION_TYPE_CREATE_AGENT;
  move.entities.insert(in.intent.entities().begin(), in.intent.entities().end());
  move.reply = "I can set up an agent for that. " + PreviewText(action);
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

Move DecideQuery(const PolicyInput& in, const std::vector<std::string>& words) {
  Move move;
  move.action_type = intentpb::ACTION_TYPE_QUERY_INFO;
  move.entities.insert(in.intent.entities().begin(), in.intent.entities().end());
  const std::string agent = Entity(in.intent, "agent_name");
  if (HasPrefix(words, {"run", "histor", "fail", "succeed", "log"}) &&
      !HasWord(words, {"agents"})) {
    json args = json::object();
    if (!agent.empty()) args["agent"] = agent;
    move.run.push_back({"list_runs", args});
  } else if (!agent.empty() && !HasWord(words, {"agents", "list", "all"})) {
    move.run.push_back({"get_agent", {{"agent", agent}}});
  } else if (HasPrefix(words, {"skill"})) {
    move.run.push_back({"list_skills", json::object()});
  } else if (HasPrefix(words, {"project"})) {
    move.run.push_back({"search_projects", {{"query", ""}}});
  } else if (HasPrefix(words, {"template"})) {
    move.run.push_back({"list_project_templates", json::object()});
  } else {
    move.run.push_back({"list_agents", json::object()});
  }
  return move;
}

Move DecideManage(const PolicyInput& in, const std::vector<std::string>& words) {
  std::string tool;
  std::string verb;
  if (HasPrefix(words, {"delet", "remov", "destroy", "trash"})) {
    tool = "delete_agent";
    verb = "delete";
  } else if (HasPrefix(words, {"resum", "unpaus", "restart", "enabl", "reactivat"})) {
    tool = "resume_agent";
    verb = "resume";
  } else if (HasPrefix(words, {"paus", "stop", "disabl", "halt", "suspend", "mute"})) {
    tool = "pause_agent";
    verb = "pause";
  }
  const std::string agent = Entity(in.intent, "agent_name");
  if (tool.empty()) {
    Move move = DecideQuery(in, words);
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
    Move move = Clarify(in, kAskedChange,
                        "What should change about " + Quoted(agent) +
                            "? For example when it runs, where it reads from or who gets "
                            "the result.");
    move.entities["agent_name"] = agent;
    return move;
  }
  std::string changes;
  if (args.contains("schedule"))
    changes += " It will run " + args["schedule"].get<std::string>() + ".";
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
  if (name.empty()) name = SuggestAgentName(goal, {});
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

// Small talk (a recap request is answered before: DecideFirst).
Move DecideConversation(const std::vector<std::string>& words) {
  Move move;
  move.action_type = intentpb::ACTION_TYPE_CONVERSATION;
  if (HasPrefix(words, {"thank", "thx", "cheers"})) {
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
  const bool revised = (pending.tool == "create_agent" || pending.tool == "update_agent") &&
                       ApplyDraftEntities(in.intent, args);
  if (!revised) return std::nullopt;
  PendingAction action = pending;
  action.action_id = core::NewUuid();
  action.arguments = std::move(args);
  action.digest.clear();  // sealed anew by the gate
  action.targets = json::object();
  if (action.tool == "create_agent") {
    action.summary = "a new agent " + DescribeAgentDraft(action.arguments);
  }
  move.reply = "Updated. " + PreviewText(action);
  move.propose.push_back(std::move(action));
  return move;
}

std::string ApprovalQuestion(const PendingAction& action) {
  return action.risk == execpb::TOOL_RISK_HIGH
             ? "This needs your approval and cannot be undone. Reply \"yes\" to go ahead or "
               "\"cancel\" to keep things as they are."
             : R"(Shall I go ahead? Say "yes", tell me what to change, or "cancel".)";
}

std::string ApprovalQuestion(const std::vector<PendingAction>& actions) {
  if (actions.size() == 1) return ApprovalQuestion(actions.front());
  return std::to_string(actions.size()) +
         " actions wait for your approval. Say \"yes\" to run them all, \"cancel\" to drop "
         "them, or tell me what to change; a client can approve each one by its action id.";
}

std::string SuggestAgentName(const std::string& message, const std::vector<AgentInfo>& taken) {
  static const std::set<std::string> kSkip = {
      "a",      "an",        "the",    "our",    "my",     "we",    "i",     "you",   "can",
      "could",  "would",     "please", "help",   "me",     "us",    "to",    "for",   "of",
      "and",    "or",        "on",     "in",     "at",     "is",    "are",   "it",    "that",
      "this",   "take",      "takes",  "hours",  "always", "every", "each",  "with",  "from",
      "into",   "an",        "be",     "do",     "does",   "want",  "need",  "make",  "set",
      "up",     "create",    "build",  "agent",  "bot",    "some",  "so",    "too",   "very",
      "really", "just",      "keep",   "keeps",  "get",    "gets",  "there", "their", "they",
      "them",   "have",      "has",    "had",    "was",    "were",  "been",  "all",   "any",
      "when",   "what",      "which",  "who",    "how",    "why",   "about", "like",  "new",
      "one",    "something", "thing",  "things", "lot",    "lots",  "way",   "much",  "many"};
  std::vector<std::string> picked;
  for (const std::string& word : Words(message)) {
    if (kSkip.count(word) != 0 || word.size() < 3 ||
        std::isdigit(static_cast<unsigned char>(word[0]))) {
      continue;
    }
    if (std::find(picked.begin(), picked.end(), word) != picked.end()) continue;
    picked.push_back(word);
    if (picked.size() == 3) break;
  }
  std::string base;
  for (const std::string& word : picked) base += (base.empty() ? "" : "-") + word;
  if (base.empty()) base = "assistant";
  base = base.substr(0, 60);
  base += picked.size() < 3 ? "-agent" : "";
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

// The moves that come before the action's own: a recap, project work as a
// plan, a request an agent covers in part, a clarifying question.
std::optional<Move> DecideFirst(const PolicyInput& in) {
  const intentpb::IntentAnalysis& intent = in.intent;
  if (intent.summary_worthy()) return RecapMove(in);
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
    if (std::optional<PartialFit> fit = FindPartialFit(in.message, in.agents)) {
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
  const std::vector<std::string> words = Words(in.message);
  const intentpb::IntentAnalysis& intent = in.intent;
  if (std::optional<Move> first = DecideFirst(in)) return *std::move(first);
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
      move = DecideManage(in, words);
      break;
    case intentpb::ACTION_TYPE_CONVERSATION:
      move = DecideConversation(words);
      break;
    default:
      move = DecideQuery(in, words);
      break;
  }
  return move;
}

bool AnswerSkipsAnalysis(const FlowState& last) {
  return last.clarifications > 0 && (last.asked == kAskedAgent || last.asked == kAskedChange ||
                                     last.asked == kAskedModel || last.asked == kAskedOption);
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
    return DescribeResultOf(step, result, is_error, listed_agents);
  } catch (const json::exception&) {
    return (is_error ? "It did not work: " : "Done: ") + step.tool + ".";
  }
}

namespace {
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
      text += "\n- " + run.value("agent_name", std::string("an agent")) + ": " +
              run.value("status", std::string("?"));
    }
    return text;
  }
  if (step.tool == "run_agent") {
    std::string text = "Done: " + Quoted(agent) + " ran";
    if (result.contains("run") && result["run"].is_object()) {
      text += " (" + result["run"].value("status", std::string("recorded")) + ")";
    } else if (result.contains("status") && result["status"].is_string()) {
      text += " (" + result["status"].get<std::string>() + ")";
    }
    return text + ".";
  }
  if (step.tool == "create_agent") {
    return "Done: the agent " + Quoted(step.arguments.value("name", std::string())) +
           " is created" +
           (step.arguments.contains("schedule")
                ? " and runs " + step.arguments["schedule"].get<std::string>() + "."
                : ".");
  }
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
