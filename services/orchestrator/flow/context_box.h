// The context box of a flow: what a multi-turn task is about and where it
// stands, kept beside the conversation so that every planner call sees it
// in a few lines instead of re-reading the whole history. A turn updates it
// at each step (after the intent, after each tool result, when an action is
// drafted, approved or dropped) and stores it once, at the end of the turn.
//
// Sections: GOAL (what the flow is for), ENTITIES (names and values it
// refers to), CONSTRAINTS (what bounds the answer: the client's context, the
// user's stated requirements), DATA (what the tools found), PROGRESS (what was
// done), BLOCKERS (what stops the flow now), NEXT (what comes next) and notes.
// Lists keep their newest entries within fixed caps, so the box stays small.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace omniforge::orchestrator {

struct ContextBox {
  std::string goal;
  std::map<std::string, std::string> entities;
  std::vector<std::string> constraints;
  std::vector<std::string> data;
  std::vector<std::string> progress;
  std::vector<std::string> blockers;
  std::vector<std::string> next;
  std::vector<std::string> notes;

  // Appends `item` (shortened) to a list, dropping its oldest entries past
  // the list's cap; an item equal to the newest one is not repeated.
  static void Add(std::vector<std::string>& list, const std::string& item);

  bool empty() const;
};

nlohmann::json ContextBoxToJson(const ContextBox& box);
// Lenient like the routing: missing or mistyped fields read as empty.
ContextBox ContextBoxFromJson(const nlohmann::json& json);

// The box as a compact section of a planner prompt: one line per non-empty
// section, "GOAL: ...", "ENTITIES: agent_name=x; schedule=y", ...
std::string RenderContextBox(const ContextBox& box);

}  // namespace omniforge::orchestrator
