#include "services/intent/src/keywords.h"

#include <vector>

#include "services/intent/src/text.h"

namespace omniforge::intent {

std::optional<KeywordMatch> ClassifyByKeywords(std::string_view text) {
  static const std::vector<std::pair<Action, std::vector<std::string_view>>> kKeywords = {
      {Action::kCreateAgent,
       {"create an agent", "new agent", "build an agent", "make an agent", "set up an agent",
        "automate", "automation", "bot that", "agent that", "every week", "every day",
        "every morning", "every monday"}},
      {Action::kUpdateAgent,
       {"change", "update", "edit", "modify", "rename", "reschedule", "instead", "from now on"}},
      {Action::kCreateSkill, {"skill", "reusable", "capability", "integration"}},
      {Action::kExecuteTask,
       {"run", "rerun", "trigger", "kick off", "execute", "right now", "now"}},
      {Action::kQueryInfo,
       {"what", "how", "why", "when", "which", "status", "show", "list", "did", "?"}},
      {Action::kManagePlatform,
       {"pause", "resume", "delete", "remove", "disable", "enable", "permission", "access",
        "invite", "api key", "billing", "project", "archive"}},
      {Action::kConversation,
       {"hello", "hi", "hey", "thanks", "thank you", "good morning", "who are you", "bye"}},
  };
  const std::string normalized = NormalizeText(text);
  const std::vector<std::string_view> words = Words(normalized);
  std::optional<KeywordMatch> best;
  for (const auto& [action, keywords] : kKeywords) {
    int hits = 0;
    for (std::string_view k : keywords) hits += ContainsPhrase(words, k) ? 1 : 0;
    if (hits > 0 && (!best || hits > best->hits)) best = KeywordMatch{action, hits};
  }
  return best;
}

}  // namespace omniforge::intent
