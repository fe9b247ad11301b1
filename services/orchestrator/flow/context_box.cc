#include "services/orchestrator/flow/context_box.h"

#include <utility>

#include "libs/core/text.h"

namespace omniforge::orchestrator {
namespace {

using nlohmann::json;

// Per list: enough for a flow of a few turns, small enough for every prompt.
constexpr size_t kMaxItems = 8;
constexpr size_t kMaxItemBytes = 300;
constexpr size_t kMaxGoalBytes = 1000;

std::vector<std::string> ListAt(const json& object, const char* key) {
  std::vector<std::string> items;
  auto it = object.find(key);
  if (it == object.end() || !it->is_array()) return items;
  for (const json& item : *it) {
    if (item.is_string()) ContextBox::Add(items, item.get<std::string>());
  }
  return items;
}

struct Section {
  const char* key;    // in JSON
  const char* title;  // in the prompt
  std::vector<std::string> ContextBox::*list;
};

constexpr Section kLists[] = {
    {"constraints", "CONSTRAINTS", &ContextBox::constraints},
    {"data", "DATA", &ContextBox::data},
    {"progress", "PROGRESS", &ContextBox::progress},
    {"blockers", "BLOCKERS", &ContextBox::blockers},
    {"next", "NEXT", &ContextBox::next},
    {"notes", "NOTES", &ContextBox::notes},
};

}  // namespace

void ContextBox::Add(std::vector<std::string>& list, const std::string& item) {
  if (item.empty()) return;
  std::string shortened = core::Shortened(item, kMaxItemBytes);
  if (!list.empty() && list.back() == shortened) return;
  list.push_back(std::move(shortened));
  if (list.size() > kMaxItems) list.erase(list.begin(), list.end() - kMaxItems);
}

bool ContextBox::empty() const {
  if (!goal.empty() || !entities.empty()) return false;
  for (const Section& section : kLists) {
    if (!(this->*section.list).empty()) return false;
  }
  return true;
}

json ContextBoxToJson(const ContextBox& box) {
  json out = {{"goal", box.goal}, {"entities", box.entities}};
  for (const Section& section : kLists) out[section.key] = box.*section.list;
  return out;
}

ContextBox ContextBoxFromJson(const json& in) {
  ContextBox box;
  if (!in.is_object()) return box;
  if (auto it = in.find("goal"); it != in.end() && it->is_string()) {
    box.goal = core::Shortened(it->get<std::string>(), kMaxGoalBytes);
  }
  if (auto it = in.find("entities"); it != in.end() && it->is_object()) {
    for (const auto& [key, value] : it->items()) {
      if (value.is_string()) box.entities[key] = value.get<std::string>();
    }
  }
  for (const Section& section : kLists) box.*section.list = ListAt(in, section.key);
  return box;
}

std::string RenderContextBox(const ContextBox& box) {
  std::string text;
  if (!box.goal.empty()) text += "GOAL: " + core::Shortened(box.goal, kMaxGoalBytes) + "\n";
  if (!box.entities.empty()) {
    text += "ENTITIES:";
    const char* separator = " ";
    for (const auto& [key, value] : box.entities) {
      text += separator + key + "=" + core::Shortened(value, kMaxItemBytes);
      separator = "; ";
    }
    text += "\n";
  }
  for (const Section& section : kLists) {
    const std::vector<std::string>& items = box.*section.list;
    if (items.empty()) continue;
    text += std::string(section.title) + ":";
    const char* separator = " ";
    for (const std::string& item : items) {
      text += separator + item;
      separator = " | ";
    }
    text += "\n";
  }
  return text;
}

}  // namespace omniforge::orchestrator
