// The eight things a user can want (DESIGN.md, "Understanding"), and the
// names they go by in labels, protos and prompts.
#pragma once

#include <array>
#include <optional>
#include <string_view>

namespace omniforge::intent {

// Values match omniforge.intent.v1.ActionType.
enum class Action {
  kCreateAgent = 1,
  kUpdateAgent = 2,
  kCreateSkill = 3,
  kExecuteTask = 4,
  kQueryInfo = 5,
  kManagePlatform = 6,
  kConversation = 7,
  kUnknown = 8,
};

inline constexpr std::array<Action, 8> kAllActions = {
    Action::kCreateAgent, Action::kUpdateAgent,    Action::kCreateSkill,  Action::kExecuteTask,
    Action::kQueryInfo,   Action::kManagePlatform, Action::kConversation, Action::kUnknown};

// "CREATE_AGENT": the enum name without its ACTION_TYPE_ prefix, as used in
// LLM prompts and reports.
std::string_view ActionName(Action action);
// "create_agent": the label in the training data and in fastText.
std::string_view ActionLabel(Action action);
// What the action means to a user, e.g. "create a new agent".
std::string_view ActionPhrase(Action action);

// Accepts the name or the label, any case; nullopt otherwise.
std::optional<Action> ParseAction(std::string_view text);

}  // namespace omniforge::intent
