#include "services/intent/src/lexicon.h"

#include <iterator>
#include <map>

namespace omniforge::intent {

namespace {

constexpr std::pair<std::string_view, Action> kVerbs[] = {
    {"run", Action::kExecuteTask},
    {"rerun", Action::kExecuteTask},
    {"re run", Action::kExecuteTask},
    {"trigger", Action::kExecuteTask},
    {"kick", Action::kExecuteTask},
    {"execute", Action::kExecuteTask},
    {"launch", Action::kExecuteTask},
    {"fire", Action::kExecuteTask},
    {"start", Action::kExecuteTask},
    {"try", Action::kExecuteTask},
    {"test", Action::kExecuteTask},
    {"retry", Action::kExecuteTask},
    {"pause", Action::kManagePlatform},
    {"unpause", Action::kManagePlatform},
    {"resume", Action::kManagePlatform},
    {"stop", Action::kManagePlatform},
    {"halt", Action::kManagePlatform},
    {"disable", Action::kManagePlatform},
    {"enable", Action::kManagePlatform},
    {"delete", Action::kManagePlatform},
    {"remove", Action::kManagePlatform},
    {"kill", Action::kManagePlatform},
    {"archive", Action::kManagePlatform},
    {"unarchive", Action::kManagePlatform},
    {"deactivate", Action::kManagePlatform},
    {"activate", Action::kManagePlatform},
    {"reactivate", Action::kManagePlatform},
    {"suspend", Action::kManagePlatform},
    {"restore", Action::kManagePlatform},
    {"duplicate", Action::kManagePlatform},
    {"clone", Action::kManagePlatform},
    {"copy", Action::kManagePlatform},
    {"share", Action::kManagePlatform},
    {"transfer", Action::kManagePlatform},
    {"turn off", Action::kManagePlatform},
    {"turn on", Action::kManagePlatform},
    {"switch off", Action::kManagePlatform},
    {"shut", Action::kManagePlatform},
    {"get rid", Action::kManagePlatform},
    {"trash", Action::kManagePlatform},
    {"nuke", Action::kManagePlatform},
    {"mute", Action::kManagePlatform},
    {"unmute", Action::kManagePlatform},
    {"freeze", Action::kManagePlatform},
    {"invite", Action::kManagePlatform},
    {"rotate", Action::kManagePlatform},
    {"revoke", Action::kManagePlatform},
    {"grant", Action::kManagePlatform},
    {"disconnect", Action::kManagePlatform},
    {"connect", Action::kManagePlatform},
    {"hold", Action::kManagePlatform},
    {"take it offline", Action::kManagePlatform},
    {"snooze", Action::kManagePlatform},
    {"retire", Action::kManagePlatform},
    {"push", Action::kExecuteTask},
    {"post", Action::kUpdateAgent},
    {"fix", Action::kUpdateAgent},
    {"have it", Action::kUpdateAgent},
    {"raise", Action::kUpdateAgent},
    {"lower", Action::kUpdateAgent},
    {"whitelist", Action::kUpdateAgent},
    {"rephrase", Action::kUpdateAgent},
    {"route", Action::kUpdateAgent},
    {"limit", Action::kUpdateAgent},
    {"give", Action::kManagePlatform},
    {"turn it off", Action::kManagePlatform},
    {"turn it on", Action::kManagePlatform},
    {"switch it off", Action::kManagePlatform},
    {"shut it down", Action::kManagePlatform},
    {"take it down", Action::kManagePlatform},
    {"undo", Action::kManagePlatform},
    {"apply", Action::kUpdateAgent},
    {"ignore", Action::kUpdateAgent},
    {"skip", Action::kUpdateAgent},
    {"do the same", Action::kExecuteTask},
    {"what", Action::kQueryInfo},
    {"whats", Action::kQueryInfo},
    {"how", Action::kQueryInfo},
    {"when", Action::kQueryInfo},
    {"why", Action::kQueryInfo},
    {"who", Action::kQueryInfo},
    {"which", Action::kQueryInfo},
    {"where", Action::kQueryInfo},
    {"did", Action::kQueryInfo},
    {"does", Action::kQueryInfo},
    {"is", Action::kQueryInfo},
    {"was", Action::kQueryInfo},
    {"show", Action::kQueryInfo},
    {"tell", Action::kQueryInfo},
    {"explain", Action::kQueryInfo},
    {"list", Action::kQueryInfo},
    {"check", Action::kQueryInfo},
    {"status", Action::kQueryInfo},
    {"logs", Action::kQueryInfo},
    {"describe", Action::kQueryInfo},
    {"details", Action::kQueryInfo},
    {"info", Action::kQueryInfo},
    {"change", Action::kUpdateAgent},
    {"update", Action::kUpdateAgent},
    {"edit", Action::kUpdateAgent},
    {"modify", Action::kUpdateAgent},
    {"set", Action::kUpdateAgent},
    {"rename", Action::kUpdateAgent},
    {"switch", Action::kUpdateAgent},
    {"make", Action::kUpdateAgent},
    {"add", Action::kUpdateAgent},
    {"include", Action::kUpdateAgent},
    {"exclude", Action::kUpdateAgent},
    {"cc", Action::kUpdateAgent},
    {"move", Action::kUpdateAgent},
    {"adjust", Action::kUpdateAgent},
    {"tweak", Action::kUpdateAgent},
    {"shorten", Action::kUpdateAgent},
    {"reschedule", Action::kUpdateAgent},
    {"configure", Action::kUpdateAgent},
    {"use", Action::kUpdateAgent},
    {"send", Action::kUpdateAgent},
    {"create", Action::kCreateAgent},
    {"build", Action::kCreateAgent},
    {"set up", Action::kCreateAgent},
    {"setup", Action::kCreateAgent},
    {"spin up", Action::kCreateAgent},
    {"draft", Action::kCreateAgent},
};

}  // namespace

const std::vector<std::pair<std::string_view, Action>>& VerbLexicon() {
  static const std::vector<std::pair<std::string_view, Action>> verbs(std::begin(kVerbs),
                                                                      std::end(kVerbs));
  return verbs;
}

std::optional<Action> SingleWordVerb(std::string_view word) {
  static const std::map<std::string_view, Action, std::less<>> single = [] {
    std::map<std::string_view, Action, std::less<>> out;
    for (const auto& [verb, action] : VerbLexicon()) {
      if (verb.find(' ') == std::string_view::npos) out.emplace(verb, action);
    }
    return out;
  }();
  auto it = single.find(word);
  if (it == single.end()) return std::nullopt;
  return it->second;
}

}  // namespace omniforge::intent
