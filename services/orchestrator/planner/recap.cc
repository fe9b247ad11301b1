#include "services/orchestrator/planner/recap.h"

#include <algorithm>

#include "libs/core/text.h"
#include "services/orchestrator/planner/partial_fit.h"
#include "services/orchestrator/plans/plan_model.h"

namespace omniforge::orchestrator {
namespace {

// The sentences of `text` that start with `lead`, without it and without
// their closing full stop ("Done: 'x' ran (succeeded)." -> "'x' ran
// (succeeded)"). A sentence ends at ". " or a line's end.
std::vector<std::string> SentencesAfter(const std::string& text, const std::string& lead) {
  std::vector<std::string> found;
  size_t at = 0;
  while ((at = text.find(lead, at)) != std::string::npos) {
    at += lead.size();
    size_t end = text.size();
    for (const char* stop : {". ", ".\n", "\n"}) end = std::min(end, text.find(stop, at));
    std::string sentence = text.substr(at, end - at);
    while (!sentence.empty() && (sentence.back() == '.' || sentence.back() == ' ')) {
      sentence.pop_back();
    }
    if (!sentence.empty()) found.push_back(core::Shortened(sentence, 200));
    at = end;
  }
  return found;
}

// A tool that changes something (the platform's read tools list, get or
// search).
bool Changes(const std::string& tool) {
  for (const char* read : {"list_", "get_", "search_"}) {
    if (tool.rfind(read, 0) == 0) return false;
  }
  return true;
}

void AddOnce(std::vector<std::string>& items, std::string item) {
  if (std::find(items.begin(), items.end(), item) == items.end()) items.push_back(std::move(item));
}

// What an assistant turn did or had decided, in its own words ("Done: ...",
// "OK, I won't ..."); for a turn whose words say none of it, the tools its
// routing names.
void AddDone(const HistoryTurn& turn, std::vector<std::string>& done) {
  bool said = false;
  for (std::string& item : SentencesAfter(turn.content, "Done: ")) {
    AddOnce(done, std::move(item));
    said = true;
  }
  for (const std::string& item : SentencesAfter(turn.content, "OK, I won't ")) {
    AddOnce(done, "you called off: " + item + " (nothing was changed)");
    said = true;
  }
  if (said) return;
  auto agent = turn.entities.find("agent_name");
  for (const std::string& tool : turn.tools_used) {
    // A plan's reply says what it did ("Done: the plan for ...").
    if (!Changes(tool) || tool == kCreatePlanTool) continue;
    std::string words = tool;
    std::replace(words.begin(), words.end(), '_', ' ');
    AddOnce(done, words + (agent == turn.entities.end() ? "" : " '" + agent->second + "'"));
  }
}

// The first line of `text`, shortened.
std::string FirstLine(const std::string& text) {
  return core::Shortened(text.substr(0, text.find('\n')), 200);
}

// The question the last reply asked and no message answered yet, as an
// open item: the flow says it asked one (the options of a partial fit are
// named), or (a reply stored without routing) its first line asks one.
std::string UnansweredQuestion(const PolicyInput& in) {
  if (in.history.empty() || in.history.back().from_user) return "";
  if (in.last && in.last->clarifications > 0 && in.last->asked == kAskedOption) {
    auto entity = [&in](const char* key) {
      auto it = in.last->entities.find(key);
      return it == in.last->entities.end() ? std::string() : it->second;
    };
    const std::string agent = "'" + entity(kOptionAgent) + "'";
    return "for \"" + entity(kRequestedTask) + "\" you have not picked an option yet: 1. run " +
           agent + " anyway, 2. a new agent that does all of it, 3. change " + agent;
  }
  const HistoryTurn& last = in.history.back();
  const std::string line = FirstLine(last.content);
  const bool asked = last.routed ? (in.last && in.last->clarifications > 0)
                                 : (!line.empty() && line.back() == '?');
  return asked ? "my question is not answered yet: \"" + line + "\"" : "";
}

std::string PlanOpen(const PlanRef& plan) {
  const std::string what = "the plan \"" + core::Shortened(plan.objective, 120) + "\"";
  switch (ParsePlanStatus(plan.status).value_or(PlanStatus::kDraft)) {
    case PlanStatus::kPendingReview:
      return what + " waits for your review";
    case PlanStatus::kWaitingOnUser:
      return "a step of " + what + " waits for your answer";
    case PlanStatus::kRunning:
    case PlanStatus::kApproved:
      return what + " stopped before its end; say \"continue\" to finish it";
    default:
      return "";
  }
}

std::vector<std::string> OpenItems(const PolicyInput& in) {
  std::vector<std::string> open;
  if (in.last) {
    for (const PendingAction& action : in.last->pending) {
      std::string summary = action.summary;
      while (!summary.empty() && summary.back() == '.') summary.pop_back();
      open.push_back("waiting for your approval: " + summary);
    }
    if (in.last->plan) {
      if (std::string plan = PlanOpen(*in.last->plan); !plan.empty()) open.push_back(plan);
    }
  }
  if (const std::string question = UnansweredQuestion(in); !question.empty()) {
    open.push_back(question);
  }
  if (in.last && in.last->suspended_flow) {
    open.push_back("set aside for a newer message: \"" +
                   core::Shortened(in.last->suspended_flow->goal, 120) +
                   R"("; say "continue" to pick it up)");
  }
  return open;
}

void AddList(std::string& text, const char* title, const std::vector<std::string>& items) {
  if (items.empty()) return;
  text += std::string("\n") + title;
  for (const std::string& item : items) text += "\n- " + item;
}

}  // namespace

Recap MakeRecap(const PolicyInput& in) {
  Recap recap;
  for (size_t i = 0; i < in.history.size(); ++i) {
    const HistoryTurn& turn = in.history[i];
    if (!turn.from_user) {
      AddDone(turn, recap.done);
      continue;
    }
    // Small talk ("hi", "thanks", an earlier recap) is no goal: its reply
    // was routed as conversation.
    const bool small_talk =
        i + 1 < in.history.size() && in.history[i + 1].routed &&
        in.history[i + 1].action_type == ::omniforge::intent::v1::ACTION_TYPE_CONVERSATION;
    if (recap.goal.empty() && !small_talk) recap.goal = core::Shortened(turn.content, 200);
  }
  recap.open = OpenItems(in);
  return recap;
}

std::string RecapText(const Recap& recap, const PolicyInput& in) {
  if (recap.goal.empty() && recap.done.empty() && recap.open.empty()) {
    return "We have only just started: nothing was asked or done in this conversation yet. "
           "What would you like to get done?";
  }
  std::string text = "Here is where we are.";
  if (!recap.goal.empty()) text += "\nYou came to me with: \"" + recap.goal + "\"";
  AddList(text, "Done so far:", recap.done);
  if (recap.done.empty()) text += "\nNothing has been done yet.";
  AddList(text, "Still open:", recap.open);
  if (recap.open.empty()) {
    text += "\nNothing is waiting on you. What would you like to do next?";
  } else if (in.last && !in.last->pending.empty()) {
    text += "\n" + ApprovalQuestion(in.last->pending);
  } else {
    text += "\nTell me how you would like to go on.";
  }
  return text;
}

Move RecapMove(const PolicyInput& in) {
  Move move;
  move.action_type = ::omniforge::intent::v1::ACTION_TYPE_CONVERSATION;
  move.reply = RecapText(MakeRecap(in), in);
  if (!in.last) return move;
  // What waited still waits: the actions for their approval, the question
  // for its answer (in the order its list was given); the reply's routing
  // says what they are about, so that "yes" reads as approving them.
  move.propose = in.last->pending;
  if (!in.last->pending.empty() || in.last->clarifications > 0) {
    move.action_type = in.last->action_type;
    move.entities = in.last->entities;
  }
  if (in.last->clarifications > 0) {
    move.clarifying = true;
    move.asked = in.last->asked;
    move.listed_agents = in.last->listed_agents;
  }
  return move;
}

}  // namespace omniforge::orchestrator
