#include "services/intent/src/action.h"

#include <strings.h>

#include "services/intent/src/text.h"

namespace omniforge::intent {
namespace {

struct ActionNames {
  Action action;
  std::string_view name;
  std::string_view label;
  std::string_view phrase;
};

constexpr std::array<ActionNames, 8> kNames = {{
    {Action::kCreateAgent, "CREATE_AGENT", "create_agent", "create a new agent"},
    {Action::kUpdateAgent, "UPDATE_AGENT", "update_agent", "change an existing agent"},
    {Action::kCreateSkill, "CREATE_SKILL", "create_skill", "add a reusable skill"},
    {Action::kExecuteTask, "EXECUTE_TASK", "execute_task", "run it now"},
    {Action::kQueryInfo, "QUERY_INFO", "query_info", "look up information"},
    {Action::kManagePlatform, "MANAGE_PLATFORM", "manage_platform",
     "change settings, access or an agent's lifecycle"},
    {Action::kConversation, "CONVERSATION", "conversation", "just talk it through"},
    {Action::kUnknown, "UNKNOWN", "unknown", "something outside the platform"},
}};

const ActionNames& NamesOf(Action action) { return kNames[static_cast<int>(action) - 1]; }

}  // namespace

std::string_view ActionName(Action action) { return NamesOf(action).name; }
std::string_view ActionLabel(Action action) { return NamesOf(action).label; }
std::string_view ActionPhrase(Action action) { return NamesOf(action).phrase; }

std::optional<Action> ParseAction(std::string_view text) {
  auto equal = [](std::string_view a, std::string_view b) {
    return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
  };
  std::string_view trimmed = TrimWhitespace(text);
  constexpr std::string_view kPrefix = "ACTION_TYPE_";
  if (trimmed.size() > kPrefix.size() && equal(trimmed.substr(0, kPrefix.size()), kPrefix)) {
    trimmed.remove_prefix(kPrefix.size());
  }
  for (const ActionNames& n : kNames) {
    if (equal(trimmed, n.name)) return n.action;
  }
  return std::nullopt;
}

}  // namespace omniforge::intent
